package decisionlog

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
)

// Sink receives encoded lines from a Writer's single goroutine.
type Sink interface {
	// WriteLine takes one complete line, newline included. It may buffer.
	WriteLine(line []byte) error
	// Flush ends a batch: buffered lines go to the OS (and to disk, if the
	// sink's policy says so).
	Flush() error
	// Close flushes and releases the sink.
	Close() error
}

// WriterSink writes lines straight to w, for tests and for stdout. Close does
// not close w.
func WriterSink(w io.Writer) Sink { return writerSink{w} }

type writerSink struct{ w io.Writer }

func (s writerSink) WriteLine(line []byte) error { _, err := s.w.Write(line); return err }
func (s writerSink) Flush() error                { return nil }
func (s writerSink) Close() error                { return nil }

// SyncPolicy says when a FileSink calls fsync.
type SyncPolicy int

const (
	// SyncOnRotate (the default) fsyncs when a file is rotated, reopened or
	// closed. Every batch still reaches the OS (write(2)) as soon as the
	// Writer has drained its buffer, so a crash of the process loses nothing
	// written; a crash of the machine may lose the last seconds.
	SyncOnRotate SyncPolicy = iota
	// SyncEveryBatch also fsyncs after every batch: durable against power
	// loss, at the price of one fsync per batch (batches grow under load).
	SyncEveryBatch
)

// FileConfig configures a FileSink. Only Path is required.
type FileConfig struct {
	// Path of the live log file; it is opened for append and created if
	// missing.
	Path string
	// MaxBytes rotates the file before a line would take it past this size:
	// Path becomes Path.1, Path.1 becomes Path.2, and so on. Defaults to 0:
	// never rotate (rely on external rotation and Reopen on SIGHUP).
	MaxBytes int64
	// MaxFiles is how many rotated files (Path.1 … Path.N) are kept; older
	// ones are deleted. Defaults to 5.
	MaxFiles int
	// Perm is the mode of a file the sink creates (existing files keep
	// theirs). Defaults to 0600: the log holds identifiers and hashes that
	// are for operators only.
	Perm fs.FileMode
	// Sync is the fsync policy. Defaults to SyncOnRotate.
	Sync SyncPolicy
	// OnError is told when a rotation fails. The line is still written, to
	// the live file, and rotation is tried again after another MaxBytes:
	// a full or read-only directory must not cost every record. Defaults
	// to nil.
	OnError func(error)
}

// FileSink appends lines to a file, rotating it by size. Reopen may be called
// from any goroutine (a SIGHUP handler) while the Writer writes.
type FileSink struct {
	cfg  FileConfig
	mu   sync.Mutex
	f    *os.File
	bw   *bufio.Writer
	size int64 // bytes in the live file, buffered ones included
	// rotateAt is the size past which the next line rotates: MaxBytes, or
	// further after a failed rotation.
	rotateAt int64
}

// OpenFile opens (or creates) the live file and returns its sink.
func OpenFile(cfg FileConfig) (*FileSink, error) {
	if cfg.Path == "" {
		return nil, errors.New("decision log: empty path")
	}
	if cfg.MaxBytes < 0 {
		return nil, fmt.Errorf("decision log: max bytes %d < 0", cfg.MaxBytes)
	}
	if cfg.MaxFiles <= 0 {
		cfg.MaxFiles = 5
	}
	if cfg.Perm == 0 {
		cfg.Perm = 0o600
	}
	s := &FileSink{cfg: cfg}
	if err := s.open(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *FileSink) open() error {
	f, err := os.OpenFile(s.cfg.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, s.cfg.Perm)
	if err != nil {
		return fmt.Errorf("open decision log: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("open decision log: %w", err)
	}
	s.f, s.size, s.rotateAt = f, st.Size(), s.cfg.MaxBytes
	if s.bw == nil {
		s.bw = bufio.NewWriterSize(f, 64<<10)
	} else {
		s.bw.Reset(f)
	}
	return nil
}

// closeFile flushes, fsyncs and closes the live file.
func (s *FileSink) closeFile() error {
	if s.f == nil {
		return nil
	}
	err := s.bw.Flush()
	if serr := s.f.Sync(); err == nil {
		err = serr
	}
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	s.f = nil
	return err
}

// WriteLine appends one line, rotating first if it would overflow MaxBytes.
func (s *FileSink) WriteLine(line []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil { // a failed rotation or reopen: try again
		if err := s.open(); err != nil {
			return err
		}
	}
	if s.cfg.MaxBytes > 0 && s.size > 0 && s.size+int64(len(line)) > s.rotateAt {
		if err := s.rotate(); err != nil {
			if s.f == nil {
				if oerr := s.open(); oerr != nil {
					return errors.Join(err, oerr)
				}
			}
			s.rotateAt = s.size + int64(len(line)) + s.cfg.MaxBytes // retry after MaxBytes more
			if s.cfg.OnError != nil {
				s.cfg.OnError(err)
			}
		}
	}
	n, err := s.bw.Write(line)
	s.size += int64(n)
	if err != nil {
		s.bw.Reset(s.f) // bufio errors are sticky; the lost lines are counted by the Writer
		return fmt.Errorf("write decision log: %w", err)
	}
	return nil
}

// rotate shifts Path.i to Path.i+1 (dropping Path.MaxFiles), moves the live
// file to Path.1 and opens a new one.
func (s *FileSink) rotate() error {
	if err := s.closeFile(); err != nil {
		return fmt.Errorf("rotate decision log: %w", err)
	}
	p := s.cfg.Path
	if err := os.Remove(fmt.Sprintf("%s.%d", p, s.cfg.MaxFiles)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("rotate decision log: %w", err)
	}
	for i := s.cfg.MaxFiles - 1; i >= 1; i-- {
		err := os.Rename(fmt.Sprintf("%s.%d", p, i), fmt.Sprintf("%s.%d", p, i+1))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("rotate decision log: %w", err)
		}
	}
	if err := os.Rename(p, p+".1"); err != nil {
		return fmt.Errorf("rotate decision log: %w", err)
	}
	return s.open()
}

// Flush hands buffered lines to the OS, and fsyncs under SyncEveryBatch.
func (s *FileSink) Flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return errors.New("decision log: file is not open")
	}
	if err := s.bw.Flush(); err != nil {
		s.bw.Reset(s.f)
		return fmt.Errorf("flush decision log: %w", err)
	}
	if s.cfg.Sync == SyncEveryBatch {
		if err := s.f.Sync(); err != nil {
			return fmt.Errorf("sync decision log: %w", err)
		}
	}
	return nil
}

// Reopen flushes and closes the live file and opens Path again, so that after
// an external tool (logrotate) renamed it, new lines go to a new file. Call
// it on SIGHUP.
func (s *FileSink) Reopen() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cerr := s.closeFile()
	if err := s.open(); err != nil {
		return err
	}
	if cerr != nil {
		return fmt.Errorf("reopen decision log: %w", cerr)
	}
	return nil
}

// Close flushes, fsyncs and closes the file.
func (s *FileSink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closeFile()
}
