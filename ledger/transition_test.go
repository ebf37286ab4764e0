package ledger_test

import (
	"strings"
	"testing"

	"github.com/toolgate/toolgate/ledger"
)

func TestProviderTransitionFor(t *testing.T) {
	t.Parallel()
	primary := ledger.ProviderCall{Name: "openai", Route: "primary", CallID: "call_1"}
	tests := []struct {
		name     string
		recorded []ledger.ProviderCall
		call     ledger.ProviderCall
		want     string // "" for no transition, else "from -> to"
	}{
		{"nothing recorded", nil, primary, ""},
		{"same route, new call id", []ledger.ProviderCall{primary}, ledger.ProviderCall{Name: "openai", Route: "primary", CallID: "call_2"}, ""},
		{"exact call again", []ledger.ProviderCall{primary}, primary, ""},
		{"no name or route", []ledger.ProviderCall{primary}, ledger.ProviderCall{CallID: "call_9"}, ""},
		{"another route", []ledger.ProviderCall{primary}, ledger.ProviderCall{Name: "openai", Route: "fallback", CallID: "call_2"}, "openai/primary -> openai/fallback"},
		{"another provider", []ledger.ProviderCall{primary}, ledger.ProviderCall{Name: "anthropic", Route: "primary", CallID: "toolu_1"}, "openai/primary -> anthropic/primary"},
		{"a route where none was", []ledger.ProviderCall{{Name: "openai", CallID: "c"}}, ledger.ProviderCall{Name: "openai", Route: "eu", CallID: "d"}, "openai -> openai/eu"},
		{"back to an earlier route", []ledger.ProviderCall{primary, {Name: "anthropic", Route: "fallback", CallID: "t"}},
			ledger.ProviderCall{Name: "openai", Route: "primary", CallID: "call_3"}, "anthropic/fallback -> openai/primary"},
		{"a retry of an earlier call", []ledger.ProviderCall{primary, {Name: "anthropic", Route: "fallback", CallID: "t"}}, primary, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &ledger.Action{State: ledger.Running, ProviderCalls: tt.recorded}
			pt := ledger.ProviderTransitionFor(a, tt.call, "primary timed out")
			got := ""
			if pt != nil {
				got = pt.From.String() + " -> " + pt.To.String()
				if pt.State != ledger.Running || pt.Reason != "primary timed out" {
					t.Fatalf("transition %+v: want state running and the reason", pt)
				}
			}
			if got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestNoteProviderTransition(t *testing.T) {
	t.Parallel()
	s, _ := setup(t)
	a, _, err := s.Start(ctx, "acme", "fallback-1", ledger.StartSpec{ToolID: "refund", Version: "1.0.0", ArgsDigest: "sha256:aa",
		Arguments: []byte(`{}`), Provider: &ledger.ProviderCall{Name: "openai", Route: "primary", CallID: "call_1"}})
	if err != nil {
		t.Fatal(err)
	}
	fallback := ledger.ProviderCall{Name: "anthropic", Route: "fallback", CallID: "toolu_1"}
	pt, err := s.NoteProviderTransition(ctx, a, fallback, "primary timed out after 30s")
	if err != nil || pt == nil {
		t.Fatalf("NoteProviderTransition = %+v, %v", pt, err)
	}
	if err := s.AddProviderCall(ctx, a, fallback); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, "acme", "fallback-1")
	if err != nil {
		t.Fatal(err)
	}
	last := got.History[len(got.History)-1]
	if last.Provider == nil || last.From != ledger.Running || last.To != ledger.Running ||
		last.Provider.From.Route != "primary" || last.Provider.To.Name != "anthropic" || last.Provider.State != ledger.Running ||
		!strings.Contains(last.Reason, "openai/primary to anthropic/fallback while running: primary timed out") {
		t.Fatalf("history entry %+v (provider %+v)", last, last.Provider)
	}
	if got.State != ledger.Running || len(got.ProviderCalls) != 2 {
		t.Fatalf("state %s, %d provider calls: the transition must change neither", got.State, len(got.ProviderCalls))
	}
	// The same call again is a retry of it: no second entry.
	if pt, err := s.NoteProviderTransition(ctx, got, fallback, "again"); pt != nil || err != nil {
		t.Fatalf("a retry of the fallback call made %+v, %v", pt, err)
	}

	// Flipping routes on every call stops adding entries at the bound.
	routes := []string{"primary", "fallback"}
	for i := range 2 * ledger.MaxProviderTransitions {
		pc := ledger.ProviderCall{Name: "openai", Route: routes[i%2], CallID: "flip-" + string(rune('a'+i))}
		if _, err := s.NoteProviderTransition(ctx, got, pc, strings.Repeat("é", ledger.MaxProviderReasonBytes)); err != nil {
			t.Fatal(err)
		}
		if err := s.AddProviderCall(ctx, got, pc); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	for _, h := range got.History {
		if h.Provider != nil {
			n++
			if len(h.Provider.Reason) > ledger.MaxProviderReasonBytes {
				t.Fatalf("reason of %d bytes stored", len(h.Provider.Reason))
			}
		}
	}
	if n != ledger.MaxProviderTransitions {
		t.Fatalf("%d provider transitions stored, want the bound %d", n, ledger.MaxProviderTransitions)
	}
}
