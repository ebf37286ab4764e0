package upstream_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/invoke"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/upstream"
	"github.com/toolgate/toolgate/upstream/upstreamtest"
)

func binding(url string, timeout time.Duration) *invoke.Binding {
	return &invoke.Binding{Timeout: timeout, MCP: &invoke.MCPTool{URL: url, Tool: "create_ticket", LookupTool: "find_ticket_by_key"}}
}

func request(b *invoke.Binding, key, args string) invoke.Request {
	return invoke.Request{Binding: b, Vars: invoke.Vars{Tenant: "acme", ActionID: key}, Body: []byte(args)}
}

const ticketArgs = `{"priority":"urgent","subject":"printer on fire"}`

// Each attempt's classification, against a real MCP server: what the server
// did (its effects) and what the invoker says it proves.
func TestCallClassification(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		fault     upstreamtest.Fault
		tool      string
		timeout   time.Duration
		cut       bool // cut the connections while the call is held
		stateless bool
		outcome   ledger.Outcome
		status    int
		effects   int
		errSubstr string
	}{
		{name: "answered", outcome: ledger.Answered, status: 200, effects: 1},
		{name: "isError result is a terminal answer", fault: upstreamtest.ToolError, outcome: ledger.Answered, status: 422, effects: 0},
		{name: "unknown tool is not started", tool: "no_such_tool", outcome: ledger.NotStarted, effects: 0, errSubstr: "-32602"},
		{name: "internal error after the effect is unknown", fault: upstreamtest.RPCError, outcome: ledger.Lost, effects: 1, errSubstr: "-32603"},
		{name: "timeout after the effect is unknown", fault: upstreamtest.HoldAfter, timeout: 300 * time.Millisecond, outcome: ledger.Lost, effects: 1},
		{name: "timeout before the effect is unknown too", fault: upstreamtest.HoldBefore, timeout: 300 * time.Millisecond, outcome: ledger.Lost, effects: 0},
		{name: "connection cut after the effect is unknown", fault: upstreamtest.HoldAfter, cut: true, stateless: true, outcome: ledger.Lost, effects: 1},
		// A session's stream is resumed (a GET, never the call again) and
		// waits for the held answer: the attempt times out, unknown.
		{name: "stream cut on a session is unknown", fault: upstreamtest.HoldAfter, cut: true, timeout: time.Second, outcome: ledger.Lost, effects: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := upstreamtest.Start(t, true, tc.stateless)
			pool := upstream.NewPool(upstream.Config{Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
			t.Cleanup(pool.Close)
			inv := upstream.NewInvoker(pool)
			timeout := tc.timeout
			if timeout == 0 {
				timeout = 5 * time.Second
			}
			b := binding(srv.URL, timeout)
			if tc.tool != "" {
				b.MCP.Tool = tc.tool
			}
			srv.Fault(tc.fault)
			if tc.cut {
				go func() {
					srv.WaitHeld(t)
					srv.HTTP.CloseClientConnections()
				}()
			}
			res := inv.Call(context.Background(), request(b, "key-0001", ticketArgs))
			if res.Outcome != tc.outcome || res.StatusCode != tc.status {
				t.Fatalf("outcome %s status %d (err %v), want %s %d", res.Outcome, res.StatusCode, res.Err, tc.outcome, tc.status)
			}
			if tc.errSubstr != "" && (res.Err == nil || !strings.Contains(res.Err.Error(), tc.errSubstr)) {
				t.Fatalf("err %v, want it to name %s", res.Err, tc.errSubstr)
			}
			if tc.outcome != ledger.NotStarted && (!res.Written || res.SentAt.IsZero()) {
				t.Fatalf("a sent call must say so: written %v sent at %v", res.Written, res.SentAt)
			}
			if got := len(srv.Tickets()); got != tc.effects {
				t.Fatalf("%d effects when the attempt ended, want %d", got, tc.effects)
			}
			srv.Release()
			if tc.fault == upstreamtest.HoldBefore {
				// The held handler goes on after the client gave up and applies
				// the effect late: exactly why the attempt's outcome is unknown,
				// not "not started". It must land, and land once.
				deadline := time.Now().Add(10 * time.Second)
				for len(srv.Tickets()) == 0 && time.Now().Before(deadline) {
					time.Sleep(5 * time.Millisecond)
				}
				if got := len(srv.Tickets()); got != 1 {
					t.Fatalf("%d effects after the release, want the late one", got)
				}
			}
			if n := srv.Calls(); n > 1 {
				t.Fatalf("the tool was called %d times for one attempt", n)
			}
			if strings.Contains(errText(res.Err), "printer on fire") {
				t.Fatalf("the error repeats an argument: %v", res.Err)
			}
		})
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// The downstream key reaches the server in _meta, and the body is the
// result's structuredContent.
func TestCallSendsKeyAndRendersResult(t *testing.T) {
	t.Parallel()
	srv := upstreamtest.Start(t, true, true)
	pool := upstream.NewPool(upstream.Config{})
	t.Cleanup(pool.Close)
	inv := upstream.NewInvoker(pool)
	res := inv.Call(context.Background(), request(binding(srv.URL, 5*time.Second), "key-0002", ticketArgs))
	if res.Outcome != ledger.Answered || res.StatusCode != 200 || res.ContentType != "application/json" {
		t.Fatalf("%+v", res)
	}
	var tk upstreamtest.Ticket
	if err := json.Unmarshal(res.Body, &tk); err != nil || tk.ID != "T-1" || tk.Subject != "printer on fire" {
		t.Fatalf("body %s: %v", res.Body, err)
	}
	if got := srv.Tickets("acme:key-0002"); len(got) != 1 {
		t.Fatalf("the server saw keys %+v, want acme:key-0002", srv.Tickets())
	}
}

// A server that cannot be reached is not started, and so is a call while
// the pool waits out its reconnection backoff.
func TestCallNotReached(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	pool := upstream.NewPool(upstream.Config{})
	t.Cleanup(pool.Close)
	inv := upstream.NewInvoker(pool)
	for i := range 2 {
		res := inv.Call(context.Background(), request(binding("http://"+addr+"/mcp", time.Second), "key-0003", ticketArgs))
		if res.Outcome != ledger.NotStarted || res.Written {
			t.Fatalf("call %d: %+v", i, res)
		}
	}
}

// The lookup tool finds an effect by its key, says so when there is none,
// and an error result is no answer.
func TestLookup(t *testing.T) {
	t.Parallel()
	srv := upstreamtest.Start(t, true, false)
	pool := upstream.NewPool(upstream.Config{})
	t.Cleanup(pool.Close)
	inv := upstream.NewInvoker(pool)
	b := binding(srv.URL, 5*time.Second)
	if lr := inv.Lookup(context.Background(), request(b, "key-0004", "")); !lr.NotFound || lr.Found || lr.Err != nil {
		t.Fatalf("before the effect: %+v", lr)
	}
	if res := inv.Call(context.Background(), request(b, "key-0004", ticketArgs)); res.Outcome != ledger.Answered {
		t.Fatalf("%+v", res)
	}
	lr := inv.Lookup(context.Background(), request(b, "key-0004", ""))
	if !lr.Found || lr.StatusCode != 200 || !strings.Contains(string(lr.Body), `"ticket_id":"T-1"`) {
		t.Fatalf("after the effect: %+v %s", lr, lr.Body)
	}
	b.MCP.LookupTool = "create_ticket_typo"
	if lr := inv.Lookup(context.Background(), request(b, "key-0004", "")); lr.Err == nil || lr.Found || lr.NotFound {
		t.Fatalf("a lookup tool that does not exist: %+v", lr)
	}
	b.MCP.LookupTool = ""
	if lr := inv.Lookup(context.Background(), request(b, "key-0004", "")); lr.Err != invoke.ErrNoLookup {
		t.Fatalf("no lookup tool: %+v", lr)
	}
}

func TestCheckMetaKey(t *testing.T) {
	t.Parallel()
	for key, ok := range map[string]bool{
		"toolgate/idempotency_key": true, "idempotency_key": true, "com.example.api/key": true, "a/b.c-d_e": true,
		"": false, "/key": false, "-x/key": false, "x-/key": false, "x/": false, "x/_key": false,
		"io.mcp.tools/key": false, "modelcontextprotocol.io/key": false, "io.mcp/key": true,
	} {
		if got := upstream.CheckMetaKey(key) == ""; got != ok {
			t.Errorf("%q: ok %v, want %v (%s)", key, got, ok, upstream.CheckMetaKey(key))
		}
	}
}

// A session the network broke is dropped and the next call connects anew:
// the call after it is answered, and nothing was sent twice.
func TestReconnectAfterBrokenSession(t *testing.T) {
	t.Parallel()
	srv := upstreamtest.Start(t, true, false)
	pool := upstream.NewPool(upstream.Config{})
	t.Cleanup(pool.Close)
	inv := upstream.NewInvoker(pool)
	b := binding(srv.URL, 2*time.Second)
	if res := inv.Call(context.Background(), request(b, "key-0005", ticketArgs)); res.Outcome != ledger.Answered {
		t.Fatalf("first: %+v", res)
	}
	srv.EndSessions()
	srv.HTTP.CloseClientConnections()
	time.Sleep(50 * time.Millisecond)
	var res invoke.Result
	for i := range 10 {
		res = inv.Call(context.Background(), request(b, fmt.Sprintf("key-10%02d", i), ticketArgs))
		if res.Outcome == ledger.Answered {
			break
		}
		if res.Outcome != ledger.NotStarted {
			t.Fatalf("a call on a broken session must not be lost: %+v", res)
		}
		time.Sleep(300 * time.Millisecond) // the reconnection backoff
	}
	if res.Outcome != ledger.Answered {
		t.Fatalf("no reconnection: %+v", res)
	}
	if n := len(srv.Tickets()); n != 2 {
		t.Fatalf("%d tickets, want 2", n)
	}
	if srv.Sessions() < 2 {
		t.Fatalf("%d sessions were opened, want a second one", srv.Sessions())
	}
}
