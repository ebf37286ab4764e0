package ledger

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"
)

// Bounds of provider transitions: an agent that flips between two routes on
// every retry must not grow an action's history without end.
const (
	// MaxProviderTransitions is how many provider transitions one action's
	// history records; later route changes are still reported to the caller
	// (and the decision log) but not stored.
	MaxProviderTransitions = 16
	// MaxProviderReasonBytes bounds the reason a call gives for its route
	// (the body's provider.reason); a longer one is cut at a UTF-8 boundary
	// and ends in "…".
	MaxProviderReasonBytes = 512
)

// ProviderRoute is the model provider and route one call came through.
type ProviderRoute struct {
	Name  string `json:"name,omitempty"`
	Route string `json:"route,omitempty"`
}

func (r ProviderRoute) String() string {
	switch {
	case r.Name == "" && r.Route == "":
		return "(none)"
	case r.Route == "":
		return r.Name
	case r.Name == "":
		return "/" + r.Route
	}
	return r.Name + "/" + r.Route
}

// ProviderTransition records that a call for an existing action came through
// another provider name or route than the last one recorded for it (a
// fallback model after a timeout, a failover between regions): the prior and
// the new route, the action's state at that moment and the reason the call
// gave. It shows that the route changed while the effect stayed bound to one
// action.
type ProviderTransition struct {
	From   ProviderRoute `json:"from"`
	To     ProviderRoute `json:"to"`
	State  State         `json:"action_state"`
	Reason string        `json:"reason,omitempty"`
}

// ProviderTransitionFor returns the transition a call with provider evidence
// pc (and reason) makes on a, or nil when it makes none: a has no provider
// call recorded yet, pc names neither a provider nor a route, the exact call
// is already recorded (a retry of it), or its name and route are the last
// recorded call's.
func ProviderTransitionFor(a *Action, pc ProviderCall, reason string) *ProviderTransition {
	if len(a.ProviderCalls) == 0 || (pc.Name == "" && pc.Route == "") {
		return nil
	}
	for _, old := range a.ProviderCalls {
		if old.CallID == pc.CallID && old.Name == pc.Name && old.Route == pc.Route {
			return nil
		}
	}
	last := a.ProviderCalls[len(a.ProviderCalls)-1]
	if last.Name == pc.Name && last.Route == pc.Route {
		return nil
	}
	return &ProviderTransition{
		From:   ProviderRoute{Name: last.Name, Route: last.Route},
		To:     ProviderRoute{Name: pc.Name, Route: pc.Route},
		State:  a.State,
		Reason: boundReason(reason),
	}
}

// NoteProviderTransition adds a provider transition to a's history for a call
// with provider evidence pc, before that evidence is stored
// (AddProviderCall): the entry is a self-edge (From == To == the action's
// state) whose Provider names both routes. It returns the transition the call
// made, nil for none; the entry is stored only while the history holds fewer
// than MaxProviderTransitions of them. A concurrent change of a is read again
// and judged anew.
func (s *Service) NoteProviderTransition(ctx context.Context, a *Action, pc ProviderCall, reason string) (*ProviderTransition, error) {
	for try := 0; ; try++ {
		pt := ProviderTransitionFor(a, pc, reason)
		if pt == nil || countProviderTransitions(a.History) >= MaxProviderTransitions {
			return pt, nil
		}
		b := a.clone()
		now := s.now()
		b.History = append(b.History, Transition{
			From: a.State, To: a.State, By: string(ByGateway), At: now, Provider: pt,
			Reason: providerReasonText(pt),
		})
		b.UpdatedAt = now
		err := s.write(ctx, a, b)
		if !errors.Is(err, ErrStale) || try > 3 {
			return pt, err
		}
		fresh, gerr := s.Store.Get(ctx, a.Tenant, a.ID)
		if gerr != nil {
			return pt, gerr
		}
		*a = *fresh
	}
}

// providerReasonText is the history entry's reason in words, for readers that
// do not know the provider_transition field.
func providerReasonText(pt *ProviderTransition) string {
	s := fmt.Sprintf("provider route changed from %s to %s while %s", pt.From, pt.To, pt.State)
	if pt.Reason != "" {
		s += ": " + pt.Reason
	}
	return s
}

func countProviderTransitions(h []Transition) int {
	n := 0
	for _, t := range h {
		if t.Provider != nil {
			n++
		}
	}
	return n
}

// boundReason cuts a reason to MaxProviderReasonBytes at a rune boundary and
// replaces invalid UTF-8.
func boundReason(s string) string {
	if !utf8.ValidString(s) {
		s = string([]rune(s)) // invalid bytes become U+FFFD
	}
	if len(s) <= MaxProviderReasonBytes {
		return s
	}
	cut := MaxProviderReasonBytes - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
