package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/examples"
	"github.com/toolgate/toolgate/gate"
	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/gateway/gatewaytest"
	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/internal/testrig"
	"github.com/toolgate/toolgate/invoke"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/ledger/postgres"
)

// A fleet is several gateway replicas on one PostgreSQL schema, each with
// its own store, ledger service and reconciler, in front of one recording
// downstream, sharing an injectable clock: what a deployment with a load
// balancer looks like, tested over HTTP.

// The fleet's bearer keys.
const (
	fleetCS     = "fleet-cs-agent-key"
	fleetOps    = "fleet-ops-agent-key"
	fleetOncall = "fleet-oncall-key"
)

// fleetInterval is the fleet's reconcile interval: a change made through
// one replica serves on every other within it.
const fleetInterval = 100 * time.Millisecond

type clock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.offset += d
	c.mu.Unlock()
}

type fleet struct {
	t        testing.TB
	urls     []string
	servers  []*gatewaytest.Server
	svcs     []*ledger.Service // each replica's ledger service
	clock    *clock
	ds       *fleetDownstream
	reg      *contract.Registry
	dsn      string
	approved []gate.Approval
	mu       sync.Mutex
	logs     *testrig.Buffer // every replica's operational log
}

type fleetOption struct {
	deprecatedAt func(toolID, version string) (time.Time, bool)
	noTicks      bool
}

// rolloutTools writes the bundled examples plus notes.create (versions 0.9.0,
// deprecated with a 30-day window, 1.0.0 and 1.1.0, which adds an optional
// argument) and vault.put (1.0.0 and 1.1.0, which constrains its x-sensitive
// arguments) into a directory and loads it.
func rolloutTools(t testing.TB) *contract.Registry {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, examples.AgentTools()); err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"notes.create", "vault.put"} {
		if err := os.CopyFS(filepath.Join(dir, tool), os.DirFS("testdata/rollout-tools/"+tool)); err != nil {
			t.Fatal(err)
		}
	}
	reg, err := contract.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

func newFleet(t testing.TB, n int, opt fleetOption) *fleet {
	t.Helper()
	dsn, _ := pgtest.Schema(t)
	f := &fleet{t: t, clock: &clock{}, ds: newFleetDownstream(t), reg: rolloutTools(t), dsn: dsn, logs: &testrig.Buffer{}}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the replicas' log:\n%s", f.logs.String())
		}
	})
	key := func(token, name, role string) gateway.Key {
		return gateway.Key{Name: name, SHA256Hex: config.HashKey(token), Tenant: "acme", Role: role, Tools: []string{"*"}}
	}
	keys := []gateway.Key{key(fleetCS, "cs-agent", "agent"), key(fleetOps, "ops-agent", "agent"), key(fleetOncall, "oncall", "operator")}
	bind := invoke.Binding{URL: f.ds.url + "/do", LookupURL: f.ds.url + "/by-key/{downstream_key}", Timeout: 5 * time.Second}
	for i := range n {
		st, err := postgres.Open(context.Background(), postgres.Config{DSN: dsn, MaxConns: 6})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		svc := &ledger.Service{Store: st, Owner: fmt.Sprintf("replica-%d", i), Now: f.clock.Now}
		srv, err := gatewaytest.New(gatewaytest.Config{
			Registry: f.reg, Ledger: svc, Invoker: &invoke.Client{},
			Bindings:    map[string]invoke.Binding{"notes.create": bind, "refund.create_request": bind, "vault.put": bind},
			JoinTimeout: 5 * time.Second, Keys: keys,
			Logger:       slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
			DeprecatedAt: opt.deprecatedAt,
			Approvals: func() ([]gate.Approval, error) {
				f.mu.Lock()
				defer f.mu.Unlock()
				return append([]gate.Approval(nil), f.approved...), nil
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(contractChecked(t, srv))
		t.Cleanup(ts.Close)
		if !opt.noTicks {
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); srv.Calls().Reconciler(fleetInterval).Run(ctx) }()
			t.Cleanup(func() { cancel(); <-done })
		}
		f.urls = append(f.urls, ts.URL)
		f.servers = append(f.servers, srv)
		f.svcs = append(f.svcs, svc)
	}
	return f
}

// approve records an approvals/ file for tool@version, as deployed.
func (f *fleet) approve(tool, version string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.approved = append(f.approved, gate.Approval{Approver: "jane.doe", Tool: tool, Version: version,
		ApprovedAt: time.Now().Add(-time.Hour), Source: "approvals/" + tool + "-" + version + ".yaml"})
}

// do sends a request to replica i with a bearer key.
func (f *fleet) do(i int, key, method, path, body string, headers ...string) reply {
	f.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, f.urls[i]+path, rd)
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	for j := 0; j+1 < len(headers); j += 2 {
		req.Header.Set(headers[j], headers[j+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: b}
}

// call sends a one-shot call of tool to replica i.
func (f *fleet) call(i int, key, tool, idem, body string) reply {
	f.t.Helper()
	return f.do(i, key, "POST", "/v1/tools/"+tool+"/calls", body, "Idempotency-Key", idem)
}

// transition posts a rollout transition to replica i and wants 200.
func (f *fleet) transition(i int, tool, action, body string) api.Rollout {
	f.t.Helper()
	r := f.do(i, fleetOncall, "POST", "/v1/rollouts/"+tool+"/"+action, body)
	if r.status != 200 {
		f.t.Fatalf("%s %s: %d %s", action, tool, r.status, r.body)
	}
	var st api.Rollout
	if err := json.Unmarshal(r.body, &st); err != nil {
		f.t.Fatal(err)
	}
	return st
}

// status reads a tool's rollout through replica i.
func (f *fleet) status(i int, tool string) api.Rollout {
	f.t.Helper()
	r := f.do(i, fleetOncall, "GET", "/v1/rollouts/"+tool, "")
	if r.status != 200 {
		f.t.Fatalf("status %s: %d %s", tool, r.status, r.body)
	}
	var st api.Rollout
	if err := json.Unmarshal(r.body, &st); err != nil {
		f.t.Fatal(err)
	}
	return st
}

// actionVersion reads the version an action bound, through replica i.
func (f *fleet) actionVersion(i int, id string) string {
	f.t.Helper()
	r := f.do(i, fleetOncall, "GET", "/v1/actions/"+id, "")
	if r.status != 200 {
		f.t.Fatalf("GET action %s: %d %s", id, r.status, r.body)
	}
	var a api.Action
	if err := json.Unmarshal(r.body, &a); err != nil {
		f.t.Fatal(err)
	}
	return a.Version
}

// fleetDownstream is the fleet's downstream: it answers 201 with a receipt, counts
// the requests per downstream key, holds a request whose body asks for
// "slow" until release (to make joins: a duplicate must be seen waiting
// before the first call can finish), and answers one whose body asks to
// "lose" 500 after taking its effect (an unknown outcome). Its lookup
// GET /by-key/{key} answers 200 with the receipt of a key it took, else 404.
type fleetDownstream struct {
	url      string
	mu       sync.Mutex
	keys     map[string]int
	slow     chan struct{} // closed by release
	released sync.Once
}

func newFleetDownstream(t testing.TB) *fleetDownstream {
	d := &fleetDownstream{keys: map[string]int{}, slow: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if key, ok := strings.CutPrefix(r.URL.Path, "/by-key/"); ok && r.Method == "GET" {
			d.mu.Lock()
			n := d.keys[key]
			d.mu.Unlock()
			if n == 0 {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"receipt":%q}`, key)
			return
		}
		body, _ := io.ReadAll(r.Body)
		d.mu.Lock()
		d.keys[r.Header.Get("Idempotency-Key")]++
		d.mu.Unlock()
		if strings.Contains(string(body), "slow") {
			<-d.slow
		}
		if strings.Contains(string(body), "lose") {
			http.Error(w, "lost", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"receipt":%q}`, r.Header.Get("Idempotency-Key"))
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(d.release) // before the server closes: nothing stays held
	d.url = srv.URL
	return d
}

// release lets the held "slow" requests, and every later one, through.
func (d *fleetDownstream) release() { d.released.Do(func() { close(d.slow) }) }

// sent is how many requests the downstream got under an action's key.
func (d *fleetDownstream) sent(tenant, action string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.keys[tenant+":"+action]
}
