package toolcall_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/toolcall"
	"go.uber.org/goleak"
)

// TestChangesLeaveNoGoroutine: the listeners of a Service (Config.OnChange
// and OnChange) hear each change, one delivery at a time; between changes
// and after Stop the Service runs no goroutine of its own. (Before, New
// started a goroutine on a channel nobody closed: every Service with a
// listener, every gateway and test rig among them, leaked one.)
// Not parallel: the goroutine check counts every goroutine of the binary.
func TestChangesLeaveNoGoroutine(t *testing.T) {
	before := goleak.IgnoreCurrent()
	// Registered first, so it runs last: after the rig's sandbox and
	// ledger are closed.
	t.Cleanup(func() { goleak.VerifyNone(t, before) })

	var heard, second, inside, overlap atomic.Int32
	g := newRig(t, func(c *toolcall.Config) {
		c.OnChange = func() {
			if inside.Add(1) > 1 {
				overlap.Add(1)
			}
			time.Sleep(time.Millisecond) // a slow listener: changes pile up behind it
			heard.Add(1)
			inside.Add(-1)
		}
	})
	g.svc.OnChange(func() { second.Add(1) })
	tools := g.svc.Tools()
	for range 50 {
		g.svc.SetTools(tools)
	}
	deadline := time.Now().Add(10 * time.Second)
	for second.Load() == 0 || heard.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no listener heard 50 reloads")
		}
		time.Sleep(time.Millisecond)
	}
	if err := g.svc.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if overlap.Load() != 0 {
		t.Fatalf("%d deliveries overlapped another", overlap.Load())
	}
	if h := heard.Load(); h > 50 {
		t.Fatalf("50 changes were delivered %d times", h)
	}
	n := heard.Load()
	g.svc.SetTools(tools) // after Stop: heard by no one, starts nothing
	if heard.Load() != n {
		t.Fatal("a change after Stop was delivered")
	}
}
