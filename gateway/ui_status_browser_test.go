package gateway_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/toolgate/toolgate/gateway/gatewaytest"
)

// TestDashboardFirstPaintInChromium: with scripts off, the page the server
// sends already shows the title, the navigation and what happens next.
func TestDashboardFirstPaintInChromium(t *testing.T) {
	t.Parallel()
	ctx, _ := browserWith(t, 40*time.Second, chromedp.Flag("blink-settings", "scriptEnabled=false"))
	g := newRig(t, withUIKeys)
	run(t, ctx, "open the dashboard without scripts",
		chromedp.Navigate(g.url+"/ui/"),
		chromedp.WaitVisible(chromedp.CSS("#loading")),
	)
	screenshot(t, ctx, "first-paint")
	got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[
		document.title,
		document.getElementById('nav').offsetParent !== null ? [...document.querySelectorAll('#nav a')].map(a => a.textContent).join('|') : 'nav hidden',
		document.getElementById('loading').innerText,
		document.getElementById('who').textContent === '' && document.getElementById('login').hidden ? 'no script ran' : 'a script ran',
	]`))
	if err != nil || len(got) != 4 {
		t.Fatalf("first paint: %v (%v)", got, err)
	}
	if got[0] != "toolgate dashboard" {
		t.Errorf("title %q", got[0])
	}
	if got[1] != "Actions|Unknown|Approvals|Conflicts, 422 & volume|Registry|Status" {
		t.Errorf("navigation %q", got[1])
	}
	for _, want := range []string{"Loading", "operator API key"} {
		if !contains(got[2], want) {
			t.Errorf("the loading text %q does not say %q", got[2], want)
		}
	}
	if got[3] != "no script ran" {
		t.Errorf("scripts were not off: %s", got[3])
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// TestDashboardStatusInChromium: the status page shows the health summary and
// every tool's rollout, with the counts an operator scans for.
func TestDashboardStatusInChromium(t *testing.T) {
	t.Parallel()
	ctx, consoleProblems := browser(t, 60*time.Second)
	g := newRig(t, func(c *gatewaytest.Config) {
		c.Drift = func(id string) string {
			if id == "payments.issue_refund" {
				return "upstream removed issue_refund <i id=\"injected\">x</i>"
			}
			return ""
		}
	})
	if r := g.do("POST", "/v1/rollouts/refund.create_request/canary", `{"version":"2.1.0","percent":10}`); r.status != 200 {
		t.Fatalf("canary: %d %s", r.status, r.body)
	}
	run(t, ctx, "open the status page",
		chromedp.Navigate(g.url+"/ui/#/status"),
		chromedp.WaitVisible(chromedp.CSS("#health-summary")),
		waitText("#h-ledger", "reachable"),
		waitText("#h-reload", "ok"),
		waitText("#h-drift", "1 stopped"),
		waitText(`#h-drift div[data-tool="payments.issue_refund"]`, `upstream removed issue_refund <i id="injected">x</i>`),
		waitText("#h-dlog", "no drops"),
		waitText(`#rollouts-overview tr[data-tool="refund.create_request"] td.mode`, "canary"),
		waitText("#n-canary", "1"),
		waitText("#n-halted", "0"),
	)
	screenshot(t, ctx, "status")
	if n := count(t, ctx, "#injected"); n != 0 {
		t.Errorf("a drift reason became markup")
	}
	// Halting the canary shows on the next refresh; a failed reload too.
	if r := g.do("POST", "/v1/rollouts/refund.create_request/halt", `{}`); r.status != 200 {
		t.Fatalf("halt: %d %s", r.status, r.body)
	}
	g.server.ReloadFailed(errTest("contract refund.create_request v2.3.0: not JSON"))
	run(t, ctx, "see the halt and the failed reload",
		waitText("#n-halted", "1"),
		waitText("#n-canary", "0"),
		waitText(`#rollouts-overview tr[data-tool="refund.create_request"] td.mode`, "halted"),
		waitText("#h-reload", "failed"),
		waitText("#h-reload", "v2.3.0: not JSON"),
	)
	screenshot(t, ctx, "status-halted")
	for _, p := range consoleProblems() {
		t.Errorf("the dashboard logged %s", p)
	}
}

type errTest string

func (e errTest) Error() string { return string(e) }
