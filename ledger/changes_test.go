package ledger

import (
	"testing"
	"time"
)

func TestChanges(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 14, 15, 9, 26, 535897932, time.UTC)
	base := func() *Action {
		return &Action{Tenant: "t", ID: "a", ToolID: "x", State: Pending, Rev: 3,
			Arguments: []byte(`{}`), CreatedAt: at, UpdatedAt: at,
			History: []Transition{{To: Prepared, Reason: "prepared", By: "gateway", At: at},
				{From: Prepared, To: Pending, Reason: "bound", By: "gateway", At: at}}}
	}
	tests := []struct {
		name   string
		change func(b *Action)
		want   Change
		tail   int
	}{
		{"nothing", func(b *Action) {}, 0, 0},
		{"same instant elsewhere", func(b *Action) { b.UpdatedAt = at.In(time.FixedZone("x", 3600)) }, 0, 0},
		{"claim", func(b *Action) {
			_ = b.Move(Running, ByGateway, "", "claimed", at.Add(time.Second))
			b.Attempts, b.LeaseOwner, b.LeaseUntil = 1, "g", at.Add(time.Minute)
		}, ChangeState | ChangeLease | ChangeUpdatedAt | ChangeHistoryAppended, 1},
		{"renew", func(b *Action) { b.LeaseUntil = at }, ChangeLease, 0},
		{"check", func(b *Action) { b.Checks++ }, ChangeCheck, 0},
		{"needs operator", func(b *Action) { b.NeedsOperator = true }, ChangeState, 0},
		{"args nil", func(b *Action) { b.Arguments = nil }, ChangeBinding, 0},
		{"args empty", func(b *Action) { b.Arguments = []byte{} }, ChangeBinding, 0},
		{"version", func(b *Action) { b.Version = "2" }, ChangeBinding, 0},
		{"result", func(b *Action) { b.Result = &Result{StatusCode: 200} }, ChangeResult, 0},
		{"provider", func(b *Action) { b.AddProviderCall(ProviderCall{Name: "n", At: at}) }, ChangeProvider, 0},
		{"omitted", func(b *Action) { b.ProviderCallsOmitted = 1 }, ChangeProvider, 0},
		{"attributes", func(b *Action) { b.Scope = "s" }, ChangeAttributes, 0},
		{"history entry changed", func(b *Action) { b.History[1].Reason = "other" }, ChangeHistoryRewritten, 0},
		{"history cut", func(b *Action) { b.History = b.History[:1] }, ChangeHistoryRewritten, 0},
		{"history rewritten and longer", func(b *Action) {
			b.History[0].By = "operator"
			b.History = append(b.History, Transition{To: Pending, At: at})
		}, ChangeHistoryRewritten, 0},
		{"assignment appended", func(b *Action) {
			b.History = append(b.History, Transition{From: Pending, To: Pending, At: at, Assignment: &AssignmentChange{Assignee: "ann"}})
		}, ChangeHistoryAppended, 1},
		{"other revision", func(b *Action) { b.Rev++ }, ChangeAll, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prev := base()
			b := prev.clone()
			b.History = append([]Transition(nil), prev.History...) // the cases change entries in place
			tt.change(b)
			if got := Changes(prev, b); got != tt.want {
				t.Errorf("Changes = %b, want %b", got, tt.want)
			}
			if got := AppendedHistory(prev, b); len(got) != tt.tail {
				t.Errorf("AppendedHistory has %d entries, want %d", len(got), tt.tail)
			}
		})
	}
	if Changes(nil, base()) != ChangeAll {
		t.Error("Changes(nil, a) is not ChangeAll")
	}
}

func TestSameTransitionComparesNotes(t *testing.T) {
	t.Parallel()
	p := Transition{To: Pending, Provider: &ProviderTransition{Reason: "r"}}
	q := p
	q.Provider = &ProviderTransition{Reason: "r"}
	if !SameTransition(&p, &q) {
		t.Error("equal provider transitions at two addresses differ")
	}
	q.Provider = &ProviderTransition{Reason: "s"}
	if SameTransition(&p, &q) {
		t.Error("different provider transitions are the same")
	}
	q.Provider, q.Assignment = p.Provider, &AssignmentChange{}
	if SameTransition(&p, &q) {
		t.Error("an assignment note is not seen")
	}
}
