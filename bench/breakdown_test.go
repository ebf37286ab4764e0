package bench_test

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/bench"
)

// With Breakdown, each open-loop row says where its requests' time went:
// every request traced end to end, the gateway's on SQLite with the
// committer's stages for the claim and the result, and the stages adding up
// to the total (their means, exactly up to rounding).
func TestRunBreakdown(t *testing.T) {
	t.Parallel()
	rep, err := bench.Run(t.Context(), bench.Config{
		Duration: 150 * time.Millisecond, Warmup: 20 * time.Millisecond, Rate: 100,
		Concurrency: []int{1}, Ledgers: []string{bench.SQLiteFull}, Workloads: []string{bench.New},
		Breakdown: true, Dir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	var open []bench.Row
	for _, r := range rep.Rows {
		switch {
		case r.Open():
			open = append(open, r)
		case r.Breakdown != nil:
			t.Errorf("closed-loop row with a breakdown: %+v", r)
		}
	}
	if len(open) != 2 {
		t.Fatalf("%d open-loop rows, want 2", len(open))
	}
	for _, r := range open {
		b := r.Breakdown
		if b == nil || b.Traced != r.Requests || r.Requests == 0 {
			t.Fatalf("%s: breakdown %+v of %d requests, want every request traced", r.Target, b, r.Requests)
		}
		wantStages := []string{"client to handler", "downstream call", "handler to client", "total after sending"}
		if r.Target != bench.FloorTarget {
			wantStages = append(wantStages, "claim: queue, earlier batches committing", "claim: queue, committer between batches", "claim: commit (fsync)", "result: batch statements", "result: caller woken")
			if b.ClaimBatchP50 < 1 || b.ResultBatchP50 < 1 {
				t.Errorf("%s: batch sizes %+v", r.Target, b)
			}
		}
		names := ""
		sum := 0.0
		for i, s := range b.Stages {
			names += s.Name + "\n"
			if s.P50 < 0 || s.P99 < s.P50 || s.Max < s.P99 || s.Mean < 0 || s.Mean > s.Max {
				t.Errorf("%s: stage %+v", r.Target, s)
			}
			if i < len(b.Stages)-1 {
				sum += s.Mean
			}
		}
		for _, w := range wantStages {
			if !strings.Contains(names, w) {
				t.Errorf("%s: no stage %q in\n%s", r.Target, w, names)
			}
		}
		total := b.Stages[len(b.Stages)-1]
		if math.Abs(sum-total.Mean) > 0.001*float64(len(b.Stages)) {
			t.Errorf("%s: stage means add up to %.3f ms, the total's is %.3f", r.Target, sum, total.Mean)
		}
		if total.P99 > r.P99+0.001 {
			t.Errorf("%s: traced p99 %.3f ms over the row's %.3f (which also counts the send lag)", r.Target, total.P99, r.P99)
		}
	}
	var table bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"where the time went", "claim: commit (fsync)", "writes per committed batch", "mean of slowest 1% ms"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
}
