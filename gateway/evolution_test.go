package gateway_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/gate"
	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/gateway/gatewaytest"
	"github.com/toolgate/toolgate/internal/longtest"
	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/internal/testrig"
	"github.com/toolgate/toolgate/invoke"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/ledger/postgres"
	"github.com/toolgate/toolgate/ledger/sqlite"
	"github.com/toolgate/toolgate/lockfile"
	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/rollout"
	"github.com/toolgate/toolgate/toolcall"
)

// Issue 27's walk: what an agent is handed is what serves. A tool evo.order
// is released at 1.0.0 and 1.1.0 (toolgate.lock); an unreleased, breaking
// 2.0.0 (a new required argument) appears and the directory reloads, then
// the gateway restarts; the operator shadows, canaries, promotes and rolls
// back 2.0.0, then deprecates 1.0.0. At every step, on every replica and as
// each of several principals, the OpenAI, Anthropic and MCP definitions are
// fetched, a call is built from exactly what was handed and sent through
// that door, and it must succeed on the version advertised; a call built
// from the other version's schema gets its 422.

const evoTool = "evo.order"

// The default run walks two random sequences of 8 steps (besides the
// regression walks); the long run (TOOLGATE_LONG=1) twenty of 15.
var (
	evoN     = flag.Int("evo.n", longOr(2, 20), "random step sequences TestEvolutionProperty walks")
	evoSteps = flag.Int("evo.steps", longOr(8, 15), "steps of each sequence of TestEvolutionProperty")
	evoSeed  = flag.Uint64("evo.seed", 0, "seed of TestEvolutionProperty (0: from the clock)")
)

// longOr is bounded, or long with TOOLGATE_LONG=1.
func longOr(bounded, long int) int {
	if longtest.Enabled() {
		return long
	}
	return bounded
}

// The schemas: 1.1.0 adds an optional gift; 2.0.0 requires a channel.
var evoVersions = map[string]string{
	"1.0.0": `"properties":{"item":{"type":"string"},"qty":{"type":"integer","minimum":1}},"required":["item","qty"]`,
	"1.1.0": `"properties":{"item":{"type":"string"},"qty":{"type":"integer","minimum":1},"gift":{"type":"boolean"}},"required":["item","qty"]`,
	"2.0.0": `"properties":{"item":{"type":"string"},"qty":{"type":"integer","minimum":1},"gift":{"type":"boolean"},"channel":{"type":"string","enum":["web","phone"]}},"required":["item","qty","channel"]`,
}

func evoSchemaFile(v string) string {
	return `{"tool_id":"evo.order","version":"` + v + `","name":"order","description":"Place an order.","effect":"mutating",
"parameters":{"type":"object","additionalProperties":false,` + evoVersions[v] + `},"result":{"type":"object"}}`
}

// evoPrincipals are the agents' key names; beta-agent is the canary's named
// principal.
var evoPrincipals = []string{"cs-agent", "ops-agent", "beta-agent", "agent-04", "agent-05", "agent-06", "agent-07"}

func evoToken(name string) string { return "evo-key-" + name }

// evoDeploy is one deployment: replicas on one ledger database, one tools
// directory, one downstream.
type evoDeploy struct {
	t      testing.TB
	kind   string // "postgres" or "sqlite"
	dsn    string // postgres
	path   string // sqlite
	dir    string // the tools directory
	n      int
	ds     *fleetDownstream
	clock  *clock
	logs   *testrig.Buffer
	reps   []*evoReplica
	seq    int
	mu     sync.Mutex
	policy string // release-policy.yaml
}

type evoReplica struct {
	srv    *gatewaytest.Server
	ts     *httptest.Server
	store  ledger.Store
	cancel func()
}

func newEvoDeploy(t testing.TB, kind string, n int) *evoDeploy {
	t.Helper()
	d := &evoDeploy{t: t, kind: kind, n: n, dir: t.TempDir(), ds: newFleetDownstream(t), clock: &clock{}, logs: &testrig.Buffer{}}
	switch kind {
	case "postgres":
		d.dsn, _ = pgtest.Schema(t)
	default:
		d.path = filepath.Join(t.TempDir(), "ledger.db")
	}
	d.policy = "compatible_with: [\"1.x\"]\ndeprecated_versions: []\ndeprecation_window_days: 1\n"
	d.write("owner.yaml", "owner: evo-tests\nrisk_level: low\nconsumers: [cs-agent]\n")
	d.write("release-policy.yaml", d.policy)
	d.write("schemas/v1.0.0.json", evoSchemaFile("1.0.0"))
	d.write("schemas/v1.1.0.json", evoSchemaFile("1.1.0"))
	d.lock()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the replicas' log:\n%s", d.logs.String())
		}
		d.stop()
	})
	d.start()
	return d
}

func (d *evoDeploy) write(name, body string) {
	d.t.Helper()
	p := filepath.Join(d.dir, evoTool, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		d.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		d.t.Fatal(err)
	}
}

// lock releases every version of the directory (toolgate lock).
func (d *evoDeploy) lock() {
	d.t.Helper()
	reg, err := contract.Load(d.dir)
	if err != nil {
		d.t.Fatal(err)
	}
	prev, err := lockfile.Read(d.dir)
	if err != nil {
		d.t.Fatal(err)
	}
	l, err := lockfile.Build(reg, prev, lockfile.BuildOptions{})
	if err != nil {
		d.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d.dir, lockfile.FileName), l.Marshal(), 0o644); err != nil {
		d.t.Fatal(err)
	}
}

// tools loads the directory as serve does: the registry and what the lock
// says of its versions.
func (d *evoDeploy) tools() toolcall.Tools {
	d.t.Helper()
	reg, err := contract.Load(d.dir)
	if err != nil {
		d.t.Fatal(err)
	}
	l, err := lockfile.Read(d.dir)
	if err != nil {
		d.t.Fatal(err)
	}
	out := toolcall.Tools{Registry: reg}
	if l != nil {
		out.Released = func(tool, v string) bool { return l.Find(tool, v) != nil }
		out.DeprecatedAt = func(tool, v string) (time.Time, bool) {
			if e := l.Find(tool, v); e != nil && e.DeprecatedAt != nil {
				return *e.DeprecatedAt, true
			}
			return time.Time{}, false
		}
	}
	return out
}

// start starts the replicas (again, after stop: a restart).
func (d *evoDeploy) start() {
	d.t.Helper()
	var keys []gateway.Key
	for _, p := range evoPrincipals {
		keys = append(keys, gateway.Key{Name: p, SHA256Hex: config.HashKey(evoToken(p)), Tenant: "acme", Role: "agent", Tools: []string{"*"}})
	}
	keys = append(keys, gateway.Key{Name: "oncall", SHA256Hex: config.HashKey(fleetOncall), Tenant: "acme", Role: "operator", Tools: []string{"*"}})
	bind := invoke.Binding{URL: d.ds.url + "/do", LookupURL: d.ds.url + "/by-key/{downstream_key}", Timeout: 5 * time.Second}
	tools := d.tools()
	d.reps = nil
	for i := range d.n {
		var st ledger.Store
		var err error
		if d.kind == "postgres" {
			st, err = postgres.Open(context.Background(), postgres.Config{DSN: d.dsn, MaxConns: 4})
		} else {
			st, err = sqlite.Open(context.Background(), sqlite.Config{Path: d.path})
		}
		if err != nil {
			d.t.Fatal(err)
		}
		svc := &ledger.Service{Store: st, Owner: fmt.Sprintf("evo-%d", i), Now: d.clock.Now}
		srv, err := gatewaytest.New(gatewaytest.Config{
			Registry: tools.Registry, Released: tools.Released, DeprecatedAt: tools.DeprecatedAt,
			Ledger: svc, Invoker: &invoke.Client{}, Bindings: map[string]invoke.Binding{evoTool: bind},
			JoinTimeout: 5 * time.Second, Keys: keys,
			Logger: slog.New(slog.NewTextHandler(d.logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
			Approvals: func() ([]gate.Approval, error) {
				// approvals/ as deployed: 2.0.0 was signed off.
				return []gate.Approval{{Approver: "payments-lead", Tool: evoTool, Version: "2.0.0", ApprovedAt: time.Now().Add(-time.Hour), Source: "approvals/evo-2.0.0.yaml"}}, nil
			},
		})
		if err != nil {
			d.t.Fatal(err)
		}
		ts := httptest.NewServer(srv)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); srv.Calls().Reconciler(fleetInterval).Run(ctx) }()
		d.reps = append(d.reps, &evoReplica{srv: srv, ts: ts, store: st, cancel: func() { cancel(); <-done }})
	}
}

func (d *evoDeploy) stop() {
	for _, r := range d.reps {
		r.ts.Close()
		r.cancel()
		r.store.Close()
	}
	d.reps = nil
}

// reload reloads the tools directory on every replica (SIGHUP or the poll).
func (d *evoDeploy) reload() {
	d.t.Helper()
	for _, r := range d.reps {
		if err := r.srv.Reload(d.tools()); err != nil {
			d.t.Fatal(err)
		}
	}
}

func (d *evoDeploy) do(i int, key, method, path, body string, headers ...string) reply {
	d.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, d.reps[i].ts.URL+path, rd)
	if err != nil {
		d.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	for j := 0; j+1 < len(headers); j += 2 {
		req.Header.Set(headers[j], headers[j+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		d.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, header: resp.Header, body: b}
}

// transition posts a rollout transition and returns the reply.
func (d *evoDeploy) transition(action, body string) reply {
	d.t.Helper()
	return d.do(d.pick(), fleetOncall, "POST", "/v1/rollouts/"+evoTool+"/"+action, body)
}

func (d *evoDeploy) pick() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.seq++
	return d.seq % len(d.reps)
}

func (d *evoDeploy) key() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.seq++
	return fmt.Sprintf("evo-action-%06d", d.seq)
}

func (d *evoDeploy) status() api.Rollout {
	d.t.Helper()
	r := d.do(0, fleetOncall, "GET", "/v1/rollouts/"+evoTool, "")
	var st api.Rollout
	if r.status != 200 || json.Unmarshal(r.body, &st) != nil {
		d.t.Fatalf("status: %d %s", r.status, r.body)
	}
	return st
}

// versionOf tells the version a parameters schema describes.
func versionOf(params map[string]any) string {
	props, _ := params["properties"].(map[string]any)
	switch {
	case props["channel"] != nil:
		return "2.0.0"
	case props["gift"] != nil:
		return "1.1.0"
	}
	return "1.0.0"
}

// argsFrom builds arguments from exactly the schema handed: every property
// it lists, each with a value its schema takes.
func argsFrom(params map[string]any) map[string]any {
	props, _ := params["properties"].(map[string]any)
	out := map[string]any{}
	for name, raw := range props {
		s, _ := raw.(map[string]any)
		switch {
		case s["enum"] != nil:
			out[name] = s["enum"].([]any)[0]
		case name == "qty":
			out[name] = 2
		case name == "gift":
			out[name] = false
		default:
			out[name] = "widget"
		}
	}
	return out
}

// handed is what one door gave one principal.
type handed struct {
	door, name, version string
	params              map[string]any
}

func (d *evoDeploy) export(i int, who, format string) handed {
	d.t.Helper()
	r := d.do(i, evoToken(who), "GET", "/v1/export?format="+format, "")
	var x provider.Exported
	if r.status != 200 || json.Unmarshal(r.body, &x) != nil {
		d.t.Fatalf("export %s as %s: %d %s", format, who, r.status, r.body)
	}
	for _, def := range x.Tools {
		var m map[string]any
		json.Unmarshal(def, &m)
		name, params := "", map[string]any(nil)
		switch format {
		case provider.FormatOpenAI:
			fn, _ := m["function"].(map[string]any)
			name, _ = fn["name"].(string)
			params, _ = fn["parameters"].(map[string]any)
		case provider.FormatAnthropic:
			name, _ = m["name"].(string)
			params, _ = m["input_schema"].(map[string]any)
		}
		if x.Names[name] == evoTool {
			h := handed{door: format, name: name, version: versionOf(params), params: params}
			if x.Versions[evoTool] != h.version {
				d.t.Fatalf("export %s as %s says version %s but hands %s's schema", format, who, x.Versions[evoTool], h.version)
			}
			return h
		}
	}
	d.t.Fatalf("export %s as %s has no %s: %s", format, who, evoTool, r.body)
	return handed{}
}

func (d *evoDeploy) mcpSession(i int, who string) *mcp.ClientSession {
	d.t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "evo-test", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: d.reps[i].ts.URL + "/mcp", HTTPClient: &http.Client{Transport: bearerTransport{evoToken(who)}}}, nil)
	if err != nil {
		d.t.Fatal(err)
	}
	return cs
}

func (d *evoDeploy) mcpHanded(cs *mcp.ClientSession) handed {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		d.t.Fatal(err)
	}
	for _, tl := range res.Tools {
		b, _ := json.Marshal(tl.InputSchema)
		var params map[string]any
		json.Unmarshal(b, &params)
		if strings.Contains(tl.Name, "evo") {
			return handed{door: "mcp", name: tl.Name, version: versionOf(params), params: params}
		}
	}
	d.t.Fatalf("MCP tools/list has no %s", evoTool)
	return handed{}
}

// served sends a call built from h through h's door on replica i and
// returns the version that served it (its action's).
func (d *evoDeploy) served(i int, who string, h handed, cs *mcp.ClientSession) string {
	d.t.Helper()
	args := argsFrom(h.params)
	raw, _ := json.Marshal(args)
	key := d.key()
	var actionID string
	switch h.door {
	case provider.FormatOpenAI:
		body := mustJSON(d.t.(*testing.T), chatToolCall(d.t.(*testing.T), "call_"+key, h.name, string(raw)).ToParam())
		r := d.do(i, evoToken(who), "POST", "/v1/calls/openai", body, "Idempotency-Key", key)
		if r.status != 200 || r.header.Get("Toolgate-Call-Status") != "201" {
			d.t.Fatalf("OpenAI call as %s from the %s schema: %d %s %s", who, h.version, r.status, r.header.Get("Toolgate-Call-Status"), r.body)
		}
		actionID = r.header.Get("Toolgate-Action-Id")
	case provider.FormatAnthropic:
		body := mustJSON(d.t.(*testing.T), anthropicToolUse(d.t.(*testing.T), "toolu_"+key, h.name, string(raw)).ToParam())
		r := d.do(i, evoToken(who), "POST", "/v1/calls/anthropic", body, "Idempotency-Key", key)
		if r.status != 200 || r.header.Get("Toolgate-Call-Status") != "201" {
			d.t.Fatalf("Anthropic call as %s from the %s schema: %d %s %s", who, h.version, r.status, r.header.Get("Toolgate-Call-Status"), r.body)
		}
		actionID = r.header.Get("Toolgate-Action-Id")
	default:
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: h.name, Arguments: json.RawMessage(raw), Meta: mcp.Meta{gateway.MCPKeyMeta: key}})
		if err != nil || res.IsError {
			d.t.Fatalf("MCP call as %s from the %s schema: %v %s", who, h.version, err, resultText(res))
		}
		actionID, _ = res.Meta["toolgate/action_id"].(string)
	}
	r := d.do(i, fleetOncall, "GET", "/v1/actions/"+actionID, "")
	var a api.Action
	if r.status != 200 || json.Unmarshal(r.body, &a) != nil {
		d.t.Fatalf("GET action %q: %d %s", actionID, r.status, r.body)
	}
	return a.Version
}

// otherRefused sends, as who, a call built from the other side of the
// breaking change and wants its 422.
func (d *evoDeploy) otherRefused(i int, who, advertised string) {
	d.t.Helper()
	other := evoVersions["2.0.0"]
	if advertised == "2.0.0" {
		other = evoVersions["1.1.0"]
	}
	var params map[string]any
	json.Unmarshal([]byte("{"+other+"}"), &params)
	raw, _ := json.Marshal(map[string]any{"arguments": argsFrom(params)})
	r := d.do(i, evoToken(who), "POST", "/v1/tools/"+evoTool+"/calls", string(raw), "Idempotency-Key", d.key())
	p := r.wantProblem(d.t, 422, "invalid_arguments")
	want := "additionalProperties"
	if advertised == "2.0.0" {
		want = "required"
	}
	if !strings.Contains(fmt.Sprint(p["errors"]), want) {
		d.t.Fatalf("a call from the other schema as %s: %s, want %s", who, r.body, want)
	}
}

// check fetches every door's definition as every principal on every
// replica, calls through each, and wants want(principal) to serve.
func (d *evoDeploy) check(step string, want func(who string) string) {
	d.t.Helper()
	for i := range d.reps {
		for _, who := range evoPrincipals {
			cs := d.mcpSession(i, who)
			hs := []handed{d.export(i, who, provider.FormatOpenAI), d.export(i, who, provider.FormatAnthropic), d.mcpHanded(cs)}
			for _, h := range hs {
				if h.version != want(who) {
					cs.Close()
					d.t.Fatalf("%s: replica %d hands %s %s through %s, want %s", step, i, who, h.version, h.door, want(who))
				}
				if got := d.served(i, who, h, cs); got != h.version {
					cs.Close()
					d.t.Fatalf("%s: replica %d handed %s %s through %s, but %s served", step, i, who, h.version, h.door, got)
				}
			}
			cs.Close()
			d.otherRefused(i, who, want(who))
		}
	}
}

// settle waits until every replica advertises want to every principal.
func (d *evoDeploy) settle(step string, want func(who string) string) {
	d.t.Helper()
	waitFor(d.t, step+": every replica's doors", func() bool {
		for i := range d.reps {
			for _, who := range evoPrincipals {
				if d.export(i, who, provider.FormatOpenAI).version != want(who) {
					return false
				}
			}
		}
		return true
	})
}

func all(v string) func(string) string { return func(string) string { return v } }

// inCanary is who a canary of bp basis points with named principals takes.
func inCanary(bp int, named []string, cand, def string) func(string) string {
	return func(who string) string {
		if slices.Contains(named, who) || rollout.Bucket(evoTool, "acme", who) < bp {
			return cand
		}
		return def
	}
}

func TestEvolutionWalk(t *testing.T) {
	t.Parallel()
	for _, dep := range []struct {
		kind string
		n    int
	}{{"postgres", 2}, {"sqlite", 1}} {
		t.Run(dep.kind, func(t *testing.T) {
			t.Parallel()
			d := newEvoDeploy(t, dep.kind, dep.n)
			d.check("released 1.0.0 and 1.1.0", all("1.1.0"))
			// An action bound before the change keeps its version through
			// reloads, restarts and promotions.
			sticky := `{"arguments":{"item":"widget","qty":3}}`
			if r := d.do(0, evoToken("cs-agent"), "POST", "/v1/tools/"+evoTool+"/calls", sticky, "Idempotency-Key", "evo-sticky-0001"); r.status != 201 {
				t.Fatalf("the sticky action: %d %s", r.status, r.body)
			}
			stuck := func(step string) {
				t.Helper()
				for i := range d.reps {
					r := d.do(i, evoToken("cs-agent"), "POST", "/v1/tools/"+evoTool+"/calls", sticky, "Idempotency-Key", "evo-sticky-0001")
					if r.status != 201 || r.header.Get("Idempotent-Replayed") != "true" {
						t.Fatalf("%s: a retry of the action bound at 1.1.0: %d %s", step, r.status, r.body)
					}
					var a api.Action
					json.Unmarshal(d.do(i, fleetOncall, "GET", "/v1/actions/evo-sticky-0001", "").body, &a)
					if a.Version != "1.1.0" {
						t.Fatalf("%s: the action bound at 1.1.0 is now at %s", step, a.Version)
					}
				}
			}

			// An unreleased, breaking 2.0.0 appears; the directory reloads.
			d.write("schemas/v2.0.0.json", evoSchemaFile("2.0.0"))
			d.reload()
			if st := d.status(); st.Default != "1.1.0" || st.DefaultSource != "registry" || len(st.Versions) != 3 {
				t.Fatalf("after the reload: %+v", st)
			}
			d.check("2.0.0 reloaded, not released", all("1.1.0"))
			d.stop()
			d.start()
			d.check("2.0.0 after a restart, not released", all("1.1.0"))
			stuck("after the reload and the restart")

			if r := d.transition("shadow", `{"version":"2.0.0"}`); r.status != 200 {
				t.Fatalf("shadow: %d %s", r.status, r.body)
			}
			d.check("shadow", all("1.1.0"))
			st := d.status()
			if st.Shadow == nil || st.Shadow.WouldFail == 0 || st.Shadow.Failures[0].Cause != "Missing channel" {
				t.Fatalf("shadow report: %+v", st.Shadow)
			}

			if r := d.transition("canary", `{"percent":20,"principals":["beta-agent"]}`); r.status != 200 {
				t.Fatalf("canary: %d %s", r.status, r.body)
			}
			canary := inCanary(2000, []string{"beta-agent"}, "2.0.0", "1.1.0")
			d.settle("canary", canary)
			d.check("canary 20%", canary)

			r := d.transition("promote", `{"approver":"ciso-alice"}`)
			if r.status != 200 {
				t.Fatalf("promote: %d %s", r.status, r.body)
			}
			if st := d.status(); st.History[0].Approver != "payments-lead" || st.History[0].ApprovalSource != "approvals/evo-2.0.0.yaml" {
				t.Fatalf("the promotion's approval is the file's, not the body's: %+v", st.History[0])
			}
			d.settle("promote", all("2.0.0"))
			d.check("promote", all("2.0.0"))
			stuck("after the promotion of 2.0.0")

			if r := d.transition("rollback", `{"version":"1.1.0"}`); r.status != 200 {
				t.Fatalf("rollback: %d %s", r.status, r.body)
			}
			d.settle("rollback", all("1.1.0"))
			d.check("rollback", all("1.1.0"))

			// Deprecate 1.0.0 with a 1-day window: what is advertised does
			// not move, a call naming 1.0.0 is marked, then refused.
			d.write("release-policy.yaml", strings.Replace(d.policy, "deprecated_versions: []", `deprecated_versions: ["1.0.x"]`, 1))
			d.reload()
			d.check("1.0.0 deprecated", all("1.1.0"))
			old := `{"version":"1.0.0","arguments":{"item":"widget","qty":1}}`
			if r := d.do(0, evoToken("cs-agent"), "POST", "/v1/tools/"+evoTool+"/calls", old, "Idempotency-Key", d.key()); r.status != 201 || r.header.Get("Deprecation") == "" {
				t.Fatalf("a call naming the deprecated 1.0.0: %d %v %s", r.status, r.header, r.body)
			}
			// Until a tick stores the stamp in the rollout record, the status
			// dates the window from when the gateway first saw the
			// deprecation; the stored stamp is the tick's time. Moving the
			// clock before it is stored would start the window at the moved
			// time: wait for the stored stamp (its history entry).
			waitFor(t, "the deprecation's stamp", func() bool {
				st := d.status()
				stamped := false
				for _, ev := range st.History {
					stamped = stamped || ev.Action == rollout.ActDeprecated
				}
				for _, v := range st.Versions {
					if v.Version == "1.0.0" && v.DeprecatedAt != nil {
						return stamped
					}
				}
				return false
			})
			d.clock.advance(2 * rollout.Day)
			// The stamp is read above from the ledger; the call path reads
			// the rollout record it holds, which follows within a tick.
			var retired reply
			waitFor(t, "the retirement of 1.0.0 on the call path", func() bool {
				retired = d.do(0, evoToken("cs-agent"), "POST", "/v1/tools/"+evoTool+"/calls", old, "Idempotency-Key", d.key())
				return retired.status != 201
			})
			retired.wantProblem(t, 410, "version_retired")
			d.check("1.0.0 retired", all("1.1.0"))
		})
	}
}

// evoModel is what the walk expects of the rollout.
type evoModel struct {
	def, prev, cand, mode string // mode: stable, shadow, canary, halted
	pinned                bool
	bp                    int
	named                 []string
	released              []string // what the lock releases

	// rolledBack: the last change of the default was a rollback; a
	// rollback does not undo it (a promote of another version does).
	rolledBack bool
}

func (m *evoModel) want() func(string) string {
	if m.mode == "canary" {
		return inCanary(m.bp, m.named, m.cand, m.def)
	}
	return all(m.def)
}

// TestEvolutionProperty walks random sequences of pin, shadow, canary,
// halt, promote, rollback, reload (with a release of 2.0.0) and restart
// over two replicas (PostgreSQL, or one on SQLite without it) and checks
// after every step that each door hands each principal the version a model
// of the rollout expects and that the call built from it serves there.
// TOOLGATE_LONG=1 (or -evo.n 20 -evo.steps 15) walks more.
func TestEvolutionProperty(t *testing.T) {
	t.Parallel()
	seed := *evoSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (-evo.seed)", seed)
	r := rand.New(rand.NewPCG(seed, 27))
	kind, n := "sqlite", 1
	if os.Getenv("TOOLGATE_TEST_POSTGRES") != "" {
		kind, n = "postgres", 2
	}
	// walk takes steps steps, each named by next (drawn between the steps,
	// so that a seed walks as it always did).
	walk := func(t *testing.T, r *rand.Rand, steps int, next func(i int) string) {
		d := newEvoDeploy(t, kind, n)
		d.write("schemas/v2.0.0.json", evoSchemaFile("2.0.0"))
		d.reload()
		m := &evoModel{def: "1.1.0", mode: "stable", released: []string{"1.0.0", "1.1.0"}}
		var trail []string
		for i := range steps {
			step := next(i)
			trail = append(trail, step)
			d.step(t, r, m, step, trail)
			d.settle(strings.Join(trail, " → "), m.want())
			d.check(strings.Join(trail, " → "), m.want())
		}
	}
	// Walks that failed once, replayed first: their steps are fixed, the
	// choices within a step (versions, shares) come from their seed.
	for i, reg := range evoRegressions {
		t.Run(fmt.Sprint("regression/", i), func(t *testing.T) {
			walk(t, rand.New(rand.NewPCG(reg.seed, 27)), len(reg.steps), func(i int) string { return reg.steps[i] })
		})
	}
	for s := range *evoN {
		t.Run(fmt.Sprint(s), func(t *testing.T) {
			walk(t, r, *evoSteps, func(int) string {
				return []string{"pin", "shadow", "canary", "halt", "promote", "rollback", "reload", "restart"}[r.IntN(8)]
			})
		})
	}
}

// evoRegressions are walks of TestEvolutionProperty that once failed.
var evoRegressions = []struct {
	seed  uint64
	steps []string
}{
	// The model let a second rollback undo the first; the rollout
	// (rightly) refuses it: a rollback does not undo a rollback.
	{1796334872238299124, strings.Fields("canary restart promote halt rollback reload rollback")},
}

// step applies one step to the deployment and the model.
func (d *evoDeploy) step(t *testing.T, r *rand.Rand, m *evoModel, step string, trail []string) {
	t.Helper()
	versions := []string{"1.0.0", "1.1.0", "2.0.0"}
	other := func() string {
		for {
			if v := versions[r.IntN(3)]; v != m.def {
				return v
			}
		}
	}
	expect := func(rep reply, ok bool) {
		t.Helper()
		if ok && rep.status != 200 || !ok && rep.status != 409 {
			t.Fatalf("%s: %d %s (model %+v)", strings.Join(trail, " → "), rep.status, rep.body, *m)
		}
	}
	candidateOn := m.mode == "shadow" || m.mode == "canary"
	switch step {
	case "pin":
		// A running candidate must be halted first, unless it is the
		// default itself (a reload released it): then the pin promotes it.
		ok := !m.pinned && (!candidateOn || m.cand == m.def)
		expect(d.transition("promote", `{"version":"`+m.def+`"}`), ok)
		if ok {
			m.pinned = true
			m.cand, m.mode, m.bp, m.named = "", "stable", 0, nil
		}
	case "shadow":
		v := other()
		expect(d.transition("shadow", `{"version":"`+v+`"}`), true)
		m.cand, m.mode, m.bp, m.named = v, "shadow", 0, nil
	case "canary":
		v := m.cand
		if !candidateOn || m.cand == m.def { // a canary of the default is refused
			v = other()
		}
		bp := []int{0, 2000, 5000}[r.IntN(3)]
		named := []string{"beta-agent"}
		if bp > 0 && r.IntN(2) == 0 {
			named = nil
		}
		body, _ := json.Marshal(map[string]any{"version": v, "percent": float64(bp) / 100, "principals": named})
		expect(d.transition("canary", string(body)), true)
		m.cand, m.mode, m.bp, m.named = v, "canary", bp, named
	case "halt":
		expect(d.transition("halt", `{}`), candidateOn)
		if candidateOn {
			m.mode = "halted"
		}
	case "promote":
		v := m.cand
		if !candidateOn {
			v = other()
		}
		expect(d.transition("promote", `{"version":"`+v+`","approver":"prop-test"}`), true)
		if v != m.def { // promoting the default itself pins it: no previous default
			m.prev, m.def = m.def, v
			m.rolledBack = false
		}
		m.pinned = true
		m.cand, m.mode, m.bp, m.named = "", "stable", 0, nil
	case "rollback":
		ok := m.prev != "" && !m.rolledBack
		expect(d.transition("rollback", `{}`), ok)
		if ok {
			m.prev, m.def = m.def, m.prev
			m.rolledBack = true
			m.cand, m.mode, m.bp, m.named = "", "stable", 0, nil
		}
	case "reload":
		// A deploy that releases 2.0.0: the default moves only when no
		// record pins it.
		d.lock()
		d.reload()
		m.released = versions
		if !m.pinned {
			m.def = "2.0.0"
			if m.cand == "2.0.0" && (m.mode == "shadow" || m.mode == "canary") {
				m.mode = "stable-cand" // the candidate is the default now: nothing routes
			}
		}
	case "restart":
		d.stop()
		d.start()
	}
	if m.mode == "stable-cand" {
		m.mode = "shadow" // serves the default for everyone, like shadow
	}
}
