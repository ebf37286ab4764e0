package decisionlog

import (
	"context"
	"path/filepath"
	"testing"
)

// BenchmarkEncode masks and encodes one typical record (about 1 KB of
// payloads, four sensitive locations) in each mode: the Writer's per-record
// cost, paid off the request path.
func BenchmarkEncode(b *testing.B) {
	m := typicalMasker(b)
	rec := typicalRecord(1)
	for _, mode := range []ArgumentsMode{ModeMasked, ModeDigest, ModeFull} {
		b.Run(string(mode), func(b *testing.B) {
			b.ReportAllocs()
			var n int
			for b.Loop() {
				line, err := Encode(rec, m, mode)
				if err != nil {
					b.Fatal(err)
				}
				n = len(line)
			}
			b.ReportMetric(float64(n), "bytes/line")
		})
	}
}

// BenchmarkLog is what a request pays: queueing a record for the Writer. The
// buffer is larger than b.N can fill between drains only on fast disks, so the
// figure includes drops when the writer falls behind (reported as drops/op).
func BenchmarkLog(b *testing.B) {
	w := NewWriter(WriterSink(discard{}), Config{BufferSize: 1 << 16})
	m := typicalMasker(b)
	rec := typicalRecord(1)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			w.Log(rec, m)
		}
	})
	b.StopTimer()
	if err := w.Close(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(w.Dropped())/float64(b.N), "drops/op")
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// BenchmarkWriterThroughput is the sustained rate of one Writer into a real
// file: b.N records are queued (the buffer holds them all, so none is
// dropped) and the clock stops when Close has written them, so time/op is the
// writer goroutine's cost per masked record, file write included.
func BenchmarkWriterThroughput(b *testing.B) {
	sink, err := OpenFile(FileConfig{Path: filepath.Join(b.TempDir(), "decisions.jsonl"), MaxBytes: 64 << 20})
	if err != nil {
		b.Fatal(err)
	}
	w := NewWriter(sink, Config{BufferSize: b.N})
	m := typicalMasker(b)
	rec := typicalRecord(1)
	b.ResetTimer()
	for range b.N {
		w.Log(rec, m)
	}
	if err := w.Close(context.Background()); err != nil {
		b.Fatal(err)
	}
	if w.Stats().Written != uint64(b.N) {
		b.Fatalf("written %d of %d", w.Stats().Written, b.N)
	}
}
