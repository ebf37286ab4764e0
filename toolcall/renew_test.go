package toolcall_test

import (
	"context"
	"testing"
	"time"

	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/sandbox"
)

// TestLeaseRenewedWhileTheDownstreamRuns: while an execution's downstream
// call is held, its lease is renewed (every third of the lease), so it
// stays running and owned; once the call ends no renewal follows.
func TestLeaseRenewedWhileTheDownstreamRuns(t *testing.T) {
	t.Parallel()
	g := newRig(t)
	g.led.Lease = 300 * time.Millisecond
	g.fault(sandbox.Fault{Path: "/refunds", Fault: "hold"})
	done := make(chan error, 1)
	go func() { _, err := g.refund("renew-key-0001", okArgs); done <- err }()
	if err := g.sb.WaitHeld(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	first, err := g.led.Get(context.Background(), g.op.Tenant, "renew-key-0001")
	if err != nil {
		t.Fatal(err)
	}
	// Bounded: renewals come every 100ms; wait until two have moved the lease on.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		a, err := g.led.Get(context.Background(), g.op.Tenant, "renew-key-0001")
		if err != nil {
			t.Fatal(err)
		}
		if a.State != ledger.Running {
			t.Fatalf("the held action is %s", a.State)
		}
		if a.LeaseUntil.Sub(first.LeaseUntil) >= 2*g.led.RenewEvery()-g.led.RenewEvery()/2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the lease was not renewed: %v, first %v", a.LeaseUntil, first.LeaseUntil)
		}
	}
	g.sb.Release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	a, err := g.led.Get(context.Background(), g.op.Tenant, "renew-key-0001")
	if err != nil || a.State != ledger.Succeeded {
		t.Fatalf("after the release: %v %v", a.State, err)
	}
}
