package gateway_test

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/decisionlog"
	"github.com/toolgate/toolgate/gateway/gatewaytest"
	"github.com/toolgate/toolgate/internal/testrig"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/ledger/sqlite"
	"github.com/toolgate/toolgate/sandbox"
)

// goneRig is a rig whose log (JSON, every level) and decision log the test
// reads back.
type goneRig struct {
	*rig
	logs      *testrig.Buffer
	decisions func() []map[string]any
}

func newGoneRig(t *testing.T, opts ...option) *goneRig {
	t.Helper()
	path := filepath.Join(t.TempDir(), "decisions.jsonl")
	sink, err := decisionlog.OpenFile(decisionlog.FileConfig{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	w := decisionlog.NewWriter(sink, decisionlog.Config{Mode: decisionlog.ModeMasked})
	logs := &testrig.Buffer{}
	g := newRig(t, append([]option{func(c *gatewaytest.Config) {
		c.DecisionLog = w
		c.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}}, opts...)...)
	var once sync.Once
	read := func() []map[string]any {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := w.Close(ctx); err != nil {
				t.Fatal(err)
			}
		})
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var out []map[string]any
		for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("decision log line: %v: %s", err, line)
			}
			out = append(out, m)
		}
		return out
	}
	return &goneRig{rig: g, logs: logs, decisions: read}
}

// logLines are the gateway's log lines, decoded.
func (g *goneRig) logLines() []map[string]any {
	g.t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(g.logs.String()))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			g.t.Fatalf("log line: %v: %s", err, sc.Bytes())
		}
		out = append(out, m)
	}
	return out
}

// refundGone sends a refund call on ctx, which the test cancels: the
// client hangs up. It returns when the client gave up.
func (g *rig) refundGone(ctx context.Context, key string) error {
	req, err := http.NewRequestWithContext(ctx, "POST", g.url+"/v1/tools/payments.issue_refund/calls",
		strings.NewReader(`{"arguments":`+okArgs+`}`))
	if err != nil {
		return err
	}
	req.Header.Set("Idempotency-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		resp.Body.Close()
	}
	return err
}

// A caller that hangs up is not the gateway failing: whether it left a
// join, a ledger call, or the downstream call of the action it started, no
// log line is an ERROR, no call is counted with a 5xx outcome, the calls
// that were not answered are recorded as client_gone with status 499, and
// the actions are left exactly as the caller's presence would have left
// them — one effect each, the claimed one run to its end and replayed.
func TestCallerThatHangsUpIsNoServerError(t *testing.T) {
	t.Parallel()
	g := newGoneRig(t)
	ctx := context.Background()

	// 1. A duplicate leaves while it waits for the running first call.
	g.fault(sandbox.Fault{Path: "/refunds", Fault: "hold"})
	first := make(chan reply, 1)
	go func() { first <- g.refund("gone-join-0001", okArgs) }()
	if err := g.sb.WaitHeld(ctx, 1); err != nil {
		t.Fatal(err)
	}
	dupCtx, hangUp := context.WithCancel(ctx)
	dupDone := make(chan error, 1)
	go func() { dupDone <- g.refundGone(dupCtx, "gone-join-0001") }()
	waitFor(t, "the duplicate to join", func() bool { return g.svc.Waiting("default", "gone-join-0001") == 1 })
	hangUp()
	if err := <-dupDone; !errors.Is(err, context.Canceled) {
		t.Fatalf("the duplicate's client: %v, want its own cancellation", err)
	}
	waitFor(t, "the duplicate to leave the join", func() bool { return g.svc.Waiting("default", "gone-join-0001") == 0 })
	g.sb.Release()
	if r := <-first; r.status != 201 {
		t.Fatalf("the first call: %d %s", r.status, r.body)
	}

	// 2. The caller is gone by the time the call reaches the ledger: its
	// context is canceled under a ledger call.
	gone, cancel := context.WithCancel(ctx)
	cancel()
	req := httptest.NewRequestWithContext(gone, "POST", "/v1/tools/payments.issue_refund/calls", strings.NewReader(`{"arguments":`+okArgs+`}`))
	req.Host = "127.0.0.1" // loopback, as the rig's own requests
	req.Header.Set("Idempotency-Key", "gone-ledger-0001")
	rec := httptest.NewRecorder()
	g.server.ServeHTTP(rec, req)
	if rec.Body.Len() != 0 || rec.Header().Get("Content-Type") != "" {
		t.Fatalf("a caller that went away was answered %d %s", rec.Code, rec.Body)
	}
	if _, err := g.svc.Get(ctx, "default", "gone-ledger-0001"); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("the action of a call whose caller left before the ledger: %v, want none", err)
	}
	if r := g.refund("gone-ledger-0001", okArgs); r.status != 201 || r.header.Get("Idempotent-Replayed") != "false" {
		t.Fatalf("the retry: %d %s", r.status, r.body)
	}

	// 3. The caller hangs up while the downstream runs its action: the
	// claimed action runs to its end, once, and its retry replays it.
	g.fault(sandbox.Fault{Path: "/refunds", Fault: "hold"})
	execCtx, hangUpExec := context.WithCancel(ctx)
	execDone := make(chan error, 1)
	go func() { execDone <- g.refundGone(execCtx, "gone-exec-0001") }()
	if err := g.sb.WaitHeld(ctx, 1); err != nil {
		t.Fatal(err)
	}
	hangUpExec()
	if err := <-execDone; !errors.Is(err, context.Canceled) {
		t.Fatalf("the client: %v, want its own cancellation", err)
	}
	g.sb.Release()
	waitFor(t, "the action to finish", func() bool {
		a, err := g.svc.Get(ctx, "default", "gone-exec-0001")
		return err == nil && a.State == ledger.Succeeded
	})
	// Its handler ends too, and records the call as executed (the first
	// call of gone-join-0001 and the retry of gone-ledger-0001 are the
	// other two).
	waitFor(t, "the hung-up call to be recorded", func() bool {
		return g.metric("toolgate_calls_total", map[string]string{"tool_id": "payments.issue_refund", "outcome": "executed"}) == 3
	})
	if r := g.refund("gone-exec-0001", okArgs); r.status != 201 || r.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("the retry of the action whose caller hung up: %d %s", r.status, r.body)
	}
	g.wantEffects(3)

	// 4. The caller of a read-only tool hangs up while the downstream
	// answers: its context ends the downstream call, which is no failure of
	// the downstream's.
	g.fault(sandbox.Fault{Path: "/orders/*", Fault: "hold"})
	readCtx, hangUpRead := context.WithCancel(ctx)
	readDone := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(readCtx, "POST", g.url+"/v1/tools/orders.get_order/calls", strings.NewReader(`{"arguments":{"order_id":"ord_12345678"}}`))
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		readDone <- err
	}()
	if err := g.sb.WaitHeld(ctx, 1); err != nil {
		t.Fatal(err)
	}
	hangUpRead()
	if err := <-readDone; !errors.Is(err, context.Canceled) {
		t.Fatalf("the read-only call's client: %v, want its own cancellation", err)
	}
	waitFor(t, "the read-only call to be recorded", func() bool {
		return g.metric("toolgate_calls_total", map[string]string{"tool_id": "orders.get_order"}) == 1
	})
	g.sb.Release()

	// What was recorded.
	for tool, want := range map[string]float64{"payments.issue_refund": 2, "orders.get_order": 1} {
		// Waited for: a handler whose caller left may end after the test's
		// next request.
		waitFor(t, "client_gone calls of "+tool, func() bool {
			return g.metric("toolgate_calls_total", map[string]string{"tool_id": tool, "outcome": "client_gone"}) >= want
		})
		if n := g.metric("toolgate_calls_total", map[string]string{"tool_id": tool, "outcome": "client_gone"}); n != want {
			t.Errorf("toolgate_calls_total{tool_id=%s,outcome=client_gone} = %v, want %v", tool, n, want)
		}
		for _, o := range []string{"unreachable", "unknown", "invalid"} {
			if n := g.metric("toolgate_calls_total", map[string]string{"tool_id": tool, "outcome": o}); n != 0 {
				t.Errorf("toolgate_calls_total{tool_id=%s,outcome=%s} = %v, want 0", tool, o, n)
			}
		}
	}
	byKey := map[string][]string{}
	for _, d := range g.decisions() {
		key, _ := d["action_id"].(string)
		if d["tool_id"] == "orders.get_order" {
			key = "read-only"
		}
		byKey[key] = append(byKey[key], d["outcome"].(string)+" "+jsonNumber(d["status_code"]))
		if s, _ := d["status_code"].(float64); s >= 500 {
			t.Errorf("decision with a 5xx: %v", d)
		}
	}
	// Sorted: a handler whose caller left may write its line after a later
	// call's (the hung-up caller of gone-exec-0001 after its retry's).
	for key, want := range map[string]string{
		"gone-join-0001":   "client_gone 499|executed 201",
		"gone-ledger-0001": "client_gone 499|executed 201",
		"gone-exec-0001":   "executed 201|replayed 201",
		"read-only":        "client_gone 499",
	} {
		slices.Sort(byKey[key])
		if got := strings.Join(byKey[key], "|"); got != want {
			t.Errorf("decision log of %s: %s, want %s", key, got, want)
		}
	}
	goneLines := 0
	for _, l := range g.logLines() {
		if l["level"] == "ERROR" {
			t.Errorf("an ERROR log line: %v", l)
		}
		if l["msg"] == "client_gone" {
			goneLines++
			if l["level"] != "INFO" {
				t.Errorf("client_gone logged at %v", l["level"])
			}
		}
	}
	if goneLines != 3 {
		t.Errorf("%d client_gone log lines, want 3:\n%s", goneLines, g.logs.String())
	}
}

func jsonNumber(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// A store error that is not an outage (a table gone from under the store)
// is the gateway failing: 500 internal_error, logged at ERROR — not 503
// ledger_unavailable, which tells the caller to retry what will not pass.
func TestStoreErrorThatIsNoOutageIs500(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ledger.db")
	st, err := sqlite.Open(context.Background(), sqlite.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	g := newGoneRig(t, func(c *gatewaytest.Config) {
		c.Ledger = &ledger.Service{Store: st, Lease: 30 * time.Second, Owner: "test"}
	})
	g.refund("plain-err-0001", okArgs) // the store works
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(`ALTER TABLE action_rows RENAME TO action_rows_elsewhere`); err != nil {
		t.Fatal(err)
	}
	p := g.refund("plain-err-0002", okArgs).wantProblem(t, 500, "internal_error")
	if strings.Contains(p["detail"].(string), "action_rows") {
		t.Errorf("the detail names the store's internals: %v", p["detail"])
	}
	errorLines := 0
	for _, l := range g.logLines() {
		if l["level"] == "ERROR" && l["msg"] == "internal_error" {
			errorLines++
		}
	}
	if errorLines == 0 {
		t.Errorf("no ERROR line for the internal error:\n%s", g.logs.String())
	}
}

// An outage of the SQLite ledger (another process holds the write lock past
// the busy timeout) is 503 ledger_unavailable with Retry-After, and nothing
// was executed.
func TestSQLiteLockedPastBusyTimeoutIs503(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ledger.db")
	st, err := sqlite.Open(context.Background(), sqlite.Config{Path: path, BusyTimeout: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	g := newRig(t, func(c *gatewaytest.Config) {
		c.Ledger = &ledger.Service{Store: st, Lease: 30 * time.Second, Owner: "test"}
	})
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	conn, err := raw.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	r := g.refund("locked-0001", okArgs)
	r.wantProblem(t, 503, "ledger_unavailable")
	if r.header.Get("Retry-After") == "" {
		t.Error("no Retry-After")
	}
	if _, err := conn.ExecContext(context.Background(), "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	g.wantEffects(0)
	if r := g.refund("locked-0001", okArgs); r.status != 201 {
		t.Fatalf("after the lock: %d %s", r.status, r.body)
	}
}

// An operator request whose caller went away under a ledger call is
// answered nothing and logged at INFO, not 503 at ERROR.
func TestOperatorRequestWhoseCallerLeftIsNoServerError(t *testing.T) {
	t.Parallel()
	g := newGoneRig(t)
	g.refund("gone-list-0001", okArgs)
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	for _, path := range []string{"/v1/actions", "/v1/actions/gone-list-0001"} {
		req := httptest.NewRequestWithContext(gone, "GET", path, nil)
		req.Host = "127.0.0.1"
		rec := httptest.NewRecorder()
		g.server.ServeHTTP(rec, req)
		if rec.Body.Len() != 0 {
			t.Errorf("GET %s for a caller that went away: answered %d %s", path, rec.Code, rec.Body)
		}
	}
	gone2 := 0
	for _, l := range g.logLines() {
		if l["level"] == "ERROR" {
			t.Errorf("an ERROR log line: %v", l)
		}
		if l["msg"] == "client_gone" && l["level"] == "INFO" {
			gone2++
		}
	}
	if gone2 != 2 {
		t.Errorf("%d INFO client_gone lines, want 2:\n%s", gone2, g.logs.String())
	}
}
