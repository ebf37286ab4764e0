package gateway_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The dashboard's assignment buttons, clicked in real Chromium: assign to
// me on the Unknown page, a refusal when someone else holds the action, a
// take-over, the owner and assignee on the Action page with the history
// entry, and a release. The state never changes.
func TestDashboardAssignInChromium(t *testing.T) {
	t.Parallel()
	ctx, consoleProblems := browser(t, 60*time.Second)
	g := newRig(t, withUIKeys)
	agent, operator := auth(uiAgentKey), auth(uiOperatorKey)
	for _, key := range []string{"ui-assign-0001", "ui-assign-0002"} {
		g.fault(sandboxFault500())
		g.refund(key, okArgs, agent...).wantProblem(t, 504, "outcome_unknown")
	}
	// Someone else took the second one, with a note that holds markup.
	if r := g.do("POST", "/v1/actions/ui-assign-0002/assign", `{"assignee":"bob","note":"mine <img src=x onerror=alert(1)>"}`, operator...); r.status != 200 {
		t.Fatalf("assign to bob: %d %s", r.status, r.body)
	}

	run(t, ctx, "sign in",
		chromedp.Navigate(g.url+"/ui/"),
		chromedp.WaitVisible(chromedp.CSS("#login-form")),
		chromedp.SendKeys(chromedp.CSS("#key"), uiOperatorKey),
		chromedp.Click(chromedp.CSS("#login-submit")),
		waitText("#who", "acme-oncall"),
	)
	row1, row2 := `tr[data-action="ui-assign-0001"] `, `tr[data-action="ui-assign-0002"] `
	run(t, ctx, "open the unknown queue",
		goTo("#/unknown"),
		chromedp.WaitVisible(chromedp.CSS(row1+"button.assign")),
		waitText(row1+"td.owner", "payment-platform"),
		waitText(row1+".assignee", "nobody"),
		waitText(row2+".assignee", "bob"),
	)
	screenshot(t, ctx, "unknown-assign")
	run(t, ctx, "assign ui-assign-0001 to me",
		chromedp.SendKeys(chromedp.CSS(row1+"input.assign-note"), "on it"),
		chromedp.Click(chromedp.CSS(row1+"button.assign")),
		waitText("#flash-msg", "ui-assign-0001: assigned to acme-oncall; the action is still unknown"),
		chromedp.WaitVisible(chromedp.CSS(row1+"button.unassign")),
		waitText(row1+".assignee", "acme-oncall"),
	)
	a := g.do("GET", "/v1/actions/ui-assign-0001", "", operator...).json(t)
	if a["assignee"] != "acme-oncall" || a["state"] != "unknown" {
		t.Fatalf("after the click: assignee %v state %v", a["assignee"], a["state"])
	}
	run(t, ctx, "assign bob's action: refused",
		chromedp.Click(chromedp.CSS(row2+"button.assign")),
		waitText("#flash-msg", "is assigned to bob"),
		chromedp.WaitVisible(chromedp.CSS(row2+"button.take-over")),
	)
	run(t, ctx, "take bob's action over",
		chromedp.Click(chromedp.CSS(row2+"button.take-over")),
		waitText("#flash-msg", "ui-assign-0002: assigned to acme-oncall"),
		waitText(row2+".assignee", "acme-oncall"),
	)

	run(t, ctx, "the action's page",
		goTo("#/actions/ui-assign-0002"),
		waitText("#owner", "payment-platform"),
		waitText("#assignee", "acme-oncall"),
		waitText("#timeline li.assignment-change", "Assigned to bob"),
		waitText("#timeline", "Taken over by acme-oncall from bob"),
		waitText("#timeline", "mine <img src=x onerror=alert(1)>"), // the note as text, not markup
	)
	if n := count(t, ctx, "#timeline img"); n != 0 {
		t.Fatalf("the note became markup: %d img elements in the timeline", n)
	}
	screenshot(t, ctx, "action-assigned")
	run(t, ctx, "release it",
		chromedp.Click(chromedp.CSS("#ops button.unassign")),
		waitText("#flash-msg", "ui-assign-0002: nobody is assigned"),
		waitText("#assignee", "nobody"),
		waitText("#timeline", "Released by acme-oncall"),
	)
	if a := g.do("GET", "/v1/actions/ui-assign-0002", "", operator...).json(t); a["assignee"] != nil || a["state"] != "unknown" {
		t.Fatalf("after the release: assignee %v state %v", a["assignee"], a["state"])
	}
	for _, p := range consoleProblems() {
		if strings.Contains(p, "409") { // the refused assignment, shown in the flash
			continue
		}
		t.Errorf("the dashboard logged %s", p)
	}
}
