package gateway_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/toolgate/toolgate/internal/textsafe"
	"github.com/toolgate/toolgate/ledger"
)

// hiddenSamples hold characters that do not show as themselves, and some
// that do.
var hiddenSamples = []string{
	"\u202eecila", "al\u200bice\u200d", "a\u2028b\u2029c\u0085d", "a\nb\x1b[31mc\td\x07", "no\u00a0break\u3164",
	"\u2066isolate\u2069 \u200e\u200f\u061c", "\ufeffbom", "José ✓ 日本", "tag\U000E0041", "plain",
}

// Assignee and note text that holds bidi overrides, zero-width characters
// and line separators shows in real Chromium as what it holds: every hidden
// character as its escape (the CLI's, internal/textsafe's rule, checked
// against it here) inside <bdi dir="auto">, on the Action and Unknown
// pages, the timeline and the flash message; nothing reverses the text
// beside it. The JSON record keeps the text as it is.
func TestDashboardShowsHiddenCharactersEscaped(t *testing.T) {
	t.Parallel()
	ctx, consoleProblems := browser(t, 60*time.Second)
	g := newRig(t, withUIKeys)
	agent, operator := auth(uiAgentKey), auth(uiOperatorKey)
	g.fault(sandboxFault500())
	g.refund("ui-text-0001", okArgs, agent...).wantProblem(t, 504, "outcome_unknown")
	note := "checking \u202eKCAB LLAC\u202c with\u200b the PSP\u2028second line"
	noteJSON, _ := json.Marshal(note)
	if r := g.do("POST", "/v1/actions/ui-text-0001/assign", `{"assignee":"bob","note":`+string(noteJSON)+`}`, operator...); r.status != 200 {
		t.Fatalf("assign with a note: %d %s", r.status, r.body)
	}
	// An assignee stored before names were checked.
	a, err := g.svc.Store.Get(context.Background(), "acme", "ui-text-0001")
	if err != nil {
		t.Fatal(err)
	}
	b := *a
	b.History = append(append([]ledger.Transition(nil), a.History...), ledger.Transition{From: a.State, To: a.State, By: "operator:acme-oncall",
		At: time.Now().UTC(), Reason: "assignment taken over from bob by \u202eecila", Assignment: &ledger.AssignmentChange{Assignee: "\u202eecila", Previous: "bob", TakeOver: true}})
	if err := g.svc.Store.Update(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	if rec := g.do("GET", "/v1/actions/ui-text-0001", "", operator...).json(t); rec["assignee"] != "\u202eecila" {
		t.Fatalf("the JSON record's assignee %q", rec["assignee"])
	}

	run(t, ctx, "sign in",
		chromedp.Navigate(g.url+"/ui/"),
		chromedp.WaitVisible(chromedp.CSS("#login-form")),
		chromedp.SendKeys(chromedp.CSS("#key"), uiOperatorKey),
		chromedp.Click(chromedp.CSS("#login-submit")),
		waitText("#who", "acme-oncall"),
	)
	noHidden := `(() => {
		const out = [];
		const walk = document.createTreeWalker(document.getElementById('page'), NodeFilter.SHOW_TEXT);
		for (let n = walk.nextNode(); n; n = walk.nextNode()) {
			const m = n.data.match(/[\u202a-\u202e\u2066-\u2069\u200b-\u200f\u2028\u2029\u061c\ufeff]/u);
			if (m) out.push(JSON.stringify(n.data));
		}
		return out.join('\n');
	})()`
	check := func(page string) {
		t.Helper()
		got, err := chromedp.Run(ctx, chromedp.Evaluate[string](noHidden))
		if err != nil {
			t.Fatal(err)
		}
		if got != "" {
			t.Errorf("%s shows hidden characters raw:\n%s", page, got)
		}
	}
	run(t, ctx, "the action's page",
		goTo("#/actions/ui-text-0001"),
		waitText("#assignee", `\u202eecila`),
		waitText("#timeline", `checking \u202eKCAB LLAC\u202c with\u200b the PSP\u2028second line`),
		waitText("#timeline", `Taken over by \u202eecila from bob`),
	)
	check("the action's page")
	if n := count(t, ctx, `#assignee bdi[dir="auto"]`); n != 1 {
		t.Errorf("the assignee is in %d <bdi dir=auto> elements, want 1", n)
	}
	if n := count(t, ctx, `#timeline .note bdi[dir="auto"]`); n != 1 {
		t.Errorf("the note is in %d <bdi dir=auto> elements, want 1", n)
	}
	screenshot(t, ctx, "hidden-characters")
	row := `tr[data-action="ui-text-0001"] `
	run(t, ctx, "the unknown queue",
		goTo("#/unknown"),
		waitText(row+".assignee", `\u202eecila`),
	)
	check("the unknown queue")
	run(t, ctx, "the actions list",
		goTo("#/actions"),
		waitText(row+".assignee", `\u202eecila`),
	)
	check("the actions list")
	run(t, ctx, "take it over",
		goTo("#/unknown"),
		chromedp.WaitVisible(chromedp.CSS(row+"button.take-over")),
		chromedp.Click(chromedp.CSS(row+"button.take-over")),
		waitText("#flash-msg", "assigned to acme-oncall"),
	)
	if body, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`)); err != nil || strings.ContainsAny(body, "\u202e\u200b\u2028") {
		t.Errorf("the page shows hidden characters raw: %v %q", err, body)
	}
	// One rule: the dashboard's escapes are the CLI's.
	for _, s := range hiddenSamples {
		arg, _ := json.Marshal(s)
		got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`escapeHidden(`+string(arg)+`)`))
		if err != nil {
			t.Fatal(err)
		}
		if want := textsafe.Escape(s); got != want {
			t.Errorf("escapeHidden(%q) = %q, textsafe.Escape = %q", s, got, want)
		}
	}
	for _, p := range consoleProblems() {
		t.Errorf("the dashboard logged %s", p)
	}
}
