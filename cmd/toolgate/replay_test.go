package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/examples"
	"github.com/toolgate/toolgate/sandbox"
	"github.com/toolgate/toolgate/sandbox/sandboxtest"
)

// demoOrder is the order toolgate demo seeds its sandbox with; a fresh
// sandbox for a replay of the demo's traffic needs it too.
var demoOrder = sandbox.Order{OrderID: "ord_8Xk2Lm9Q", TotalMinor: 500_000, Currency: "EUR"}

func freshSandbox(t *testing.T, cfg sandbox.Config) (*sandbox.Server, string) {
	t.Helper()
	cfg.Orders = []sandbox.Order{demoOrder}
	return sandboxtest.Start(t, cfg)
}

// replayReport runs toolgate replay with --format json and decodes the report.
type replayReport struct {
	Total, Deterministic, Differs, Skipped int
	NotReplayable                          int `json:"not_replayable"`
	Decision                               string
	Results                                []struct {
		Source     string `json:"source"`
		ActionID   string `json:"action_id"`
		Verdict    string `json:"verdict"`
		Reason     string `json:"reason"`
		Field      string `json:"field"`
		Difference *struct {
			In, Pointer        string
			Recorded, Replayed json.RawMessage
		} `json:"difference"`
	} `json:"results"`
}

func (r replayReport) verdicts() map[string]string {
	out := map[string]string{}
	for _, res := range r.Results {
		if res.Verdict != "skipped" {
			out[res.ActionID] = res.Verdict
		}
	}
	return out
}

func runReplayJSON(t *testing.T, wantCode int, args ...string) replayReport {
	t.Helper()
	r := runCLI(t, "", append([]string{"replay", "--format", "json"}, args...)...)
	if r.code != wantCode {
		t.Fatalf("replay %v: exit %d, want %d\n--- stdout\n%s--- stderr\n%s", args, r.code, wantCode, r.stdout, r.stderr)
	}
	var rep replayReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("replay --format json: %v\n%s", err, r.stdout)
	}
	return rep
}

// The black-box story of the issue, end to end: the demo's traffic logged
// with arguments: full, replayed against a fresh sandbox, is deterministic
// (exit 0); against a sandbox that answers refunds otherwise it differs at
// /status (exit 1); a masked log is not replayable, naming the masked field;
// a target beyond loopback is refused.
func TestReplayTheDemo(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	full, masked := filepath.Join(dir, "full.jsonl"), filepath.Join(dir, "masked.jsonl")
	for _, c := range []struct{ path, mode string }{{full, "full"}, {masked, "masked"}} {
		if r := runCLI(t, "", "demo", "--decision-log", c.path, "--log-arguments", c.mode); r.code != exitOK {
			t.Fatalf("demo: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
	}
	demoActions := map[string]string{
		"demo-refund-0001": "deterministic", "demo-refund-0002": "deterministic",
		"demo-refund-0003": "not_replayable", "demo-refund-0004": "not_replayable", // 504s: no recorded answer
	}

	sb, url := freshSandbox(t, sandbox.Config{})
	rep := runReplayJSON(t, exitOK, "--log", full, "--target", url)
	if fmt.Sprint(rep.verdicts()) != fmt.Sprint(demoActions) || rep.Differs != 0 || rep.Deterministic != 2 {
		t.Fatalf("replay of the demo: %v (%s)", rep.verdicts(), rep.Decision)
	}
	if n := sb.EffectCount(); n != 2 {
		t.Fatalf("the fresh sandbox applied %d refunds, want the 2 replayed", n)
	}
	for _, key := range []string{"default:demo-refund-0001", "default:demo-refund-0002"} {
		if len(sb.Effects(key)) != 1 {
			t.Errorf("no effect under the recorded downstream key %s: %+v", key, sb.Effects())
		}
	}

	_, changed := freshSandbox(t, sandbox.Config{RefundStatus: "pending_review"})
	rep = runReplayJSON(t, exitNegative, "--log", full, "--target", changed)
	for _, res := range rep.Results {
		if res.Verdict == "differs" && (res.Difference == nil || res.Difference.Pointer != "/status" ||
			string(res.Difference.Recorded) != `"succeeded"` || string(res.Difference.Replayed) != `"pending_review"`) {
			t.Errorf("%s differs by %+v, want /status succeeded -> pending_review", res.Source, res.Difference)
		}
	}
	if rep.Differs != 2 {
		t.Fatalf("%d calls differ, want 2", rep.Differs)
	}

	_, url3 := freshSandbox(t, sandbox.Config{})
	rep = runReplayJSON(t, exitOK, "--log", masked, "--target", url3)
	for _, res := range rep.Results {
		if demoActions[res.ActionID] == "deterministic" && res.Verdict != "skipped" &&
			(res.Verdict != "not_replayable" || res.Field != "/customer_email" || !strings.Contains(res.Reason, "/customer_email was masked")) {
			t.Errorf("%s in a masked log: %s field %q: %s", res.Source, res.Verdict, res.Field, res.Reason)
		}
	}

	r := runCLI(t, "", "replay", "--log", full, "--target", "https://payments.example.com")
	if r.code != exitUsage || !strings.Contains(r.stderr, "second refund") || r.stdout != "" {
		t.Fatalf("a remote target: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// Through a gateway: a fresh toolgate gateway (no auth: tenant default, as
// the demo's) in front of a fresh sandbox, found by probing, answers the
// recorded bytes; replaying again through the same gateway proves nothing
// and is skipped (its ledger replays the stored answers).
func TestReplayThroughAGateway(t *testing.T) {
	t.Parallel()
	sb, sbURL := freshSandbox(t, sandbox.Config{})
	cfg := config.Default()
	cfg.Listen = "127.0.0.1:0"
	cfg.Ledger = "sqlite://" + filepath.Join(t.TempDir(), "replay.db")
	cfg.Bindings = sandboxBindings(sbURL)
	rt, err := startGatewayWith(context.Background(), cfg, examples.AgentTools(), ioDiscard{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	log := filepath.Join("testdata", "replay", "demo_full.jsonl")
	rep := runReplayJSON(t, exitOK, "--log", log, "--target", rt.URL())
	if rep.Deterministic != 2 || rep.Differs != 0 || sb.EffectCount() != 2 {
		t.Fatalf("through a gateway: %v (%s), %d effects", rep.verdicts(), rep.Decision, sb.EffectCount())
	}
	rep = runReplayJSON(t, exitOK, "--log", log, "--target", rt.URL(), "--target-kind", "gateway")
	if rep.Deterministic != 0 || sb.EffectCount() != 2 {
		t.Fatalf("a second replay through the same gateway: %v (%s), %d effects", rep.verdicts(), rep.Decision, sb.EffectCount())
	}
	stale := 0
	for _, res := range rep.Results {
		if res.Verdict == "skipped" && strings.Contains(res.Reason, "fresh ledger") {
			stale++
		}
	}
	if stale != 2 {
		t.Errorf("%d calls skipped as replayed by the target gateway, want 2: %+v", stale, rep.Results)
	}
}

type ioDiscard struct{}

func (ioDiscard) Write(p []byte) (int, error) { return len(p), nil }

// From a ledger: the actions a gateway recorded, with the bindings of a
// toolgate.yaml (their host rewritten to the target), are deterministic; a
// timed-out one reconciled by lookup is not replayable.
func TestReplayFromLedger(t *testing.T) {
	t.Parallel()
	sb, sbURL := freshSandbox(t, sandbox.Config{})
	dir := t.TempDir()
	db := filepath.Join(dir, "ledger.db")
	cfg := config.Default()
	cfg.Listen = "127.0.0.1:0"
	cfg.Ledger = "sqlite://" + db
	cfg.Bindings = sandboxBindings(sbURL)
	rt, err := startGatewayWith(context.Background(), cfg, examples.AgentTools(), ioDiscard{})
	if err != nil {
		t.Fatal(err)
	}
	call := func(key string, arguments string) int {
		req, _ := http.NewRequest("POST", rt.URL()+"/v1/tools/payments.issue_refund/calls", strings.NewReader(`{"arguments":`+arguments+`}`))
		req.Header.Set("Idempotency-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	unknownOrder := strings.Replace(args(100), demoOrder.OrderID, "ord_NoSuchOrder", 1)
	if call("ledger-0001", args(100)) != 201 || call("ledger-0002", unknownOrder) != 404 || call("ledger-0001", args(100)) != 201 {
		t.Fatal("seed calls")
	}
	sb.InjectFault(sandbox.Fault{Path: "/refunds", Fault: "drop_after"})
	if call("ledger-0003", args(300)) != 504 {
		t.Fatal("the dropped call is not 504")
	}
	waitFor(t, "ledger-0003 reconciled", func() bool {
		resp, err := http.Get(rt.URL() + "/v1/actions/ledger-0003")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var a struct{ State string }
		json.NewDecoder(resp.Body).Decode(&a)
		return a.State == "succeeded"
	})
	rt.Close()

	yaml := filepath.Join(dir, "toolgate.yaml")
	if err := os.WriteFile(yaml, []byte("bindings:\n  payments.issue_refund:\n    url: http://payments.invalid/refunds\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, target := freshSandbox(t, sandbox.Config{})
	rep := runReplayJSON(t, exitOK, "--from-ledger", "sqlite://"+db, "--config", yaml, "--target", target)
	want := map[string]string{"ledger-0001": "deterministic", "ledger-0002": "deterministic", "ledger-0003": "not_replayable"}
	if fmt.Sprint(rep.verdicts()) != fmt.Sprint(want) {
		t.Fatalf("from the ledger: %v (%s)", rep.verdicts(), rep.Decision)
	}
	r := runCLI(t, "", "replay", "--from-ledger", "sqlite://"+db, "--target", target, "--target-kind", "downstream")
	if r.code != exitOK || !strings.Contains(r.stdout, "pass --config with its binding") {
		t.Fatalf("without bindings: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// Golden reports in every format, from a committed demo log (its downstream
// URLs name a host that does not exist: the replay goes to the target only).
func TestReplayGoldens(t *testing.T) {
	t.Parallel()
	full := filepath.Join("testdata", "replay", "demo_full.jsonl")
	masked := filepath.Join("testdata", "replay", "demo_masked.jsonl")
	tests := []struct {
		name    string
		sandbox *sandbox.Config // nil: no target server
		args    []string
		code    int
	}{
		{"deterministic.text", &sandbox.Config{}, []string{"--log", full}, exitOK},
		{"deterministic.json", &sandbox.Config{}, []string{"--log", full, "--format", "json"}, exitOK},
		{"deterministic.junit", &sandbox.Config{}, []string{"--log", full, "--format", "junit"}, exitOK},
		{"deterministic.markdown", &sandbox.Config{}, []string{"--log", full, "--format", "markdown"}, exitOK},
		{"differs.text", &sandbox.Config{RefundStatus: "pending_review"}, []string{"--log", full}, exitNegative},
		{"differs.json", &sandbox.Config{RefundStatus: "pending_review"}, []string{"--log", full, "--format", "json"}, exitNegative},
		{"differs.junit", &sandbox.Config{RefundStatus: "pending_review"}, []string{"--log", full, "--format", "junit"}, exitNegative},
		{"differs.markdown", &sandbox.Config{RefundStatus: "pending_review"}, []string{"--log", full, "--format", "markdown"}, exitNegative},
		{"differs_json_compare.text", &sandbox.Config{RefundStatus: "pending_review"}, []string{"--log", full, "--compare", "json", "--limit", "1"}, exitNegative},
		{"masked.text", &sandbox.Config{}, []string{"--log", masked}, exitOK},
		{"since.text", &sandbox.Config{}, []string{"--log", full, "--since", "2026-12-01T10:45:37.78Z", "--tool", "payments.issue_refund"}, exitOK},
		{"remote_target", nil, []string{"--log", full, "--target", "https://payments.example.com"}, exitUsage},
		{"remote_target_allowed_other", nil, []string{"--log", full, "--target", "http://10.1.2.3:9090", "--allow-target", "10.1.2.4"}, exitUsage},
		{"no_source", nil, []string{"--target", "http://127.0.0.1:9"}, exitUsage},
		{"bad_compare", nil, []string{"--log", full, "--target", "http://127.0.0.1:9", "--compare", "xml"}, exitUsage},
		{"bad_since", nil, []string{"--log", full, "--target", "http://127.0.0.1:9", "--since", "yesterday"}, exitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"replay"}, tt.args...)
			target := ""
			if tt.sandbox != nil {
				_, target = freshSandbox(t, *tt.sandbox)
				args = append(args, "--target", target)
			}
			r := runCLI(t, "", args...)
			out := fmt.Sprintf("exit %d\n--- stdout\n%s--- stderr\n%s", r.code, r.stdout, r.stderr)
			if target != "" {
				out = strings.ReplaceAll(out, target, "http://127.0.0.1:PORT")
			}
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d\n%s", r.code, tt.code, out)
			}
			assertGoldenFile(t, filepath.Join("replay", tt.name+".golden"), out)
		})
	}
}

// The probe that tells a gateway from a downstream is one GET with no effect.
func TestReplayProbeIsARead(t *testing.T) {
	t.Parallel()
	var methods []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		methods = append(methods, r.Method+" "+r.URL.Path)
		http.NotFound(w, r)
	}))
	defer srv.Close()
	runCLI(t, "", "replay", "--log", filepath.Join("testdata", "replay", "demo_full.jsonl"), "--target", srv.URL, "--limit", "0", "--tool", "nothing.here")
	if fmt.Sprint(methods) != "[GET /problems/idempotency_key_reused]" {
		t.Fatalf("requests: %v", methods)
	}
}
