package decisionlog

import (
	"context"
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
