package main

import (
	"strings"
	"testing"

	"github.com/toolgate/toolgate/sandbox"
)

// TestActionsAssign takes an unknown action, is refused a second time by
// another operator, takes it over, releases it, and sees the owner and
// assignee in list and show; resolving is not blocked by an assignment.
func TestActionsAssign(t *testing.T) {
	t.Parallel()
	g := startOpGateway(t)
	g.fault(sandbox.Fault{Path: "/refunds", Fault: "status_before", Status: 500})
	g.mustRefund("act-assign-0001", 3000, 504)

	rec := g.cli("assign", "act-assign-0001", "--note", "checking the PSP", "--format", "json").want(t, exitOK).record(t)
	if rec["assignee"] != "oncall" || rec["state"] != "unknown" || rec["owner"] != "payment-platform" {
		t.Fatalf("assign: %v", rec)
	}
	h := actionsHistory(rec)
	if last := h[len(h)-1]; last != "unknown>unknown operator:oncall: assigned to oncall: checking the PSP" {
		t.Fatalf("history entry %q", last)
	}
	actionsGolden(t, "show_assigned", g.cli("show", "act-assign-0001").want(t, exitOK).stdout)
	actionsGolden(t, "list_assigned", g.cli("list").want(t, exitOK).stdout)

	// Taking it for another assignee is refused without --take-over.
	r := g.cli("assign", "act-assign-0001", "--assignee", "bob").want(t, exitNegative)
	if !strings.HasPrefix(r.stderr, "action_assigned: ") || !strings.Contains(r.stderr, "oncall") || !strings.Contains(r.stderr, "--take-over") {
		t.Fatalf("refusal: %q", r.stderr)
	}
	rec = g.cli("assign", "act-assign-0001", "--assignee", "bob", "--take-over", "--format", "json").want(t, exitOK).record(t)
	if rec["assignee"] != "bob" {
		t.Fatalf("take over: %v", rec)
	}
	g.cli("unassign", "act-assign-0001").want(t, exitNegative)
	rec = g.cli("unassign", "act-assign-0001", "--take-over", "--note", "bob is off", "--format", "json").want(t, exitOK).record(t)
	if rec["assignee"] != nil {
		t.Fatalf("unassign: %v", rec)
	}

	// Usage errors never reach the gateway.
	g.cli("assign", "act-assign-0001", "--note", strings.Repeat("x", 1025)).want(t, exitUsage)
	g.cli("assign").want(t, exitUsage)

	// Not a lock: resolved while assigned; then not assignable.
	g.cli("assign", "act-assign-0001").want(t, exitOK)
	g.cli("resolve", "act-assign-0001", "--outcome", "succeeded", "--note", "PSP shows it").want(t, exitOK)
	r = g.cli("assign", "act-assign-0001", "--take-over").want(t, exitNegative)
	if !strings.HasPrefix(r.stderr, "action_not_assignable: ") {
		t.Fatalf("assign a succeeded action: %q", r.stderr)
	}
}
