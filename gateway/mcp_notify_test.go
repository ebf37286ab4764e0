package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/gateway/gatewaytest"
	"github.com/toolgate/toolgate/internal/testrig"
	"github.com/toolgate/toolgate/rollout"
	"github.com/toolgate/toolgate/toolcall"
)

// sseEvent is one server-sent event of a notification stream.
type sseEvent struct {
	id, event, data, retry string
}

// sseStream is a GET /mcp notification stream read on its own goroutine:
// events arrive on events, which closes when the stream ends.
type sseStream struct {
	resp   *http.Response
	events chan sseEvent
	cancel func()
}

// openStream opens GET /mcp at base as token (no Authorization when
// token is ""), with lastID as Last-Event-ID when not "". It returns the
// response of a refusal with a nil stream.
func openStream(t *testing.T, base, token, lastID string) (*sseStream, *http.Response) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", base+"/mcp", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		cancel()
		return nil, resp
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("GET /mcp: Content-Type %q", ct)
	}
	s := &sseStream{resp: resp, events: make(chan sseEvent, 16), cancel: cancel}
	t.Cleanup(s.close)
	go func() {
		defer close(s.events)
		sc := bufio.NewScanner(resp.Body)
		var ev sseEvent
		var fields int
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if fields > 0 {
					s.events <- ev
				}
				ev, fields = sseEvent{}, 0
				continue
			case strings.HasPrefix(line, ":"):
				continue // a comment: keep-alive
			}
			k, v, _ := strings.Cut(line, ":")
			v = strings.TrimPrefix(v, " ")
			fields++
			switch k {
			case "id":
				ev.id = v
			case "event":
				ev.event = v
			case "data":
				ev.data += v
			case "retry":
				ev.retry = v
			}
		}
	}()
	return s, resp
}

func (s *sseStream) close() {
	s.cancel()
	s.resp.Body.Close()
}

// priming reads the stream's first event: an id and a retry, no data.
func (s *sseStream) priming(t *testing.T) string {
	t.Helper()
	select {
	case ev, ok := <-s.events:
		if !ok || !strings.HasPrefix(ev.id, "tools-") || ev.retry == "" || ev.data != "" {
			t.Fatalf("the priming event: %+v (stream open: %v)", ev, ok)
		}
		return ev.id
	case <-time.After(10 * time.Second):
		t.Fatal("no priming event")
	}
	return ""
}

// listChanged waits for notifications/tools/list_changed and returns its id.
func (s *sseStream) listChanged(t *testing.T, what string) string {
	t.Helper()
	select {
	case ev, ok := <-s.events:
		if !ok {
			t.Fatalf("%s: the stream ended", what)
		}
		var msg struct {
			JSONRPC string `json:"jsonrpc"`
			Method  string `json:"method"`
		}
		if ev.event != "message" || json.Unmarshal([]byte(ev.data), &msg) != nil || msg.JSONRPC != "2.0" || msg.Method != "notifications/tools/list_changed" {
			t.Fatalf("%s: the event %+v is not notifications/tools/list_changed", what, ev)
		}
		return ev.id
	case <-time.After(20 * time.Second):
		t.Fatalf("%s: no notifications/tools/list_changed", what)
	}
	return ""
}

// quiet wants no event on the stream for d.
func (s *sseStream) quiet(t *testing.T, what string, d time.Duration) {
	t.Helper()
	if d == 0 {
		select {
		case ev, ok := <-s.events:
			t.Fatalf("%s: the stream was sent %+v (open: %v), want nothing", what, ev, ok)
		default:
		}
		return
	}
	select {
	case ev, ok := <-s.events:
		t.Fatalf("%s: the stream was sent %+v (open: %v), want nothing", what, ev, ok)
	case <-time.After(d):
	}
}

// hashOf is the HASH of an event id tools-HASH-NONCE.
func hashOf(t *testing.T, id string) string {
	t.Helper()
	parts := strings.Split(id, "-")
	if len(parts) != 3 {
		t.Fatalf("event id %q is not tools-HASH-NONCE", id)
	}
	return parts[1]
}

// listedVersion is the version of evo.order replica i's tools/list hands who.
func (d *evoDeploy) listedVersion(i int, who string) string {
	d.t.Helper()
	cs := d.mcpSession(i, who)
	defer cs.Close()
	return d.mcpHanded(cs).version
}

// TestMCPNotifyAcrossReplicas: two gateways on one PostgreSQL database.
// Principals hold GET /mcp notification streams on replica B; rollout
// transitions are made through replica A. A principal whose advertised
// definitions change is sent notifications/tools/list_changed, and tools/list
// on B then describes the new version; a principal whose definitions did
// not change is sent nothing.
func TestMCPNotifyAcrossReplicas(t *testing.T) {
	t.Parallel()
	d := newEvoDeploy(t, "postgres", 2)
	a, b := d.reps[0].ts.URL, d.reps[1].ts.URL
	// other: a principal the 20% canary does not take.
	other := ""
	for _, p := range evoPrincipals {
		if p != "beta-agent" && rollout.Bucket(evoTool, "acme", p) >= 2000 {
			other = p
			break
		}
	}
	if other == "" {
		t.Fatal("every principal is in the canary's 20%")
	}

	if s, resp := openStream(t, b, "", ""); s != nil || resp.StatusCode != 401 {
		t.Fatalf("an unauthenticated GET /mcp: %d", resp.StatusCode)
	}
	if s, resp := openStream(t, b, "not-a-key", ""); s != nil || resp.StatusCode != 401 {
		t.Fatalf("GET /mcp with an unknown key: %d", resp.StatusCode)
	}

	beta, _ := openStream(t, b, evoToken("beta-agent"), "")
	oth, _ := openStream(t, b, evoToken(other), "")
	if beta == nil || oth == nil {
		t.Fatal("the notification streams did not open")
	}
	betaID, othID := beta.priming(t), oth.priming(t)

	// An unreleased 2.0.0 appears and the directory reloads on both
	// replicas: what is advertised does not change, nothing is sent.
	d.write("schemas/v2.0.0.json", evoSchemaFile("2.0.0"))
	d.reload()
	beta.quiet(t, "the reload of an unreleased version", gateway.MCPNotifyMinInterval+time.Second)
	oth.quiet(t, "the reload of an unreleased version", 0)

	if r := d.do(0, fleetOncall, "POST", "/v1/rollouts/"+evoTool+"/shadow", `{"version":"2.0.0"}`); r.status != 200 {
		t.Fatalf("shadow: %d %s", r.status, r.body)
	}
	if r := d.do(0, fleetOncall, "POST", "/v1/rollouts/"+evoTool+"/canary", `{"percent":20,"principals":["beta-agent"]}`); r.status != 200 {
		t.Fatalf("canary: %d %s", r.status, r.body)
	}
	id := beta.listChanged(t, "the canary naming beta-agent, on replica B")
	if hashOf(t, id) == hashOf(t, betaID) {
		t.Fatalf("list_changed %q names the definitions the stream opened with (%q)", id, betaID)
	}
	betaID = id
	if v := d.listedVersion(1, "beta-agent"); v != "2.0.0" {
		t.Fatalf("after list_changed replica B lists beta-agent %s, want the candidate 2.0.0", v)
	}
	if v := d.listedVersion(1, other); v != "1.1.0" {
		t.Fatalf("replica B lists %s %s, want 1.1.0", other, v)
	}
	// Three ticks and the coalescing interval: nothing for a principal
	// the canary does not take.
	oth.quiet(t, "the canary, for "+other, 3*time.Duration(fleetInterval)+gateway.MCPNotifyMinInterval+time.Second)

	// A stream opened on A with the last id seen on B: the definitions
	// are the same on both replicas, so nothing is sent.
	onA, _ := openStream(t, a, evoToken("beta-agent"), betaID)
	if onA == nil {
		t.Fatal("the stream on A with Last-Event-ID did not open")
	}
	onA.priming(t)
	onA.quiet(t, "a reconnection with the current id", 1500*time.Millisecond)

	r := d.do(0, fleetOncall, "POST", "/v1/rollouts/"+evoTool+"/promote", `{"approver":"ciso-alice"}`)
	if r.status != 200 {
		t.Fatalf("promote: %d %s", r.status, r.body)
	}
	othID = oth.listChanged(t, "the promotion, for "+other)
	if v := d.listedVersion(1, other); v != "2.0.0" {
		t.Fatalf("after the promotion replica B lists %s %s, want 2.0.0", other, v)
	}
	// beta-agent was handed 2.0.0 already: its definitions did not change.
	beta.quiet(t, "the promotion, for beta-agent (already on 2.0.0)", 3*time.Duration(fleetInterval)+gateway.MCPNotifyMinInterval+time.Second)
	onA.quiet(t, "the promotion, for beta-agent on A", 0)

	if r := d.do(0, fleetOncall, "POST", "/v1/rollouts/"+evoTool+"/rollback", `{"version":"1.1.0"}`); r.status != 200 {
		t.Fatalf("rollback: %d %s", r.status, r.body)
	}
	beta.listChanged(t, "the rollback, for beta-agent")
	oth.listChanged(t, "the rollback, for "+other)
	onA.listChanged(t, "the rollback, for beta-agent on A")
	for _, who := range []string{"beta-agent", other} {
		if v := d.listedVersion(1, who); v != "1.1.0" {
			t.Fatalf("after the rollback replica B lists %s %s, want 1.1.0", who, v)
		}
	}
	// A client that was away since before the rollback reconnects with the
	// last id it saw: it is told at once.
	back, _ := openStream(t, a, evoToken(other), othID)
	if back == nil {
		t.Fatal("the reconnection did not open")
	}
	back.priming(t)
	back.listChanged(t, "a reconnection with an id from before the rollback")
}

// TestMCPNotifyStreams: one gateway on SQLite, served by the HTTP server
// toolgate serve runs (HTTPServer). A canary naming one key notifies that
// key's streams only; a reload that changes no definition notifies nobody;
// a key's streams are bounded (429 too_many_requests); a GET with
// Last-Event-ID of a tools/call stream is still a resumption; Shutdown ends
// every stream.
func TestMCPNotifyStreams(t *testing.T) {
	t.Parallel()
	_, sbURL := testrig.Sandbox(t)
	reg := testrig.Registry(t)
	key := func(name, role string) gateway.Key {
		return gateway.Key{Name: name, SHA256Hex: config.HashKey("tok-" + name), Tenant: "acme", Role: role, Tools: []string{"*"}}
	}
	srv, err := gatewaytest.New(gatewaytest.Config{Registry: reg, Ledger: testrig.Ledger(t, "mcp-notify"), Bindings: testrig.Bindings(sbURL),
		Logger: testrig.Logger(t), Keys: []gateway.Key{key("agent-a", "agent"), key("agent-b", "agent"), key("ops", "operator")},
		MaxMCPStreamsPerKey: 2})
	if err != nil {
		t.Fatal(err)
	}
	hs := srv.HTTPServer(gateway.HTTPLimits{ReadTimeout: 2 * time.Second, WriteTimeout: 3 * time.Second})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	base := "http://" + ln.Addr().String()
	t.Cleanup(func() { hs.Close() })

	if s, resp := openStream(t, base, "", ""); s != nil || resp.StatusCode != 401 {
		t.Fatalf("an unauthenticated GET /mcp: %d", resp.StatusCode)
	}
	opened := time.Now()
	a1, _ := openStream(t, base, "tok-agent-a", "")
	a2, _ := openStream(t, base, "tok-agent-a", "")
	b1, _ := openStream(t, base, "tok-agent-b", "")
	if a1 == nil || a2 == nil || b1 == nil {
		t.Fatal("the streams did not open")
	}
	a1.priming(t)
	a2.priming(t)
	b1.priming(t)
	s, resp := openStream(t, base, "tok-agent-a", "")
	if s != nil || resp.StatusCode != 429 {
		t.Fatalf("a third stream of agent-a (2 allowed): %d", resp.StatusCode)
	}
	var p struct {
		Code string `json:"code"`
	}
	json.NewDecoder(resp.Body).Decode(&p)
	if p.Code != "too_many_requests" || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a third stream of agent-a: %+v, Retry-After %q", p, resp.Header.Get("Retry-After"))
	}
	// A GET that resumes a tools/call stream is not a notification stream.
	req, _ := http.NewRequest("GET", base+"/mcp", nil)
	req.Header.Set("Authorization", "Bearer tok-agent-b")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Last-Event-ID", "nosuchstream_3")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 404 {
		t.Fatalf("GET /mcp resuming an unknown stream: %v %v", err, resp)
	}

	post := func(path, body string) {
		t.Helper()
		req, _ := http.NewRequest("POST", base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer tok-ops")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("POST %s: %v %v", path, err, resp)
		}
		resp.Body.Close()
	}
	post("/v1/rollouts/refund.create_request/canary", `{"version":"2.1.0","percent":0,"principals":["agent-a"]}`)
	a1.listChanged(t, "the canary naming agent-a")
	a2.listChanged(t, "the canary naming agent-a, second stream")
	b1.quiet(t, "the canary, for agent-b", gateway.MCPNotifyMinInterval+time.Second)

	if err := srv.Reload(toolcall.Tools{Registry: testrig.Registry(t)}); err != nil {
		t.Fatal(err)
	}
	a1.quiet(t, "a reload that changes no definition", gateway.MCPNotifyMinInterval+time.Second)
	b1.quiet(t, "a reload that changes no definition", 0)

	// The streams outlive the server's read (2 s) and write (3 s) timeouts:
	// the halt is sent after both passed (the quiet waits above take most
	// of that time; this waits for the rest, if any).
	time.Sleep(time.Until(opened.Add(3500 * time.Millisecond)))
	post("/v1/rollouts/refund.create_request/halt", `{}`)
	a1.listChanged(t, "the halt")
	a2.listChanged(t, "the halt, second stream")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := hs.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown with streams open: %v", err)
	}
	for _, s := range []*sseStream{a1, a2, b1} {
		select {
		case ev, ok := <-s.events:
			if ok {
				t.Fatalf("after Shutdown the stream was sent %+v, want its end", ev)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the stream did not end at Shutdown")
		}
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		t.Fatalf("Serve: %v", err)
	}
}
