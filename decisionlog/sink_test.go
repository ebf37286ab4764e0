package decisionlog

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
)

func TestFileSinkRotatesBySize(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "decisions.jsonl")
	const maxBytes = 4096
	sink, err := OpenFile(FileConfig{Path: path, MaxBytes: maxBytes, MaxFiles: 2})
	if err != nil {
		t.Fatal(err)
	}
	w := NewWriter(sink, Config{BufferSize: 1000})
	m := typicalMasker(t)
	const n = 60 // about 1.3 KB a line: many rotations
	for i := range n {
		if !w.Log(typicalRecord(i), m) {
			t.Fatalf("record %d dropped", i)
		}
	}
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + ".3"); !os.IsNotExist(err) {
		t.Errorf("%s.3 exists (err %v); only 2 rotated files may be kept", path, err)
	}
	// Newest lines are in path, older in path.1, older still in path.2; the
	// kept lines are the last ones logged, in order.
	var ids []string
	for _, p := range []string{path + ".2", path + ".1", path} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() > maxBytes {
			t.Errorf("%s is %d bytes, over %d", p, fi.Size(), maxBytes)
		}
		for _, l := range readLines(t, p) {
			ids = append(ids, l["decision_id"].(string))
		}
	}
	if len(ids) == 0 || ids[len(ids)-1] != fmt.Sprintf("dec-%06d", n-1) {
		t.Fatalf("kept ids %v: want the newest last", ids)
	}
	first := n - len(ids)
	for i, id := range ids {
		if want := fmt.Sprintf("dec-%06d", first+i); id != want {
			t.Fatalf("line %d is %s, want %s (kept lines must be contiguous)", i, id, want)
		}
	}
	if first == 0 {
		t.Errorf("nothing was rotated away: %d lines kept", len(ids))
	}
}

func TestFileSinkReopenAfterExternalRotation(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "decisions.jsonl")
	sink, err := OpenFile(FileConfig{Path: path, Sync: SyncEveryBatch})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		line, err := Encode(typicalRecord(i), nil, ModeDigest)
		if err != nil {
			t.Fatal(err)
		}
		if err := sink.WriteLine(line); err != nil {
			t.Fatal(err)
		}
	}
	if err := sink.Flush(); err != nil {
		t.Fatal(err)
	}
	// logrotate renames the file, then sends SIGHUP.
	if err := os.Rename(path, path+".old"); err != nil {
		t.Fatal(err)
	}
	w := NewWriter(sink, Config{Mode: ModeDigest})
	if err := w.Reopen(); err != nil {
		t.Fatal(err)
	}
	for i := 3; i < 5; i++ {
		w.Log(typicalRecord(i), nil)
	}
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := len(readLines(t, path+".old")); got != 3 {
		t.Errorf("old file has %d lines, want 3", got)
	}
	if got := readLines(t, path); len(got) != 2 || got[0]["decision_id"] != "dec-000003" {
		t.Errorf("new file has %v, want records 3 and 4", got)
	}
}

func TestFileSinkAppendsToExistingFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "decisions.jsonl")
	for round := range 2 {
		sink, err := OpenFile(FileConfig{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		w := NewWriter(sink, Config{})
		w.Log(typicalRecord(round), nil)
		if err := w.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if got := len(readLines(t, path)); got != 2 {
		t.Errorf("%d lines, want 2 (the second open must append)", got)
	}
}

func TestOpenFileRejectsBadConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  FileConfig
	}{
		{name: "empty path", cfg: FileConfig{}},
		{name: "negative size", cfg: FileConfig{Path: filepath.Join(t.TempDir(), "x"), MaxBytes: -1}},
		{name: "missing directory", cfg: FileConfig{Path: filepath.Join(t.TempDir(), "no", "such", "x")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := OpenFile(tt.cfg); err == nil {
				t.Fatal("OpenFile succeeded")
			}
		})
	}
}

// TestWriterConcurrent logs from many goroutines while another one reopens
// the file; run with -race. Every record is either written, whole, or counted.
func TestWriterConcurrent(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "decisions.jsonl")
	sink, err := OpenFile(FileConfig{Path: path, MaxBytes: 256 << 10, MaxFiles: 100})
	if err != nil {
		t.Fatal(err)
	}
	w := NewWriter(sink, Config{BufferSize: 256})
	m := typicalMasker(t)
	const goroutines, each = 16, 300
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				w.Log(typicalRecord(g*each+i), m)
			}
		})
	}
	stop := make(chan struct{})
	reopened := make(chan struct{})
	go func() {
		defer close(reopened)
		for {
			select {
			case <-stop:
				return
			default:
				if err := w.Reopen(); err != nil {
					t.Error(err)
					return
				}
			}
		}
	}()
	wg.Wait()
	close(stop)
	<-reopened
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(path + "*")
	if err != nil {
		t.Fatal(err)
	}
	lines := 0
	for _, f := range files {
		lines += len(readLines(t, f))
	}
	st := w.Stats()
	if st.Written+st.Dropped() != goroutines*each || uint64(lines) != st.Written {
		t.Errorf("stats %+v, %d lines in %d files: want written+dropped = %d and lines = written",
			st, lines, len(files), goroutines*each)
	}
	if st.DroppedUnmasked+st.DroppedWrite+st.DroppedClosed != 0 {
		t.Errorf("unexpected drops: %+v", st)
	}
}

func TestFileSinkKeepsWritingWhenRotationFails(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "decisions.jsonl")
	// A non-empty directory where the rotated file must go: rotation fails.
	if err := os.MkdirAll(filepath.Join(path+".1", "blocker"), 0o700); err != nil {
		t.Fatal(err)
	}
	var rotateErrs atomic.Int64
	sink, err := OpenFile(FileConfig{Path: path, MaxBytes: 4096, MaxFiles: 1,
		OnError: func(error) { rotateErrs.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	w := NewWriter(sink, Config{})
	const n = 20 // about 1.3 KB a line
	for i := range n {
		w.Log(typicalRecord(i), typicalMasker(t))
	}
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := len(readLines(t, path)); got != n || w.Dropped() != 0 {
		t.Errorf("%d lines in the live file, %d dropped; want all %d written", got, w.Dropped(), n)
	}
	// Retried once per MaxBytes written, not on every line.
	if got := rotateErrs.Load(); got == 0 || got > n/3 {
		t.Errorf("%d rotation errors reported for %d lines", got, n)
	}
}

func TestLinesStayOnOneLine(t *testing.T) {
	t.Parallel()
	pretty := json.RawMessage("{\n  \"a\": [1,\n 2],\n  \"b\": \"x\\ny\"\n}\n")
	for _, mode := range []ArgumentsMode{ModeDigest, ModeMasked, ModeFull} {
		rec := Record{Arguments: pretty, Result: pretty, StateBefore: pretty, StateAfter: pretty}
		line, err := Encode(rec, nil, mode)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Count(line, []byte("\n")) != 1 {
			t.Errorf("%s: line breaks inside the record: %q", mode, line)
		}
	}
}
