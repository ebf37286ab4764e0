package gateway_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/toolgate/toolgate/gateway/gatewaytest"
	"github.com/toolgate/toolgate/internal/testrig"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/ledger/sqlite"
)

// TestOAuthTokenNeverLeaves: an access token carrying a marker claim is used
// on every door (a call, its replay, a refused call, an invalid one, the
// Anthropic door, MCP tools/list and tools/call), and then every sink is
// searched for the token, its parts and the marker: the gateway's log, the
// decision log (arguments in full), the ledger's files and every request
// the downstream received (headers and bodies).
func TestOAuthTokenNeverLeaves(t *testing.T) {
	t.Parallel()
	k := newKey(t, "k1", jose.ES256)
	i := newIDP(t, k)
	ledgerDir := t.TempDir()
	var mu sync.Mutex
	var downstream bytes.Buffer
	g := newOAuthRigWith(t, i, i.url, func(c *gatewaytest.Config, sbURL string) {
		st, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(ledgerDir, "ledger.db")})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		c.Ledger = &ledger.Service{Store: st, Lease: 30 * time.Second, Owner: "test"}
		target, _ := url.Parse(sbURL)
		proxy := httputil.NewSingleHostReverseProxy(target)
		rec := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			dump, _ := httputil.DumpRequest(r, true)
			mu.Lock()
			downstream.Write(dump)
			mu.Unlock()
			proxy.ServeHTTP(w, r)
		}))
		t.Cleanup(rec.Close)
		c.Bindings = testrig.Bindings(rec.URL)
	})
	b := make([]byte, 12)
	rand.Read(b)
	marker := "MARKER" + hex.EncodeToString(b)
	tok := g.token(k, func(c map[string]any) { c["marker"] = marker; c["toolgate_tools"] = []string{"payments.*"} })
	parts := strings.Split(tok, ".")

	if r := g.refund("leak-key-00001", okArgs, bearer(tok)...); !answered(r) {
		t.Fatalf("call: %d %s", r.status, r.body)
	}
	g.refund("leak-key-00001", okArgs, bearer(tok)...)
	g.do("POST", "/v1/tools/orders.get_order/calls", `{"arguments":{"order_id":"ord_12345678"}}`, append(bearer(tok), "Idempotency-Key", "leak-key-00002")...).wantProblem(t, 403, "tool_not_allowed")
	g.refund("leak-key-00003", `{"order_id":"x","amount_minor":0,"currency":"EUR","reason":"customer_request"}`, bearer(tok)...).wantProblem(t, 422, "invalid_arguments")
	name := exportedName(t, g.rig, "anthropic", "payments.issue_refund", bearer(tok)...)
	g.do("POST", "/v1/calls/anthropic", `{"type":"tool_use","id":"toolu_leak","name":"`+name+`","input":`+okArgs+`}`, append(bearer(tok), "Idempotency-Key", "leak-key-00004")...)
	mcp := append([]string{"Content-Type", "application/json", "Accept", "application/json, text/event-stream"}, bearer(tok)...)
	g.do("POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, mcp...)
	r := g.do("POST", "/mcp", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"payments.issue_refund","arguments":`+okArgs+`,"_meta":{"toolgate/idempotency_key":"leak-key-00005"}}}`, mcp...)
	if r.status != 200 || !strings.Contains(string(r.body), "succeeded") {
		t.Fatalf("MCP tools/call: %d %s", r.status, r.body)
	}
	g.wantEffects(3)
	g.closeLog()

	sinks := map[string][]byte{"gateway log": []byte(g.logs.String())}
	var err error
	if sinks["decision log"], err = os.ReadFile(g.dlog); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	sinks["downstream requests"] = append([]byte(nil), downstream.Bytes()...)
	mu.Unlock()
	files, _ := filepath.Glob(filepath.Join(ledgerDir, "*"))
	for _, f := range files {
		if sinks["ledger "+filepath.Base(f)], err = os.ReadFile(f); err != nil {
			t.Fatal(err)
		}
	}
	// The sinks must hold what was done, or the search proves nothing.
	if !bytes.Contains(sinks["decision log"], []byte(`"principal":"agent-1"`)) || !bytes.Contains(sinks["downstream requests"], []byte("ord_12345678")) ||
		!bytes.Contains(sinks["ledger ledger.db"], []byte("leak-key-00001")) && !bytes.Contains(sinks["ledger ledger.db-wal"], []byte("leak-key-00001")) {
		t.Fatalf("a sink is empty: decision log %d bytes, downstream %d bytes, ledger files %v", len(sinks["decision log"]), len(sinks["downstream requests"]), files)
	}
	for name, data := range sinks {
		for what, needle := range map[string]string{"token": tok, "header": parts[0], "payload": parts[1], "signature": parts[2], "marker": marker} {
			if bytes.Contains(data, []byte(needle)) {
				t.Errorf("the %s holds the token's %s", name, what)
			}
		}
	}
}
