package upstream_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/upstream"
	"github.com/toolgate/toolgate/upstream/upstreamtest"
)

const upCredential = "Bearer tg-cred-7f3a9c2e41d8"

// leaks lists what of an upstream's texts must never be in an error: the
// call's arguments, the server's secret words, the configured credential.
func leaks(t *testing.T, text string) {
	t.Helper()
	for _, bad := range []string{"printer on fire", "SECRET", "tg-cred-7f3a9c2e41d8", "token", "\\u0074"} {
		if strings.Contains(text, bad) {
			t.Errorf("the error text holds %q: %.300s", bad, text)
		}
	}
	if len(text) > 400 {
		t.Errorf("the error text is %d bytes long: %.300s…", len(text), text)
	}
}

// An upstream's error texts are never kept: whatever the JSON-RPC code
// (the SDK's own codes too), however the message is escaped, and a
// malformed answer's decode error does not quote it; only the code and the
// HTTP status are.
func TestUpstreamErrorTextsAreNotKept(t *testing.T) {
	t.Parallel()
	huge := strings.Repeat(`SECRET printer on fire `, 20000) // about 460 KB
	cases := []struct {
		name, msg string
		sse       bool
		outcome   ledger.Outcome
		want      string
	}{
		{"SDK code -32001 with a huge message", `{"jsonrpc":"2.0","id":@ID@,"error":{"code":-32001,"message":"` + huge + `"}}`, false, ledger.Lost, "-32001"},
		{"SDK code -32005", `{"jsonrpc":"2.0","id":@ID@,"error":{"code":-32005,"message":"SECRET printer on fire"}}`, true, ledger.Lost, "-32005"},
		{"internal error, escaped", `{"jsonrpc":"2.0","id":@ID@,"error":{"code":-32603,"message":"\u0074oken \u0053ECRET \"printer on fire\"","data":"SECRET"}}`, false, ledger.Lost, "-32603"},
		{"server code", `{"jsonrpc":"2.0","id":@ID@,"error":{"code":42,"message":"SECRET tg-cred-7f3a9c2e41d8"}}`, true, ledger.Lost, "42"},
		{"invalid params is not started", `{"jsonrpc":"2.0","id":@ID@,"error":{"code":-32602,"message":"SECRET printer on fire"}}`, false, ledger.NotStarted, "-32602"},
		{"malformed JSON", `{"jsonrpc":"2.0","id":@ID@,"result":SECRET printer on fire tg-cred-7f3a9c2e41d8}`, false, ledger.Lost, ""},
		{"malformed event", `{"jsonrpc":"2.0","id":@ID@,"result":{"content":"SECRET printer on fire"}}`, true, ledger.Lost, ""},
		{"not JSON-RPC", `SECRET printer on fire`, false, ledger.Lost, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := upstreamtest.Start(t, true, false)
			pool := upstream.NewPool(upstream.Config{})
			t.Cleanup(pool.Close)
			inv := upstream.NewInvoker(pool)
			b := binding(srv.URL, 2*time.Second)
			b.MCP.Headers = map[string]string{"Authorization": upCredential}
			srv.RawReply(tc.msg, tc.sse)
			res := inv.Call(context.Background(), request(b, "key-err-1", ticketArgs))
			if res.Outcome != tc.outcome || res.Err == nil {
				t.Fatalf("outcome %s err %v, want %s", res.Outcome, res.Err, tc.outcome)
			}
			leaks(t, res.Err.Error())
			t.Log(res.Err)
			if tc.want != "" && !strings.Contains(res.Err.Error(), tc.want) {
				t.Errorf("the error does not name the code %s: %v", tc.want, res.Err)
			}
			srv.RawReply(tc.msg, tc.sse)
			if lr := inv.Lookup(context.Background(), request(b, "key-err-1", "")); lr.Err == nil {
				t.Errorf("lookup: %+v", lr)
			} else {
				leaks(t, lr.Err.Error())
			}
		})
	}
}

// A server that refuses the connection and repeats the credential (and
// more) in its answer is reported by its status only, in the call's error,
// tools/list's and the watcher's.
func TestRefusedConnectionKeepsOnlyTheStatus(t *testing.T) {
	t.Parallel()
	hostile := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"bad credential ` + r.Header.Get("Authorization") + ` SECRET"}}`))
	}))
	t.Cleanup(hostile.Close)
	pool := upstream.NewPool(upstream.Config{})
	t.Cleanup(pool.Close)
	inv := upstream.NewInvoker(pool)
	b := binding(hostile.URL+"/mcp", 2*time.Second)
	b.MCP.Headers = map[string]string{"Authorization": upCredential}
	res := inv.Call(context.Background(), request(b, "key-err-2", ticketArgs))
	if res.Outcome != ledger.NotStarted || res.Err == nil || !strings.Contains(res.Err.Error(), "HTTP 401") {
		t.Fatalf("%+v", res)
	}
	leaks(t, res.Err.Error())
	_, err := pool.ListTools(context.Background(), hostile.URL+"/other", b.MCP.Headers)
	if err == nil || !strings.Contains(err.Error(), "HTTP 401") {
		t.Fatalf("tools/list: %v", err)
	}
	leaks(t, err.Error())
}
