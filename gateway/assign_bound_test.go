package gateway_test

import (
	"fmt"
	"testing"
)

// One operator spends far more than an action's bounded assignment history
// (64 entries) in a burst and leaves it on an assignee of their choice; the
// action stays re-assignable: a release and a new assignment go through,
// the history stays bounded, and the released action counts as unassigned
// for the alert (toolgate_oldest_unassigned_unknown_age_seconds).
func TestAssignmentBurstDoesNotFreezeAnAction(t *testing.T) {
	t.Parallel()
	g := newRig(t)
	g.unknownAction("assign-burst-0001")
	const id = "/v1/actions/assign-burst-0001"
	for i := range 80 {
		r := g.do("POST", id+"/assign", fmt.Sprintf(`{"assignee":"mallory-%d","take_over":true}`, i))
		if r.status != 200 {
			t.Fatalf("change %d: %d %s", i, r.status, r.body)
		}
	}
	refund := map[string]string{"tool_id": "payments.issue_refund", "owner": "payment-platform"}
	if got := g.series("toolgate_oldest_unassigned_unknown_age_seconds", refund); got != 0 {
		t.Fatalf("unassigned age %v while mallory-79 holds the action", got)
	}
	if r := g.do("POST", id+"/unassign", `{"take_over":true,"note":"not yours"}`); r.status != 200 {
		t.Fatalf("release after the burst: %d %s", r.status, r.body)
	}
	a := g.action("assign-burst-0001")
	if a["assignee"] != nil && a["assignee"] != "" {
		t.Fatalf("after the release the assignee is %v", a["assignee"])
	}
	if got := g.series("toolgate_oldest_unassigned_unknown_age_seconds", refund); got <= 0 {
		t.Errorf("the released action does not count as unassigned: %v", got)
	}
	if r := g.do("POST", id+"/assign", `{"assignee":"carol"}`); r.status != 200 {
		t.Fatalf("assign after the burst: %d %s", r.status, r.body)
	}
	a = g.action("assign-burst-0001")
	n := 0
	for _, h := range a["history"].([]any) {
		if h.(map[string]any)["assignment"] != nil {
			n++
		}
	}
	if a["assignee"] != "carol" || a["state"] != "unknown" || n != 64 {
		t.Fatalf("assignee %v, state %v, %d assignment entries; want carol, unknown, 64", a["assignee"], a["state"], n)
	}
}
