package gateway_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/gateway/gatewaytest"
	"github.com/toolgate/toolgate/ledger"
)

// testClock is a hand-moved clock for the ledger.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *testClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestRetentionAndTombstones(t *testing.T) {
	t.Parallel()
	clk := &testClock{t: time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)}
	g := newRig(t, func(c *gatewaytest.Config) {
		c.Ledger.Now = clk.Now
		c.Retention = time.Hour
		c.TombstoneRetention = 3 * time.Hour
	})
	first := g.refund("retain-key-001", okArgs)
	if first.status != 201 {
		t.Fatalf("first: %d %s", first.status, first.body)
	}
	clk.Add(59 * time.Minute)
	if r := g.refund("retain-key-001", okArgs); r.status != 201 || string(r.body) != string(first.body) {
		t.Fatalf("within retention: %d %s", r.status, r.body)
	}
	clk.Add(time.Minute)
	// Past retention the key is refused, not executed again, whatever the arguments.
	g.refund("retain-key-001", okArgs).wantProblem(t, 409, "idempotency_key_expired")
	g.refund("retain-key-001", strings.Replace(okArgs, "1500", "1", 1)).wantProblem(t, 409, "idempotency_key_expired")
	g.do("POST", "/v1/actions/retain-key-001/calls", `{"arguments":`+okArgs+`}`).wantProblem(t, 409, "idempotency_key_expired")

	// The cleaner makes the tombstone: the payload goes, the key data stays.
	cl := &ledger.Cleaner{Store: g.svc.Store, Now: clk.Now, Retention: time.Hour, TombstoneRetention: 3 * time.Hour}
	if purged, _, err := cl.RunOnce(t.Context()); err != nil || purged != 1 {
		t.Fatalf("cleaner purged %d, %v", purged, err)
	}
	rec := g.action("retain-key-001")
	if rec["state"] != "succeeded" || rec["args_digest"] == "" || rec["result"].(map[string]any)["body"] != nil || rec["tombstone"] != true {
		t.Fatalf("tombstone %v", rec)
	}
	g.refund("retain-key-001", okArgs).wantProblem(t, 409, "idempotency_key_expired")
	g.wantEffects(1)

	// Past the tombstone retention the key is forgotten: a new action.
	clk.Add(2 * time.Hour)
	again := g.refund("retain-key-001", okArgs)
	if again.status != 201 || again.header.Get("Idempotent-Replayed") != "false" {
		t.Fatalf("after the tombstone retention: %d %s", again.status, again.body)
	}
	g.wantEffects(2)

	// Actions that are not terminal never expire.
	g.fault(sandboxFault500())
	g.refund("retain-key-002", okArgs).wantProblem(t, 504, "outcome_unknown")
	clk.Add(10 * time.Hour)
	g.refund("retain-key-002", okArgs).wantProblem(t, 409, "action_unknown")
	if _, forgotten, _ := cl.RunOnce(t.Context()); forgotten != 1 { // retain-key-001's second life, not the unknown one
		t.Fatalf("forgot %d, want 1", forgotten)
	}
	if r := g.do("GET", "/v1/actions/retain-key-002", ""); r.status != 200 {
		t.Fatalf("the unknown action was cleaned up: %d", r.status)
	}
}
