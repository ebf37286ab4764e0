package gateway_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/toolgate/toolgate/gateway/gatewaytest"
)

// TestDashboardRendersStoredDataAsText stores markup in every place a call
// or an operator can put text — the action id, arguments, a downstream's
// result, the correlation id, provider evidence, operator notes — and opens
// every dashboard page on it in real Chromium: the markup shows as text,
// nothing of it runs, and the page logs no CSP violation.
func TestDashboardRendersStoredDataAsText(t *testing.T) {
	t.Parallel()
	ctx, consoleProblems := browser(t, 60*time.Second)
	s := newSecRig(t, nil, func(c *gatewaytest.Config, s *secRig) {
		b := c.Bindings["vault.audit"]
		b.RequireApproval = true
		c.Bindings["vault.audit"] = b
	})
	id := xssPayloads[0]
	provider, _ := json.Marshal(map[string]string{"name": xssPayloads[3], "route": xssPayloads[1], "call_id": xssPayloads[2]})
	audit := func(key, subject string) {
		t.Helper()
		body := `{"arguments":{"subject":` + mustJSON(t, subject) + `},"provider":` + string(provider) + `}`
		if r := s.do("POST", "/v1/tools/vault.audit/calls", body, "Authorization", "Bearer "+secAgentAll,
			"Idempotency-Key", key, "X-Correlation-ID", xssPayloads[2]); r.status != 202 {
			t.Fatalf("audit %s: %d %s", key, r.status, r.body)
		}
	}
	audit(id, xssPayloads[1])
	audit("xss-approved-01", xssPayloads[2])
	audit("xss-denied-001", xssPayloads[3])
	op := []string{"Authorization", "Bearer " + secOncallAll}
	for key, move := range map[string]string{"xss-approved-01": "approve", "xss-denied-001": "deny"} {
		if r := s.do("POST", "/v1/actions/"+key+"/"+move, `{"note":`+mustJSON(t, xssPayloads[1])+`}`, op...); r.status != 200 {
			t.Fatalf("%s %s: %d %s", move, key, r.status, r.body)
		}
	}
	// A result that carries markup (the downstream answers "pin":"PIN"+note; note is not sensitive in 1.0.0).
	if r := s.deposit(secAgentAll, "xss-deposit-01", `{"version":"1.0.0","arguments":{"account":"a-1","amount":5,"note":`+mustJSON(t, xssPayloads[1])+`}}`); r.status != 201 {
		t.Fatalf("deposit: %d %s", r.status, r.body)
	}

	run(t, ctx, "sign in",
		chromedp.Navigate(s.url+"/ui/"),
		chromedp.WaitVisible(chromedp.CSS("#login-form")),
		chromedp.SendKeys(chromedp.CSS("#key"), secOncallAll),
		chromedp.Click(chromedp.CSS("#login-submit")),
		chromedp.WaitVisible(chromedp.CSS("#nav")),
	)
	pages := []struct{ hash, wait, text string }{
		{"#/actions", "#actions tbody tr", xssPayloads[0]},
		{"#/actions/" + urlFragment(id), "#timeline li", xssPayloads[3]},
		{"#/actions/xss-approved-01", "#timeline li", xssPayloads[1]},
		{"#/actions/xss-deposit-01", "#result", xssPayloads[1]},
		{"#/approvals", "#approvals-queue tr", xssPayloads[1]},
		{"#/unknown", "#unknown-empty", ""},
		{"#/health", "#totals", ""},
		{"#/registry", "#page", ""},
	}
	for _, p := range pages {
		run(t, ctx, "open "+p.hash, goTo(p.hash), chromedp.WaitVisible(chromedp.CSS(p.wait)))
		if p.text != "" {
			run(t, ctx, "wait for the stored text on "+p.hash, waitText("#page", p.text))
		}
		run(t, ctx, "let scripts run", chromedp.Sleep(100*time.Millisecond))
		check := `(() => {
			const bad = [];
			if (window.__xss !== undefined) bad.push('window.__xss = ' + window.__xss);
			for (const n of document.querySelectorAll('img, svg[onload], [onerror], [onload], iframe, object, embed')) bad.push(n.outerHTML.slice(0, 80));
			for (const n of document.scripts) if (!n.src.endsWith('/ui/app.js')) bad.push('script ' + n.outerHTML.slice(0, 80));
			for (const a of document.querySelectorAll('a[href]')) if (a.getAttribute('href').toLowerCase().startsWith('javascript:')) bad.push('link ' + a.outerHTML.slice(0, 80));
			return bad.join('\n');
		})()`
		got, err := chromedp.Run(ctx, chromedp.Evaluate[string](check))
		if err != nil {
			t.Fatal(err)
		}
		if got != "" {
			t.Errorf("%s: stored markup became markup:\n%s", p.hash, got)
		}
	}
	screenshot(t, ctx, "xss-as-text")
	for _, p := range consoleProblems() {
		t.Errorf("the dashboard logged %s", p)
	}
}

// urlFragment escapes an action id for the dashboard's #/actions/ID route.
func urlFragment(id string) string {
	var b strings.Builder
	for _, c := range []byte(id) {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-_.~", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}
