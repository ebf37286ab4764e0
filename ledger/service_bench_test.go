package ledger_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/toolgate/toolgate/ledger"
)

// nopStore stores nothing: it counts revisions, so that a benchmark over it
// measures the Service's own work on the call path.
type nopStore struct{ ledger.Store }

func (nopStore) Insert(_ context.Context, a *ledger.Action) error { a.Rev = 1; return nil }
func (nopStore) Update(_ context.Context, a *ledger.Action) error { a.Rev++; return nil }
func (nopStore) UpdateChanged(_ context.Context, _, a *ledger.Action) error {
	a.Rev++
	return nil
}

// BenchmarkServiceStartFinish is a new action's ledger work on the call
// path: Start (insert and claim) and Finish (answered), with the replay
// cache on.
func BenchmarkServiceStartFinish(b *testing.B) {
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	s := &ledger.Service{Store: nopStore{}, Now: func() time.Time { return now }, Owner: "bench"}
	args := []byte(`{"order_id":"o-1","amount_minor":999}`)
	pc := &ledger.ProviderCall{Name: "openai", Route: "/v1/chat/completions", CallID: "call_1", At: now}
	res := &ledger.Result{StatusCode: 201, ContentType: "application/json", Body: []byte(`{"refund_id":"re_1"}`)}
	ids := make([]string, 4096)
	for i := range ids {
		ids[i] = "bench-" + strconv.Itoa(i)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		a, _, err := s.Start(context.Background(), "acme", ids[i%len(ids)], ledger.StartSpec{ToolID: "payments.issue_refund", Version: "1.0.0",
			ArgsDigest: "sha256:00", Arguments: args, Provider: pc})
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Finish(context.Background(), a, ledger.Answered, res, "downstream answered 201"); err != nil {
			b.Fatal(err)
		}
	}
}
