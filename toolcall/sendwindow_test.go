package toolcall_test

import (
	"context"
	"testing"
	"time"

	"github.com/toolgate/toolgate/decisionlog"
	"github.com/toolgate/toolgate/internal/testrig"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/toolcall"
)

// TestClaimRecordsTheSendWindow: a claim records the window its binding
// gives (the timeout, and the state probe's before it), and the ledger is
// told the service's windows without any wiring.
func TestClaimRecordsTheSendWindow(t *testing.T) {
	t.Parallel()
	g := newRig(t)
	g.ok(g.refund("sw-recorded-0001", okArgs))
	a, err := g.led.Get(context.Background(), "acme", "sw-recorded-0001")
	if err != nil {
		t.Fatal(err)
	}
	want := g.svc.SendWindow(refundTool)
	if want != 4*time.Second { // 2s timeout, probed first under the same timeout
		t.Fatalf("SendWindow = %s, want 4s", want)
	}
	if got := a.SendWindowEnd().Sub(a.LastSentAt); got <= 0 || got > want {
		t.Fatalf("the answered attempt's window closed %s after its claim, want within %s", got, want)
	}
}

// TestNothingIsSentPastTheSendWindow: an attempt whose window has closed
// before its request could be written sends nothing (after the window,
// another gateway may take the claim for lost and trust a lookup's "not
// found"): the downstream sees no request, and the action goes back to
// pending with the attempt counted.
func TestNothingIsSentPastTheSendWindow(t *testing.T) {
	t.Parallel()
	led := testrig.Ledger(t, "toolcall-sendwindow")
	led.SendWindow = func(string) time.Duration { return time.Nanosecond }
	g := newRig(t, func(c *toolcall.Config) { c.Ledger = led })
	g.led = led
	_, err := g.refund("sw-closed-0001", okArgs)
	wantProblem(t, err, toolcall.CodeDownstreamUnreachable, 502, decisionlog.OutcomeUnreachable)
	if n := g.sb.Requests("/refunds"); n != 0 {
		t.Fatalf("the downstream saw %d requests after the send window closed, want 0", n)
	}
	a, err := led.Get(context.Background(), "acme", "sw-closed-0001")
	if err != nil {
		t.Fatal(err)
	}
	if a.State != ledger.Pending || a.Attempts != 1 {
		t.Fatalf("%s after %d attempts, want pending after 1", a.State, a.Attempts)
	}
	g.wantEffects(0)
}
