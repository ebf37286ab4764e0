package harness

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/sandbox"
	"github.com/toolgate/toolgate/sandbox/sandboxtest"
)

// TestProxyFaults sends one refund through the proxy per fault and checks
// what the client saw and what the downstream did.
func TestProxyFaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		faults      Faults
		partition   bool
		wantAnswer  bool // the client got an HTTP answer
		wantStatus  int  // its status; 0 means 201
		wantEffects int
		minTime     time.Duration
	}{
		{name: "clean", wantAnswer: true, wantEffects: 1},
		{name: "latency", faults: Faults{MaxLatency: 30 * time.Millisecond}, wantAnswer: true, wantEffects: 1},
		{name: "reset before forwarding", faults: Faults{ResetBefore: 1}, wantEffects: 0},
		{name: "reset after forwarding", faults: Faults{ResetAfter: 1}, wantEffects: 1},
		{name: "late delivery", faults: Faults{Late: 1, LateBy: 200 * time.Millisecond}, wantAnswer: true, wantEffects: 1, minTime: 200 * time.Millisecond},
		{name: "partition", partition: true, wantEffects: 0},
		{name: "unavailable", faults: Faults{Unavailable: 1}, wantAnswer: true, wantStatus: http.StatusServiceUnavailable, wantEffects: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sb, url := sandboxtest.Start(t, sandbox.Config{AutoCreateOrders: true})
			p := NewProxy(url, 1)
			p.SetFaults(tc.faults)
			port, err := p.Listen()
			if err != nil {
				t.Fatal(err)
			}
			defer port.Close()
			if tc.partition {
				port.Partition()
			}
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond+tc.minTime)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "POST", port.URL()+"/refunds",
				strings.NewReader(`{"order_id":"ord_proxytest1","amount_minor":5,"currency":"EUR","reason":"r"}`))
			req.Header.Set("Idempotency-Key", "default:proxy-"+tc.name)
			began := time.Now()
			resp, err := http.DefaultClient.Do(req)
			if tc.wantAnswer {
				if err != nil {
					t.Fatalf("want an answer, got %v", err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				want := tc.wantStatus
				if want == 0 {
					want = http.StatusCreated
				}
				if resp.StatusCode != want {
					t.Fatalf("status %d", resp.StatusCode)
				}
			} else if err == nil {
				resp.Body.Close()
				t.Fatalf("want no answer, got %d", resp.StatusCode)
			}
			if d := time.Since(began); d < tc.minTime {
				t.Fatalf("answered after %s, want at least %s", d, tc.minTime)
			}
			time.Sleep(50 * time.Millisecond) // a forwarded request lands before the effect count is read
			if n := sb.EffectCount(); n != tc.wantEffects {
				t.Fatalf("%d effects, want %d", n, tc.wantEffects)
			}
		})
	}
}

// TestProxyHealedPartitionForwardsNothing: requests caught in a partition
// are dropped when it heals, never delivered late.
func TestProxyHealedPartitionForwardsNothing(t *testing.T) {
	t.Parallel()
	sb, url := sandboxtest.Start(t, sandbox.Config{AutoCreateOrders: true})
	port, err := NewProxy(url, 1).Listen()
	if err != nil {
		t.Fatal(err)
	}
	defer port.Close()
	port.Partition()
	errc := make(chan error, 1)
	go func() {
		resp, err := http.Post(port.URL()+"/refunds", "application/json",
			strings.NewReader(`{"order_id":"ord_proxytest2","amount_minor":5,"currency":"EUR","reason":"r"}`))
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	time.Sleep(100 * time.Millisecond)
	port.Heal()
	if err := <-errc; err == nil {
		t.Fatal("a request caught in a partition got an answer")
	}
	if n := sb.EffectCount(); n != 0 {
		t.Fatalf("%d effects after the partition healed, want 0", n)
	}
}
