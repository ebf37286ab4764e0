// Package deploy_test checks what operators deploy beside the gateway
// (docs/operations.md): the Prometheus alerting rules pass promtool's check
// and their unit tests, every alert has a test and a runbook, and every
// expression of the rules and of the Grafana dashboard names only metrics a
// real gateway exports.
package deploy_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/toolgate/toolgate/gateway/gatewaytest"
	"github.com/toolgate/toolgate/internal/testrig"
	"github.com/toolgate/toolgate/invoke"
	"github.com/toolgate/toolgate/sandbox"
	"github.com/toolgate/toolgate/upstream"
	"github.com/toolgate/toolgate/upstream/upstreamtest"
	"go.yaml.in/yaml/v3"
)

const (
	rulesFile     = "prometheus/toolgate.rules.yml"
	rulesTestFile = "prometheus/toolgate.rules_test.yml"
	dashboardFile = "grafana/toolgate.json"
	runbookFile   = "../docs/operations.md"
)

// promtool finds promtool (Debian's prometheus package); without it the test
// is skipped, except under CI=true, where it fails.
func promtool(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("promtool is not installed, and CI=true requires the alerting-rule tests (apt-get install prometheus)")
		}
		t.Skip("skipping: promtool is not installed (apt-get install prometheus)")
	}
	return path
}

func runPromtool(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, promtool(t), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestRulesPassPromtool(t *testing.T) {
	t.Parallel()
	t.Log(runPromtool(t, "check", "rules", rulesFile))
	t.Log(runPromtool(t, "test", "rules", rulesTestFile))
}

type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Expr        string            `yaml:"expr"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

type ruleTestFile struct {
	Tests []struct {
		Name          string `yaml:"name"`
		AlertRuleTest []struct {
			Alertname string `yaml:"alertname"`
			ExpAlerts []any  `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
	} `yaml:"tests"`
}

func readYAML(t *testing.T, path string, into any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// Every alert has a unit test that fires it and one where it stays silent,
// a severity, a summary, and a runbook section in docs/operations.md that its
// runbook_url points at.
func TestEveryAlertHasATestAndARunbook(t *testing.T) {
	t.Parallel()
	var rules ruleFile
	readYAML(t, rulesFile, &rules)
	var tests ruleTestFile
	readYAML(t, rulesTestFile, &tests)
	fires, silent := map[string]int{}, map[string]int{}
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname]++
			} else {
				silent[a.Alertname]++
			}
		}
	}
	runbook, err := os.ReadFile(runbookFile)
	if err != nil {
		t.Fatal(err)
	}
	anchors := markdownAnchors(string(runbook))
	n := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			n++
			if fires[r.Alert] == 0 {
				t.Errorf("%s: no unit test in %s expects it to fire", r.Alert, rulesTestFile)
			}
			if silent[r.Alert] == 0 {
				t.Errorf("%s: no unit test in %s expects it to stay silent", r.Alert, rulesTestFile)
			}
			if s := r.Labels["severity"]; s != "page" && s != "ticket" {
				t.Errorf("%s: severity %q, want page or ticket", r.Alert, s)
			}
			if r.Annotations["summary"] == "" {
				t.Errorf("%s: no summary", r.Alert)
			}
			url := r.Annotations["runbook_url"]
			_, anchor, ok := strings.Cut(url, "/docs/operations.md#")
			if !ok || anchor != strings.ToLower(r.Alert) {
				t.Errorf("%s: runbook_url %q, want one ending in docs/operations.md#%s", r.Alert, url, strings.ToLower(r.Alert))
			} else if !anchors[anchor] {
				t.Errorf("%s: docs/operations.md has no section %q (a heading \"### %s\")", r.Alert, anchor, r.Alert)
			}
		}
	}
	for name := range fires {
		if !alertNamed(rules, name) {
			t.Errorf("%s is tested but no rule has that name", name)
		}
	}
	if n < 7 {
		t.Errorf("%d alerts, want the seven of docs/operations.md", n)
	}
}

func alertNamed(rules ruleFile, name string) bool {
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Alert == name {
				return true
			}
		}
	}
	return false
}

// markdownAnchors returns the GitHub-style anchors of a document's headings.
func markdownAnchors(doc string) map[string]bool {
	out := map[string]bool{}
	drop := regexp.MustCompile(`[^a-z0-9 _-]`)
	for _, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.ToLower(strings.TrimSpace(strings.TrimLeft(line, "#")))
		h = strings.ReplaceAll(drop.ReplaceAllString(h, ""), " ", "-")
		out[h] = true
	}
	return out
}

// dashboard is the part of a Grafana dashboard the checks read.
type dashboard struct {
	Title      string  `json:"title"`
	UID        string  `json:"uid"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID      int    `json:"id"`
	Type    string `json:"type"`
	Title   string `json:"title"`
	Targets []struct {
		Expr  string `json:"expr"`
		RefID string `json:"refId"`
	} `json:"targets"`
	GridPos struct{ H, W, X, Y int } `json:"gridPos"`
	Panels  []panel                  `json:"panels"`
}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	data, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(data) {
		t.Fatalf("%s is not valid JSON", dashboardFile)
	}
	var d dashboard
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	if d.Title == "" || d.UID == "" || len(d.Panels) == 0 {
		t.Fatalf("%s: a dashboard needs a title, a uid and panels", dashboardFile)
	}
	return d
}

// dashboardExprs lists every PromQL expression of the dashboard by where it
// is: each panel target and each query variable (label_values(METRIC, label)
// becomes METRIC).
func dashboardExprs(t *testing.T, d dashboard) map[string]string {
	t.Helper()
	out := map[string]string{}
	ids := map[int]bool{}
	var walk func(ps []panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			if ids[p.ID] {
				t.Errorf("panel id %d used twice", p.ID)
			}
			ids[p.ID] = true
			if p.Type != "row" && len(p.Targets) == 0 {
				t.Errorf("panel %q has no query", p.Title)
			}
			if p.GridPos.W <= 0 || p.GridPos.X+p.GridPos.W > 24 {
				t.Errorf("panel %q: gridPos %+v does not fit the 24-column grid", p.Title, p.GridPos)
			}
			for _, tg := range p.Targets {
				if strings.TrimSpace(tg.Expr) == "" {
					t.Errorf("panel %q target %s has no expression", p.Title, tg.RefID)
				}
				out[fmt.Sprintf("panel %q target %s", p.Title, tg.RefID)] = tg.Expr
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	labelValues := regexp.MustCompile(`^label_values\(\s*([^,]+?)\s*,\s*\w+\s*\)$`)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q := v.Query
		if m, ok := q.(map[string]any); ok {
			q = m["query"]
		}
		s, _ := q.(string)
		m := labelValues.FindStringSubmatch(s)
		if m == nil {
			t.Errorf("variable %s: query %q is not label_values(METRIC, label)", v.Name, s)
			continue
		}
		out["variable "+v.Name] = m[1]
	}
	return out
}

// grafanaVars are Grafana's variables as Prometheus would see them once
// Grafana has substituted them.
var grafanaVars = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h", "$tool_id", ".*")

// The dashboard's expressions parse (promtool checks them as recording
// rules) and name only metrics that a real gateway exports.
func TestDashboard(t *testing.T) {
	t.Parallel()
	d := readDashboard(t)
	exprs := dashboardExprs(t, d)
	exported := scrapeGateway(t)

	var rules strings.Builder
	rules.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	where := sortedKeys(exprs)
	for i, w := range where {
		expr := grafanaVars.Replace(exprs[w])
		fmt.Fprintf(&rules, "      - record: dashboard:expr_%d\n        expr: %q\n", i, expr)
		names := metricNames(expr)
		if len(names) == 0 {
			t.Errorf("%s: %q names no metric", w, exprs[w])
		}
		for _, n := range names {
			if !exported[n] {
				t.Errorf("%s: %q names %s, which the gateway does not export", w, exprs[w], n)
			}
		}
	}
	path := filepath.Join(t.TempDir(), "dashboard.rules.yml")
	if err := os.WriteFile(path, []byte(rules.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	runPromtool(t, "check", "rules", path)
}

// The alerting rules name only metrics a real gateway exports.
func TestRulesNameExportedMetrics(t *testing.T) {
	t.Parallel()
	var rules ruleFile
	readYAML(t, rulesFile, &rules)
	exported := scrapeGateway(t)
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			names := metricNames(r.Expr)
			if len(names) == 0 {
				t.Errorf("%s: names no metric", r.Alert)
			}
			for _, n := range names {
				if !exported[n] {
					t.Errorf("%s: names %s, which the gateway does not export", r.Alert, n)
				}
			}
		}
	}
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

var (
	scrapeOnce sync.Once
	scraped    map[string]bool
	scrapeErr  error
)

// scrapeGateway runs a real gateway (SQLite ledger, the sandbox downstream
// over loopback), drives calls of every outcome the metrics have series for
// — executed, replayed, joined, conflict, invalid, unknown, awaiting approval
// — and a reconciler pass, then returns the sample names of its /metrics.
func scrapeGateway(t *testing.T) map[string]bool {
	t.Helper()
	scrapeOnce.Do(func() { scraped, scrapeErr = driveAndScrape(t) })
	if scrapeErr != nil {
		t.Fatal(scrapeErr)
	}
	return scraped
}

func driveAndScrape(t *testing.T) (map[string]bool, error) {
	sb, sbURL := testrig.Sandbox(t)
	svc := testrig.Ledger(t, "deploy-test")
	bindings := testrig.Bindings(sbURL)
	approval := bindings["refund.create_request"]
	approval.RequireApproval = true
	bindings["refund.create_request"] = approval
	refund := testrig.RefundBinding(sbURL)
	refund.SettleAfter = time.Millisecond
	bindings["payments.issue_refund"] = refund
	// A tool of a real upstream MCP server, watched for drift: the
	// upstream's metrics have series once its definition changed.
	up := upstreamtest.Start(t, true, false)
	pool := upstream.NewPool(upstream.Config{Logger: testrig.Logger(t)})
	t.Cleanup(pool.Close)
	prom := prometheus.NewRegistry()
	watched := map[string]invoke.Binding{"crm.create_ticket": {Timeout: 2 * time.Second, MCP: &invoke.MCPTool{URL: up.URL, Tool: "create_ticket"}}}
	watcher, err := upstream.NewWatcher(pool, upstream.WatchConfig{Dir: t.TempDir(), Bindings: watched, Registerer: prom, Logger: testrig.Logger(t)})
	if err != nil {
		return nil, err
	}
	watcher.Start(context.Background())
	changed := upstreamtest.CreateTicketTool()
	changed.Description = "Open a ticket, and mail its subject to everyone."
	up.SetTool(changed)
	watcher.CheckNow(context.Background())
	if watcher.Drift("crm.create_ticket") == "" {
		return nil, fmt.Errorf("the changed upstream tool is not stopped: %+v", watcher.Statuses())
	}
	srv, err := gatewaytest.New(gatewaytest.Config{Registry: testrig.Registry(t), Ledger: svc, Invoker: &invoke.Client{},
		Bindings: bindings, JoinTimeout: 5 * time.Second, Logger: testrig.Logger(t), Prometheus: prom})
	if err != nil {
		return nil, err
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)

	var failed []string
	call := func(tool, key, args string, want int) {
		req, _ := http.NewRequest("POST", ts.URL+"/v1/tools/"+tool+"/calls", strings.NewReader(`{"arguments":`+args+`}`))
		req.Header.Set("Idempotency-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			failed = append(failed, err.Error())
			return
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			failed = append(failed, fmt.Sprintf("%s %s: %d, want %d: %s", tool, key, resp.StatusCode, want, body))
		}
	}
	const refundTool = "payments.issue_refund"
	other := strings.Replace(testrig.OkArgs, "1500", "1600", 1)
	call(refundTool, "deploy-exec-0001", testrig.OkArgs, 201)                      // executed
	call(refundTool, "deploy-exec-0001", testrig.OkArgs, 201)                      // replayed
	call(refundTool, "deploy-exec-0001", other, 409)                               // conflict
	call(refundTool, "deploy-bad-00001", `{"order_id":"x","amount_minor":0}`, 422) // invalid
	call("refund.create_request", "deploy-appr-0001",
		`{"order_id":"ord_12345678","reason_code":"customer_request","approval_channel":"chat"}`, 202) // awaiting approval
	if err := sb.InjectFault(sandbox.Fault{Path: "/refunds", Fault: "drop_after"}); err != nil {
		return nil, err
	}
	call(refundTool, "deploy-lost-0001", testrig.OkArgs, 504) // unknown
	if err := sb.InjectFault(sandbox.Fault{Path: "/refunds", Fault: "delay", DelayMS: 300}); err != nil {
		return nil, err
	}
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ { // one executes, one joins
		wg.Go(func() { call(refundTool, "deploy-join-0001", testrig.OkArgs, 201) })
	}
	wg.Wait()
	rec := srv.Calls().Reconciler(time.Hour)
	srv.Metrics().ObserveReconciler(rec)
	if _, err := rec.RunOnce(context.Background()); err != nil {
		return nil, err
	}
	if len(failed) > 0 {
		return nil, fmt.Errorf("driving the gateway: %s", strings.Join(failed, "; "))
	}

	resp, err := http.Get(ts.URL + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("GET /metrics: %d", resp.StatusCode)
	}
	names := map[string]bool{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		if i := strings.IndexAny(line, "{ "); i > 0 {
			names[line[:i]] = true
		}
	}
	for _, want := range []string{"toolgate_joins_total", "toolgate_reconcile_total", "toolgate_oldest_approval_age_seconds",
		"toolgate_upstream_drifted", "toolgate_upstream_changes_total", "toolgate_upstream_checks_total"} {
		if !names[want] {
			return nil, fmt.Errorf("the driven gateway exports no %s: the scrape misses a series the checks need", want)
		}
	}
	return names, sc.Err()
}
