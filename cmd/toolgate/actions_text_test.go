package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/sandbox"
)

// An assignee that would not show as itself ("\u202eecila" shows as
// "alice") is refused; a note may hold anything, and show and list print
// every hidden character (bidi overrides, zero-width characters, line
// separators) as its escape, so no raw one reaches the terminal — also for
// an assignee stored before names were checked.
func TestActionsPrintHiddenCharactersEscaped(t *testing.T) {
	t.Parallel()
	g := startOpGateway(t)
	g.fault(sandbox.Fault{Path: "/refunds", Fault: "status_before", Status: 500})
	g.mustRefund("act-text-0001", 3000, 504)

	for _, name := range []string{"\u202eecila", "al\u200bice", "alice\u2028bob", "bob\u2066", "\ufeffcarol"} {
		r := g.cli("assign", "act-text-0001", "--assignee", name)
		if r.code == exitOK || !strings.Contains(r.stderr, "U+") {
			t.Errorf("assign %q: exit %d, %q; want refused naming the character", name, r.code, r.stderr)
		}
	}
	note := "checking \u202eKCAB LLAC\u202c with\u200b the PSP\u2028second line"
	g.cli("assign", "act-text-0001", "--note", note).want(t, exitOK)

	// An assignee stored before names were checked.
	ctx := context.Background()
	a, err := g.rt.svc.Store.Get(ctx, "acme", "act-text-0001")
	if err != nil {
		t.Fatal(err)
	}
	b := *a
	b.History = append(append([]ledger.Transition(nil), a.History...), ledger.Transition{From: a.State, To: a.State, By: "operator:oncall",
		At: time.Now().UTC(), Reason: "assigned to \u202eecila", Assignment: &ledger.AssignmentChange{Assignee: "\u202eecila", Previous: "oncall", TakeOver: true}})
	if err := g.rt.svc.Store.Update(ctx, &b); err != nil {
		t.Fatal(err)
	}

	refused := g.cli("assign", "act-text-0001").want(t, exitNegative).stderr
	if strings.Contains(refused, "\u202e") || !strings.Contains(refused, `assigned to \u202eecila`) {
		t.Errorf("a refusal naming the stored assignee: %q", refused)
	}
	show := g.cli("show", "act-text-0001").want(t, exitOK).stdout
	list := g.cli("list").want(t, exitOK).stdout
	for what, out := range map[string]string{"show": show, "list": list} {
		for _, raw := range []string{"\u202e", "\u202c", "\u200b", "\u2028"} {
			if strings.Contains(out, raw) {
				t.Errorf("%s prints %q raw:\n%q", what, raw, out)
			}
		}
		if !strings.Contains(out, `\u202eecila`) {
			t.Errorf("%s does not show the stored assignee escaped:\n%s", what, out)
		}
	}
	if !strings.Contains(show, `checking \u202eKCAB LLAC\u202c with\u200b the PSP\u2028second line`) {
		t.Errorf("show does not print the note escaped:\n%s", show)
	}
	// JSON carries the text as it is.
	rec := g.cli("show", "act-text-0001", "--format", "json").want(t, exitOK).record(t)
	if rec["assignee"] != "\u202eecila" {
		t.Errorf("the JSON record's assignee %q", rec["assignee"])
	}
}
