package gateway_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/gateway/gatewaytest"
	"github.com/toolgate/toolgate/invoke"
)

// The tests of the gateway's limits and parsing rules (docs/security.md)
// call two tools of their own on a downstream that records every request
// it receives, byte for byte.

const (
	transferTool = "ledger.transfer" // mutating; {args.account} is a path segment
	balanceTool  = "ledger.balance"  // read-only; {args.account} is a path segment
)

var limitTools = fstest.MapFS{
	transferTool + "/schemas/v1.0.0.json": {Data: []byte(`{"tool_id":"ledger.transfer","version":"1.0.0","name":"transfer",
  "description":"Move an amount between accounts.","effect":"mutating",
  "parameters":{"type":"object","properties":{
    "account":{"type":"string","description":"The account."},
    "amount":{"type":"integer","description":"Minor units."},
    "price":{"type":"number","description":"A price."},
    "rate":{"type":"number","description":"A rate."},
    "note":{"type":"string","description":"A note."},
    "nested":{"type":"object","description":"Anything."}},
  "required":["account"]},
  "result":{"type":"object"}}`)},
	balanceTool + "/schemas/v1.0.0.json": {Data: []byte(`{"tool_id":"ledger.balance","version":"1.0.0","name":"balance",
  "description":"Read an account's balance.","effect":"read_only",
  "parameters":{"type":"object","properties":{"account":{"type":"string","description":"The account."}},"required":["account"]},
  "result":{"type":"object"}}`)},
}

// seenRequest is one request the downstream received.
type seenRequest struct {
	Method     string
	RequestURI string // as it came on the wire
	Header     http.Header
	Body       []byte
}

// recorder is a real HTTP downstream that records every request and
// answers 200 {"ok":true}.
type recorder struct {
	mu   sync.Mutex
	reqs []seenRequest
	url  string
}

func newRecorder(t testing.TB) *recorder {
	rec := &recorder{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rec.mu.Lock()
		rec.reqs = append(rec.reqs, seenRequest{Method: r.Method, RequestURI: r.RequestURI, Header: r.Header.Clone(), Body: b})
		rec.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"ok":true}`))
	}))
	t.Cleanup(srv.Close)
	rec.url = srv.URL
	return rec
}

func (rec *recorder) requests() []seenRequest {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]seenRequest(nil), rec.reqs...)
}

// calls are the requests for the transfer tool itself (not lookups).
func (rec *recorder) calls() []seenRequest {
	var out []seenRequest
	for _, r := range rec.requests() {
		if r.Method == "POST" {
			out = append(out, r)
		}
	}
	return out
}

// withLimitTools serves the two tools on rec.
func withLimitTools(t testing.TB, rec *recorder) option {
	reg, err := contract.LoadFS(limitTools)
	if err != nil {
		t.Fatal(err)
	}
	return func(c *gatewaytest.Config) {
		c.Registry = reg
		c.Bindings = map[string]invoke.Binding{
			transferTool: {URL: rec.url + "/accounts/{args.account}/transfers", LookupURL: rec.url + "/by-key/{downstream_key}", Timeout: 2 * time.Second},
			balanceTool:  {URL: rec.url + "/accounts/{args.account}", Method: "GET", Timeout: 2 * time.Second},
		}
	}
}

// transfer is a one-shot call of the transfer tool with raw arguments.
func (g *rig) transfer(key, args string, headers ...string) reply {
	g.t.Helper()
	if key != "" {
		headers = append(headers, "Idempotency-Key", key)
	}
	return g.do("POST", "/v1/tools/"+transferTool+"/calls", `{"arguments":`+args+`}`, headers...)
}
