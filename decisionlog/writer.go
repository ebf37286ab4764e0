package decisionlog

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolgate/toolgate/internal/defaults"
)

// DropReason says why a record never reached the sink.
type DropReason string

// The reasons a record is dropped. Each is counted; none is silent.
const (
	DropBufferFull  DropReason = "buffer_full" // Log found the buffer full
	DropUnmaskable  DropReason = "unmaskable"  // the record could not be masked (ErrUnmaskable)
	DropWriteFailed DropReason = "write_failed"
	DropClosed      DropReason = "closed" // Log after Close, or Close's context ended first
)

// Config configures a Writer. The zero value works.
type Config struct {
	// Mode is the decision_log.arguments setting. Defaults to ModeMasked.
	Mode ArgumentsMode
	// BufferSize is how many records may wait to be written. Defaults to 4096.
	BufferSize int
	// QueueBytes bounds the bytes the waiting records hold (their payloads
	// and a fixed share per record); a record that would pass it is dropped
	// and counted as DropBufferFull. Defaults to DefaultQueueBytes.
	QueueBytes int64
	// MaxPayloadBytes: a payload (arguments, result, state probe) larger
	// than this is not logged but erased, the line keeping its digest
	// (input_hash, result_hash). Defaults to DefaultMaxPayloadBytes.
	MaxPayloadBytes int
	// OnDrop is called once per dropped record, from whichever goroutine
	// dropped it (Log's caller for DropBufferFull); it must be quick and must
	// not block: increment toolgate_decision_log_dropped_total there.
	// Defaults to nil.
	OnDrop func(DropReason)
	// OnError is told about sink failures (the records are also counted as
	// DropWriteFailed). Defaults to nil.
	OnError func(error)
	// Now stamps records whose Timestamp is zero. Defaults to time.Now.
	Now func() time.Time
}

// Defaults of Config.
const (
	DefaultBufferSize      = 4096
	DefaultQueueBytes      = defaults.DecisionLogQueueBytes
	DefaultMaxPayloadBytes = defaults.DecisionLogMaxPayloadBytes
)

// Stats counts what a Writer did with the records it was given.
type Stats struct {
	Written         uint64
	DroppedFull     uint64
	DroppedUnmasked uint64
	DroppedWrite    uint64
	DroppedClosed   uint64
}

// Dropped is the total of every drop reason.
func (s Stats) Dropped() uint64 {
	return s.DroppedFull + s.DroppedUnmasked + s.DroppedWrite + s.DroppedClosed
}

// Writer writes records asynchronously: Log puts a record in a bounded buffer
// and returns at once; one goroutine masks, encodes and writes them in
// batches to the sink. Safe for concurrent use.
type Writer struct {
	cfg  Config
	sink Sink
	ch   chan entry
	done chan struct{}
	stop chan struct{} // closed when Close's context ends: drop the rest

	mu     sync.RWMutex // guards closed against a send on a closed channel
	closed bool

	written, full, unmasked, writeFailed, closedDrops atomic.Uint64
	queued                                            atomic.Int64 // bytes of the records waiting
}

type entry struct {
	rec  Record
	m    *Masker
	size int64 // counted in queued until written
}

// NewWriter starts a Writer over sink. The Writer owns the sink and closes it
// in Close.
func NewWriter(sink Sink, cfg Config) *Writer {
	if cfg.BufferSize <= 0 {
		cfg.BufferSize = DefaultBufferSize
	}
	if cfg.QueueBytes <= 0 {
		cfg.QueueBytes = DefaultQueueBytes
	}
	if cfg.MaxPayloadBytes <= 0 {
		cfg.MaxPayloadBytes = DefaultMaxPayloadBytes
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.Mode = cfg.Mode.orDefault()
	w := &Writer{
		cfg:  cfg,
		sink: sink,
		ch:   make(chan entry, cfg.BufferSize),
		done: make(chan struct{}),
		stop: make(chan struct{}),
	}
	go w.run()
	return w
}

// Log queues rec to be masked by m (nil: nothing is sensitive) and written.
// It never blocks: when the buffer is full (BufferSize records, or
// QueueBytes bytes) the record is dropped and counted, and Log reports
// false. A payload over MaxPayloadBytes is erased first (digestLarge). Log
// takes ownership of rec's slices and pointers (payload bytes, Provider);
// the caller must not modify them afterwards.
func (w *Writer) Log(rec Record, m *Masker) bool {
	if rec.Timestamp.IsZero() {
		rec.Timestamp = w.cfg.Now()
	}
	w.digestLarge(&rec)
	size := recordBytes(&rec)
	if w.queued.Add(size) > w.cfg.QueueBytes {
		w.queued.Add(-size)
		w.drop(DropBufferFull, 1)
		return false
	}
	w.mu.RLock()
	if w.closed {
		w.mu.RUnlock()
		w.queued.Add(-size)
		w.drop(DropClosed, 1)
		return false
	}
	select {
	case w.ch <- entry{rec: rec, m: m, size: size}:
		w.mu.RUnlock()
		return true
	default:
		w.mu.RUnlock()
		w.queued.Add(-size)
		w.drop(DropBufferFull, 1)
		return false
	}
}

// digestLarge erases each payload of rec larger than MaxPayloadBytes: the
// line keeps the result's digest (result_hash, computed here) and the
// arguments' (input_hash), and lists the payload as erased. A record is
// copied and masked later, in the writer's goroutine; a megabyte result
// must not wait in the queue for that.
func (w *Writer) digestLarge(rec *Record) {
	limit := w.cfg.MaxPayloadBytes
	erase := func(p *json.RawMessage, pointer string) {
		if len(*p) > limit {
			*p = nil
			rec.Erased = append(slices.Clip(rec.Erased), pointer)
		}
	}
	if len(rec.Result) > limit && rec.ResultHash == "" {
		sum := sha256.Sum256(rec.Result)
		rec.ResultHash = "sha256:" + hex.EncodeToString(sum[:])
	}
	erase(&rec.Arguments, "/arguments")
	erase(&rec.Result, "/result")
	erase(&rec.StateBefore, "/state_before")
	erase(&rec.StateAfter, "/state_after")
}

// recordBytes estimates the memory a queued record holds.
func recordBytes(rec *Record) int64 {
	n := 1024 + len(rec.Arguments) + len(rec.Result) + len(rec.StateBefore) + len(rec.StateAfter) +
		len(rec.StateBeforeError) + len(rec.StateAfterError) + len(rec.CorrelationID) + len(rec.ActionID) + len(rec.IdempotencyKey)
	if p := rec.Provider; p != nil {
		n += len(p.Name) + len(p.Route) + len(p.CallID)
	}
	return int64(n)
}

// QueuedBytes is how many bytes the records waiting to be written hold.
func (w *Writer) QueuedBytes() int64 { return w.queued.Load() }

// Dropped is how many records were dropped, for every reason.
func (w *Writer) Dropped() uint64 { return w.Stats().Dropped() }

// Stats reports the Writer's counters.
func (w *Writer) Stats() Stats {
	return Stats{
		Written:         w.written.Load(),
		DroppedFull:     w.full.Load(),
		DroppedUnmasked: w.unmasked.Load(),
		DroppedWrite:    w.writeFailed.Load(),
		DroppedClosed:   w.closedDrops.Load(),
	}
}

func (w *Writer) drop(r DropReason, n uint64) {
	if n == 0 {
		return
	}
	switch r {
	case DropBufferFull:
		w.full.Add(n)
	case DropUnmaskable:
		w.unmasked.Add(n)
	case DropWriteFailed:
		w.writeFailed.Add(n)
	default:
		w.closedDrops.Add(n)
	}
	if w.cfg.OnDrop != nil {
		for range n {
			w.cfg.OnDrop(r)
		}
	}
}

// Reopen asks the sink to reopen its file (after an external rotation, on
// SIGHUP). Sinks without a file ignore it.
func (w *Writer) Reopen() error {
	if r, ok := w.sink.(interface{ Reopen() error }); ok {
		return r.Reopen()
	}
	return nil
}

// Close stops accepting records, writes every buffered one, flushes and closes
// the sink. If ctx ends first, the records still buffered are dropped (counted
// as DropClosed) and Close returns ctx's error once the sink is closed.
func (w *Writer) Close(ctx context.Context) error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		<-w.done
		return nil
	}
	w.closed = true
	close(w.ch)
	w.mu.Unlock()
	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
		close(w.stop)
		<-w.done
		return ctx.Err()
	}
}

// maxBatch bounds how many records are written between two sink flushes.
const maxBatch = 256

func (w *Writer) run() {
	defer close(w.done)
	pending := uint64(0) // lines written to the sink since its last flush
	for {
		e, ok := <-w.ch
		if !ok {
			break
		}
		w.queued.Add(-e.size)
		if w.stopped() {
			w.drop(DropClosed, 1)
			w.discard()
			break
		}
		pending += w.write(e)
		// Drain what is already queued before flushing: one flush per batch.
	batch:
		for n := 1; n < maxBatch; n++ {
			select {
			case e, ok := <-w.ch:
				if !ok {
					break batch
				}
				w.queued.Add(-e.size)
				if w.stopped() {
					w.drop(DropClosed, 1)
					break batch
				}
				pending += w.write(e)
			default:
				break batch
			}
		}
		w.flush(&pending)
	}
	w.flush(&pending)
	if err := w.sink.Close(); err != nil {
		w.report(err)
	}
}

func (w *Writer) stopped() bool {
	select {
	case <-w.stop:
		return true
	default:
		return false
	}
}

// discard counts what is left in the (closed) channel as dropped.
func (w *Writer) discard() {
	for e := range w.ch {
		w.queued.Add(-e.size)
		w.drop(DropClosed, 1)
	}
}

// write masks, encodes and hands one record to the sink; it returns 1 if a
// line is now pending in the sink.
func (w *Writer) write(e entry) uint64 {
	line, err := Encode(e.rec, e.m, w.cfg.Mode)
	if err != nil {
		w.drop(DropUnmaskable, 1)
		if !errors.Is(err, ErrUnmaskable) {
			w.report(err)
		}
		return 0
	}
	if err := w.sink.WriteLine(line); err != nil {
		w.drop(DropWriteFailed, 1)
		w.report(err)
		return 0
	}
	return 1
}

func (w *Writer) flush(pending *uint64) {
	if *pending == 0 {
		return
	}
	if err := w.sink.Flush(); err != nil {
		w.drop(DropWriteFailed, *pending)
		w.report(err)
	} else {
		w.written.Add(*pending)
	}
	*pending = 0
}

func (w *Writer) report(err error) {
	if w.cfg.OnError != nil {
		w.cfg.OnError(err)
	}
}
