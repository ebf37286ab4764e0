package upstream_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/toolgate/toolgate/invoke"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/upstream"
	"github.com/toolgate/toolgate/upstream/upstreamtest"
)

// BenchmarkCall measures one attempt through the MCP invoker against a real
// go-sdk server (with a session, and stateless), beside the HTTP invoker
// against a plain HTTP handler that answers the same JSON: the cost MCP adds.
func BenchmarkCall(b *testing.B) {
	for _, stateless := range []bool{false, true} {
		b.Run(fmt.Sprintf("mcp/stateless=%v", stateless), func(b *testing.B) {
			srv := upstreamtest.Start(b, false, stateless)
			pool := upstream.NewPool(upstream.Config{})
			b.Cleanup(pool.Close)
			inv := upstream.NewInvoker(pool)
			bd := binding(srv.URL, 5*time.Second)
			b.ResetTimer()
			for i := range b.N {
				if res := inv.Call(context.Background(), request(bd, fmt.Sprintf("bench-%08d", i), ticketArgs)); res.Outcome != ledger.Answered {
					b.Fatal(res.Err)
				}
			}
		})
	}
	b.Run("http", func(b *testing.B) {
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"ticket_id":"T-1","subject":"printer on fire","priority":"urgent"}`))
		}))
		b.Cleanup(hs.Close)
		c := &invoke.Client{}
		bd := &invoke.Binding{URL: hs.URL + "/tickets", Timeout: 5 * time.Second}
		b.ResetTimer()
		for i := range b.N {
			if res := c.Call(context.Background(), request(bd, fmt.Sprintf("bench-%08d", i), ticketArgs)); res.Outcome != ledger.Answered {
				b.Fatal(res.Err)
			}
		}
	})
}
