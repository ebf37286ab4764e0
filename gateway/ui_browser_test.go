package gateway_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/toolgate/toolgate/sandbox"
)

// The dashboard tests drive the real pages in real headless Chromium (Debian's
// chromium package; scripts/ci-chromium.sh installs it). Without a browser
// they skip, except under CI=true, where they fail. Screenshots go to the
// test's artifact directory (go test -artifacts keeps them) and, when
// TOOLGATE_SCREENSHOTS names a directory, are copied there for review.

// chromium finds the browser: $TOOLGATE_CHROMIUM, else chromium on PATH.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("TOOLGATE_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "no chromium on PATH: install Debian's chromium package (scripts/ci-chromium.sh) or set TOOLGATE_CHROMIUM"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// browser starts a headless Chromium with an empty profile and returns a tab,
// and a func that lists the errors and uncaught exceptions the page logged.
func browser(t *testing.T, timeout time.Duration) (context.Context, func() []string) {
	t.Helper()
	return browserWith(t, timeout)
}

// browserWith is browser with more Chromium options.
func browserWith(t *testing.T, timeout time.Duration, extra ...chromedp.ExecAllocatorOption) (context.Context, func() []string) {
	t.Helper()
	exe := chromium(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	opts = append(opts, extra...)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancelAlloc)
	tab, cancelTab := chromedp.NewContext(alloc)
	t.Cleanup(cancelTab)
	if err := chromedp.Do(tab); err != nil { // starts the browser and opens the tab
		t.Fatalf("start chromium %s: %v", exe, err)
	}
	var mu sync.Mutex
	var problems []string
	msgs := chromedp.Console(tab)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			expected := strings.Contains(m.Text, "Failed to load resource") &&
				(strings.Contains(m.Text, "401") || strings.Contains(m.Text, "403")) // the sign-in checks
			if !expected && (m.Type == chromedp.ConsoleException || m.Type == chromedp.ConsoleError) {
				mu.Lock()
				problems = append(problems, string(m.Type)+": "+m.Text)
				mu.Unlock()
			}
		}
	}()
	consoleProblems := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), problems...)
	}
	return tab, consoleProblems
}

// run runs browser actions and fails the test, naming the step, when one
// fails or the step takes longer than 20 seconds.
func run(t *testing.T, ctx context.Context, step string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", step, err)
	}
}

// waitText waits until the element's text contains want.
func waitText(sel, want string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](fmt.Sprintf(`(() => { const n = document.querySelector(%q); return !!n && n.textContent.includes(%q); })()`, sel, want),
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(10*time.Second))
}

// goTo changes the page's fragment, as a click on a dashboard link does.
func goTo(hash string) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`location.hash = %q`, hash))
}

// screenshot saves a full-page PNG under the test's artifact directory and
// copies it to $TOOLGATE_SCREENSHOTS when that is set.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	run(t, ctx, "let the page settle", chromedp.Sleep(150*time.Millisecond))
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if len(png) < 8 || string(png[1:4]) != "PNG" {
		t.Fatalf("screenshot %s is not a PNG", name)
	}
	dirs := []string{t.ArtifactDir()}
	if d := os.Getenv("TOOLGATE_SCREENSHOTS"); d != "" {
		dirs = append(dirs, d)
	}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(d, name+".png")
		if err := os.WriteFile(p, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot %s", p)
	}
}

// ageText is how the dashboard writes an age.
var ageText = regexp.MustCompile(`^\d+ (s|min|h)$`)

// wantLabels checks that each control under scope has a <label for> whose text
// is the wanted one: the label a screen reader reads and a person sees.
func wantLabels(t *testing.T, ctx context.Context, scope string, want map[string]string) {
	t.Helper()
	for sel, text := range want {
		got, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`(() => {
			const n = document.querySelector(%q);
			if (!n) return 'no element';
			if (!n.id || !n.labels || n.labels.length !== 1) return 'no label';
			const l = n.labels[0];
			return l.htmlFor === n.id && l.offsetParent !== null ? l.textContent : 'label not shown';
		})()`, scope+" "+sel)))
		if err != nil || got != text {
			t.Errorf("%s %s is labelled %q (%v), want %q", scope, sel, got, err, text)
		}
	}
}

// count counts the elements a CSS selector matches.
func count(t *testing.T, ctx context.Context, sel string) int {
	t.Helper()
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%q).length`, sel)))
	if err != nil {
		t.Fatalf("count %s: %v", sel, err)
	}
	return n
}

// seedTraffic makes real calls through the gateway over a few seconds, so the
// conflicts-vs-volume chart has several bars (one-second buckets): successful
// refunds, replays, keys reused with other arguments (409
// idempotency_key_reused) and arguments the contract refuses (422
// invalid_arguments). Each round starts in a new second.
func seedTraffic(t *testing.T, g *rig) {
	t.Helper()
	g.refund("ui-chart-base-0001", okArgs, auth(uiAgentKey)...)
	n := 0
	for round := 0; round < 5; round++ {
		if round > 0 {
			time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)))
		}
		for i := 0; i < 2+round%3; i++ {
			n++
			key := fmt.Sprintf("ui-chart-%02d-%04d", round, n)
			if r := g.refund(key, okArgs, auth(uiAgentKey)...); r.status != 201 {
				t.Fatalf("seed call: %d %s", r.status, r.body)
			}
		}
		g.refund("ui-chart-base-0001", okArgs, auth(uiAgentKey)...) // a replay
		for i := 0; i < []int{0, 1, 3, 1, 2}[round]; i++ {
			other := strings.Replace(okArgs, "1500", fmt.Sprint(1600+i), 1)
			g.refund("ui-chart-base-0001", other, auth(uiAgentKey)...).wantProblem(t, 409, "idempotency_key_reused")
		}
		for i := 0; i < []int{1, 0, 2, 0, 1}[round]; i++ {
			g.refund(fmt.Sprintf("ui-chart-bad-%02d-%d", round, i), strings.Replace(okArgs, "1500", "9.99", 1), auth(uiAgentKey)...).
				wantProblem(t, 422, "invalid_arguments")
		}
	}
}

func TestDashboardInChromium(t *testing.T) {
	t.Parallel()
	ctx, consoleProblems := browser(t, 60*time.Second)
	g := newRig(t, withUIKeys)
	agent := auth(uiAgentKey)
	operator := auth(uiOperatorKey)

	// Three actions whose outcome the gateway could not learn.
	g.fault(sandbox.Fault{Path: "/refunds", Fault: "status_after", Status: 500}) // effect done, answer lost
	g.refund("ui-unknown-0001", okArgs, agent...).wantProblem(t, 504, "outcome_unknown")
	g.fault(sandbox.Fault{Path: "/refunds", Fault: "drop_after"}) // effect done, connection dropped
	g.refund("ui-unknown-0002", okArgs, agent...).wantProblem(t, 504, "outcome_unknown")
	g.fault(sandbox.Fault{Path: "/refunds", Fault: "status_before", Status: 500}) // nothing done
	g.refund("ui-unknown-0003", okArgs, agent...).wantProblem(t, 504, "outcome_unknown")
	// One refund large enough to wait for approval, with provider evidence.
	big := strings.Replace(okArgs, "1500", "250000", 1)
	if r := g.do("POST", "/v1/tools/payments.issue_refund/calls",
		`{"arguments":`+big+`,"correlation_id":"rule-fired-77","policy_version":"refund-policy-v3","provider":{"name":"openai","route":"primary","call_id":"call_7Hq2kP"}}`,
		append(agent, "Idempotency-Key", "ui-approve-0001")...); r.status != 202 {
		t.Fatalf("large refund: %d %s", r.status, r.body)
	}
	// The agent's fallback model asks again for the same action: a provider
	// transition, whose reason (markup included) the timeline shows as text.
	if r := g.do("POST", "/v1/tools/payments.issue_refund/calls",
		`{"arguments":`+big+`,"provider":{"name":"anthropic","route":"fallback","call_id":"toolu_01","reason":"primary timed out <img src=x onerror=alert(1)>"}}`,
		append(agent, "Idempotency-Key", "ui-approve-0001")...); r.status != 202 {
		t.Fatalf("fallback call: %d %s", r.status, r.body)
	}
	seedTraffic(t, g)
	effects := g.sb.EffectCount()

	// Sign in: the key goes into the form, never into a URL.
	run(t, ctx, "open the dashboard",
		chromedp.Navigate(g.url+"/ui/"),
		chromedp.WaitVisible(chromedp.CSS("#login-form")),
		chromedp.WaitNotVisible(chromedp.CSS("#nav")),
	)
	screenshot(t, ctx, "sign-in")
	run(t, ctx, "sign in",
		chromedp.SendKeys(chromedp.CSS("#key"), uiOperatorKey),
		chromedp.Click(chromedp.CSS("#login-submit")),
		chromedp.WaitVisible(chromedp.CSS("#nav")),
		waitText("#who", "acme-oncall"),
	)
	href, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(href, uiOperatorKey) {
		t.Fatalf("the key is in the URL %s", href)
	}

	// The unknown queue: reconcile one by clicking, resolve another by hand.
	run(t, ctx, "open the unknown queue",
		chromedp.Click(chromedp.CSS(`#nav a[data-page="unknown"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#unknown-queue tr[data-action="ui-unknown-0003"]`)),
		waitText("#unknown-count", "3"),
	)
	screenshot(t, ctx, "unknown-queue")
	// Every note box is named by a visible label that says which action it serves.
	wantLabels(t, ctx, `tr[data-action="ui-unknown-0001"]`, map[string]string{
		"input.resolve-note": "Resolve note (why)", "input.assign-note": "Assignment note"})
	run(t, ctx, "reconcile ui-unknown-0002",
		chromedp.Click(chromedp.CSS(`tr[data-action="ui-unknown-0002"] button.reconcile`)),
		waitText("#flash-msg", "ui-unknown-0002: the action is now succeeded"),
	)
	run(t, ctx, "resolve without an outcome",
		chromedp.Click(chromedp.CSS(`tr[data-action="ui-unknown-0003"] button.resolve`)),
		waitText("#flash-msg", "Choose the outcome"),
	)
	row := `tr[data-action="ui-unknown-0001"] `
	run(t, ctx, "resolve ui-unknown-0001",
		chromedp.WaitVisible(chromedp.CSS(row+"button.resolve")),
		chromedp.SetValue(chromedp.CSS(row+"select.resolve-outcome"), "succeeded"),
		chromedp.SendKeys(chromedp.CSS(row+"input.resolve-note"), "refund rf_ seen in the PSP console"),
		chromedp.Click(chromedp.CSS(row+"button.resolve")),
		waitText("#flash-msg", "ui-unknown-0001: the action is now succeeded"),
		waitText("#unknown-count", "1"),
	)
	for id, want := range map[string]string{"ui-unknown-0001": "succeeded", "ui-unknown-0002": "succeeded", "ui-unknown-0003": "unknown"} {
		if a := g.do("GET", "/v1/actions/"+id, "", operator...).json(t); a["state"] != want {
			t.Errorf("%s is %v through the API, want %s", id, a["state"], want)
		}
	}
	resolved := g.do("GET", "/v1/actions/ui-unknown-0001", "", operator...)
	if !strings.Contains(string(resolved.body), "acme-oncall") || !strings.Contains(string(resolved.body), "rf_ seen in the PSP console") {
		t.Errorf("the resolution does not name the operator and note: %s", resolved.body)
	}
	if r := g.refund("ui-unknown-0001", okArgs, agent...); r.status != 200 || r.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("the resolved action does not replay: %d %s", r.status, r.body)
	}

	// The approvals queue: approve by clicking; the sandbox gets one effect.
	run(t, ctx, "approve ui-approve-0001",
		chromedp.Click(chromedp.CSS(`#nav a[data-page="approvals"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#approvals-queue tr[data-action="ui-approve-0001"]`)),
		waitText(`tr[data-action="ui-approve-0001"] pre.args`, `"amount_minor":250000`),
	)
	screenshot(t, ctx, "approvals-queue")
	wantLabels(t, ctx, `tr[data-action="ui-approve-0001"]`, map[string]string{
		"input.decision-note": "Approve / deny note", "input.assign-note": "Assignment note"})
	run(t, ctx, "approve ui-approve-0001",
		chromedp.SendKeys(chromedp.CSS(`tr[data-action="ui-approve-0001"] input.decision-note`), "customer called, verified"),
		chromedp.Click(chromedp.CSS(`tr[data-action="ui-approve-0001"] button.approve`)),
		waitText("#flash-msg", "ui-approve-0001: the action is now succeeded"),
		chromedp.WaitVisible(chromedp.CSS("#approvals-empty")),
	)
	if a := g.do("GET", "/v1/actions/ui-approve-0001", "", operator...).json(t); a["state"] != "succeeded" {
		t.Fatalf("approved action is %v through the API", a["state"])
	}
	g.wantEffects(effects + 1)

	// The approved action's page: timeline, provider evidence, digest, result.
	run(t, ctx, "open the action's page",
		goTo("#/actions/ui-approve-0001"),
		chromedp.WaitVisible(chromedp.CSS("#timeline li")),
		waitText("#timeline", "awaiting_approval"),
		waitText("#provider-calls", "call_7Hq2kP"),
		waitText("#digest", "sha256:"),
		waitText("#result", "refund_id"),
	)
	// The read's arguments (masked by the server) and the downstream key.
	read := g.do("GET", "/ui/api/actions/ui-approve-0001", "", operator...).json(t)
	dk, _ := read["downstream_key"].(string)
	if dk == "" {
		t.Fatalf("/ui/api/actions/ui-approve-0001 has no downstream_key: %v", read)
	}
	run(t, ctx, "see the arguments and the downstream key",
		waitText("#downstream-key", dk),
		waitText("#arguments", `"amount_minor": 250000`),
	)
	steps := count(t, ctx, "#timeline li")
	if steps < 5 {
		t.Errorf("the timeline shows %d entries, want at least 5 (4 transitions and the provider's)", steps)
	}
	run(t, ctx, "see the provider transition",
		waitText("#timeline li.provider-transition", "Provider route changed"),
		waitText("#timeline li.provider-transition", "awaiting_approval"),
		waitText("#timeline .route-from", "openai / primary"),
		waitText("#timeline .route-to", "anthropic / fallback"),
		waitText("#timeline .route-reason", "primary timed out <img src=x onerror=alert(1)>"),
	)
	if n := count(t, ctx, "#timeline img"); n != 0 {
		t.Errorf("the provider's reason became markup (%d img elements)", n)
	}
	screenshot(t, ctx, "action-timeline")

	// The health chart over the last 30 seconds, per second, from the calls above.
	series := g.do("GET", "/ui/api/series?window=30&step=1", "", operator...).json(t)["totals"].(map[string]any)
	if series["conflicts"].(float64) < 7 || series["calls"].(float64) < 20 || series["invalid_arguments"].(float64) != 4 {
		t.Fatalf("series totals %v (want 4 invalid_arguments, as seeded)", series)
	}
	run(t, ctx, "open the chart",
		goTo("#/health?window=30&step=1"),
		chromedp.WaitVisible(chromedp.CSS("svg#chart rect.bar-conflicts")),
		chromedp.WaitVisible(chromedp.CSS("svg#chart rect.bar-invalid")),
		chromedp.WaitVisible(chromedp.CSS("svg#chart polyline.share")),
		chromedp.WaitVisible(chromedp.CSS("svg#chart polyline.invalid-share")),
		waitText("#total-conflicts", fmt.Sprint(series["conflicts"])),
		waitText("#total-invalid", "4"),
		waitText("#invalid-share", fmt.Sprintf("%.1f %%", 100*4/series["calls"].(float64))),
		waitText("#legend", "invalid arguments (422)"),
	)
	bars := count(t, ctx, "svg#chart rect.bar-calls")
	if bars < 4 {
		t.Errorf("the chart has %d bars of calls, want the seeded seconds", bars)
	}
	screenshot(t, ctx, "conflicts-volume")

	// The registry with the classified diff of two versions.
	run(t, ctx, "open the registry diff",
		goTo("#/registry/refund.create_request?from=2.1.0&to=2.2.0"),
		chromedp.WaitVisible(chromedp.CSS("#diff tbody tr")),
		waitText("#diff-summary", "required bump"),
	)
	screenshot(t, ctx, "registry-diff")

	// The actions list filtered by state and tool.
	run(t, ctx, "filter the actions",
		goTo("#/actions?state=unknown&tool_id=payments.issue_refund"),
		chromedp.WaitVisible(chromedp.CSS(`#actions tr[data-action="ui-unknown-0003"]`)),
	)
	listed := count(t, ctx, "#actions tbody tr")
	if listed != 1 {
		t.Errorf("the unknown filter lists %d actions, want 1", listed)
	}
	// The rule's firing and the refund it caused: one query.
	run(t, ctx, "filter by policy version and correlation id",
		goTo("#/actions?policy_version=refund-policy-v3&correlation_id=rule-fired-77"),
		chromedp.WaitVisible(chromedp.CSS(`#actions tr[data-action="ui-approve-0001"]`)),
	)
	if listed := count(t, ctx, "#actions tbody tr"); listed != 1 {
		t.Errorf("the policy and correlation filter lists %d actions, want 1", listed)
	}
	typed, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('filter-policy').value + ' ' + document.getElementById('filter-correlation').value`))
	if err != nil || typed != "refund-policy-v3 rule-fired-77" {
		t.Errorf("the filter inputs show %q (%v)", typed, err)
	}
	run(t, ctx, "type another correlation id",
		chromedp.SetValue(chromedp.CSS("#filter-correlation"), "rule-fired-78"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById('filter-correlation').dispatchEvent(new Event('change'))`),
		waitText("main", "No actions match."),
	)
	run(t, ctx, "list every action",
		goTo("#/actions"),
		chromedp.WaitVisible(chromedp.CSS(`#actions tr[data-action="ui-approve-0001"]`)),
		chromedp.SetValue(chromedp.CSS("#filter-state"), ""),
		chromedp.Evaluate[chromedp.Void](`document.getElementById('filter-state').dispatchEvent(new Event('change'))`),
		chromedp.WaitVisible(chromedp.CSS(`#actions tr[data-action="ui-approve-0001"]`)),
	)
	screenshot(t, ctx, "actions")
	// The list has an age column: how long ago each action was created.
	ages, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`(() => {
		const head = [...document.querySelectorAll('#actions thead th')].map(th => th.textContent);
		const i = head.indexOf('Age');
		if (i < 0) return ['no Age column: ' + head.join(',')];
		return [...document.querySelectorAll('#actions tbody tr')].map(tr => tr.children[i].textContent);
	})()`))
	if err != nil || len(ages) < 10 {
		t.Fatalf("age column %v (%v)", ages, err)
	}
	for _, a := range ages {
		if !ageText.MatchString(a) {
			t.Errorf("age cell %q is not an age", a)
		}
	}

	// Signing out forgets the key; an agent key cannot sign in.
	run(t, ctx, "sign out and try an agent key",
		chromedp.Click(chromedp.CSS("#signout")),
		chromedp.WaitVisible(chromedp.CSS("#login-form")),
		chromedp.SendKeys(chromedp.CSS("#key"), uiAgentKey),
		chromedp.Click(chromedp.CSS("#login-submit")),
		waitText("#login-error", "not an operator key"),
	)
	stored, err := chromedp.Run(ctx, chromedp.Evaluate[string](`sessionStorage.getItem('toolgate.dashboard.key') || ''`))
	if err != nil || stored != "" {
		t.Errorf("a refused key stays in session storage (%v)", err)
	}
	for _, p := range consoleProblems() {
		t.Errorf("the dashboard logged %s", p)
	}
}

// Without keys the dashboard opens with no prompt (every loopback caller is an
// operator of tenant default); deny works by clicking too.
func TestDashboardWithoutKeysInChromium(t *testing.T) {
	t.Parallel()
	ctx, consoleProblems := browser(t, 40*time.Second)
	g := newRig(t)
	big := strings.Replace(okArgs, "1500", "250000", 1)
	if r := g.refund("ui-deny-0001", big); r.status != 202 {
		t.Fatalf("large refund: %d %s", r.status, r.body)
	}
	run(t, ctx, "open the dashboard and deny",
		chromedp.Navigate(g.url+"/ui/#/approvals"),
		waitText("#who", "no auth (loopback)"),
		chromedp.WaitVisible(chromedp.CSS(`#approvals-queue tr[data-action="ui-deny-0001"]`)),
		chromedp.SendKeys(chromedp.CSS(`tr[data-action="ui-deny-0001"] input.decision-note`), "amount looks wrong"),
		chromedp.Click(chromedp.CSS(`tr[data-action="ui-deny-0001"] button.deny`)),
		waitText("#flash-msg", "ui-deny-0001: the action is now rejected"),
		chromedp.WaitVisible(chromedp.CSS("#approvals-empty")),
	)
	hidden, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById('login').hidden && document.getElementById('signout').hidden`))
	if err != nil || !hidden {
		t.Errorf("without keys the page shows a sign-in form or a sign-out button (%v)", err)
	}
	a := g.action("ui-deny-0001")
	if a["state"] != "rejected" || !strings.Contains(fmt.Sprint(a["history"]), "amount looks wrong") {
		t.Fatalf("after deny: %v %v", a["state"], a["history"])
	}
	g.refund("ui-deny-0001", big).wantProblem(t, 403, "action_denied")
	g.wantEffects(0)
	for _, p := range consoleProblems() {
		t.Errorf("the dashboard logged %s", p)
	}
}

// TestDashboardRolloutInChromium: the registry shows each tool's rollout
// (default, mode and candidate); a tool's page shows the shadow candidate's
// would-be failures with their principals, the versions' deprecation and
// the audit history, as text only (a note holding markup stays text) and
// without any argument value.
func TestDashboardRolloutInChromium(t *testing.T) {
	t.Parallel()
	ctx, consoleProblems := browser(t, 60*time.Second)
	g := newRig(t)
	if r := g.do("POST", "/v1/rollouts/refund.create_request/shadow", `{"version":"2.1.0","note":"<b id=\"injected\">bold</b> check"}`); r.status != 200 {
		t.Fatalf("shadow: %d %s", r.status, r.body)
	}
	args := `{"arguments":{"order_id":"ord_uiroll001","reason_code":"customer_request","approval_channel":"chat","note":"secret-note-value"}}`
	for i := range 3 {
		g.do("POST", "/v1/tools/refund.create_request/calls", args, "Idempotency-Key", fmt.Sprintf("ui-rollout-%04d", i))
	}
	run(t, ctx, "open the registry",
		chromedp.Navigate(g.url+"/ui/#/registry"),
		chromedp.WaitVisible(chromedp.CSS(`#registry tr[data-tool="refund.create_request"] td.rollout span[data-mode="shadow"]`)),
		waitText(`#registry tr[data-tool="refund.create_request"] td.rollout`, "2.1.0"),
		waitText(`#registry tr[data-tool="refund.create_request"] td.default`, "2.2.0"),
		waitText(`#registry tr[data-tool="payments.issue_refund"] td.rollout`, "stable"),
	)
	screenshot(t, ctx, "registry-rollouts")
	run(t, ctx, "open the tool's rollout",
		goTo("#/registry/refund.create_request"),
		chromedp.WaitVisible(chromedp.CSS("#shadow-failures tbody tr")),
		waitText("#shadow-summary", "3 calls validated, 3 would fail"),
		waitText("#shadow-failures", "Unknown argument approval_channel"),
		waitText("#shadow-failures", "anonymous (3)"),
		waitText("#rollout-default", "2.2.0"),
		waitText(`#rollout-history li[data-action="shadow"]`, "<b id=\"injected\">bold</b> check"),
		waitText(`#rollout-versions tr[data-version="2.1.0"]`, "candidate"),
	)
	screenshot(t, ctx, "registry-rollout")
	leaked, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById('injected') !== null || document.body.textContent.includes('secret-note-value') || document.body.textContent.includes('ord_uiroll001')`))
	if err != nil || leaked {
		t.Fatalf("the rollout view rendered markup or an argument value (%v)", err)
	}
	for _, p := range consoleProblems() {
		t.Errorf("the dashboard logged %s", p)
	}
}
