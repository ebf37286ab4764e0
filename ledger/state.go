package ledger

import (
	"fmt"
	"time"
)

// State is where an action stands in its life (docs/reference/states.md).
type State string

// The states of an action.
const (
	Prepared         State = "prepared"          // created by PUT /v1/actions/{id}, no arguments bound yet
	Pending          State = "pending"           // arguments bound, may be claimed
	AwaitingApproval State = "awaiting_approval" // parked until an operator approves or denies
	Running          State = "running"           // claimed; its downstream request may be in flight
	Succeeded        State = "succeeded"         // terminal: the downstream did it
	Rejected         State = "rejected"          // terminal: the downstream (or an operator) refused it
	Unknown          State = "unknown"           // the request may or may not have taken effect
)

// States lists every state, in life-cycle order.
var States = []State{Prepared, Pending, AwaitingApproval, Running, Succeeded, Rejected, Unknown}

// Terminal reports whether no transition leaves s.
func (s State) Terminal() bool { return s == Succeeded || s == Rejected }

// Valid reports whether s is one of States.
func (s State) Valid() bool {
	for _, v := range States {
		if v == s {
			return true
		}
	}
	return false
}

// Actor is who causes a transition.
type Actor string

// The actors that move actions.
const (
	ByGateway    Actor = "gateway"    // a call being handled
	ByReconciler Actor = "reconciler" // the background lookup and lease watcher
	ByOperator   Actor = "operator"   // a person, through the operator API
)

type edge struct{ from, to State }

// allowed is the whole state machine: each edge and the actors that may take it.
// A self-edge on unknown records that reconciliation gave up (needs_operator); a
// self-edge on pending records an operator granting a fresh set of attempts.
var allowed = map[edge][]Actor{
	{Prepared, Pending}:          {ByGateway},
	{Pending, Running}:           {ByGateway},
	{Pending, AwaitingApproval}:  {ByGateway},
	{AwaitingApproval, Pending}:  {ByOperator},
	{AwaitingApproval, Rejected}: {ByOperator},
	{Running, Succeeded}:         {ByGateway},
	{Running, Rejected}:          {ByGateway},
	{Running, Unknown}:           {ByGateway, ByReconciler},
	{Running, Pending}:           {ByGateway},
	{Unknown, Succeeded}:         {ByReconciler, ByOperator},
	{Unknown, Rejected}:          {ByReconciler, ByOperator},
	{Unknown, Pending}:           {ByReconciler, ByOperator},
	{Unknown, Unknown}:           {ByReconciler},
	{Pending, Succeeded}:         {ByOperator},
	{Pending, Rejected}:          {ByOperator},
	{Pending, Pending}:           {ByOperator},
}

// CanTransition reports whether actor may move an action from one state to another.
func CanTransition(from, to State, by Actor) bool {
	for _, a := range allowed[edge{from, to}] {
		if a == by {
			return true
		}
	}
	return false
}

// Transition is one entry of an action's history.
type Transition struct {
	From   State     `json:"from"`
	To     State     `json:"to"`
	Reason string    `json:"reason"`
	By     string    `json:"by"` // the actor, with a principal where one is known ("operator:oncall")
	At     time.Time `json:"at"`
	// Provider is set on a provider transition: an entry that records a
	// change of model route, not of state (From == To). See
	// Service.NoteProviderTransition.
	Provider *ProviderTransition `json:"provider_transition,omitempty"`
	// Assignment is set on an assignment change: an entry that records who
	// works the action, not a change of state (From == To). See
	// Service.Assign.
	Assignment *AssignmentChange `json:"assignment,omitempty"`
}

// TransitionError reports a move the state machine forbids.
type TransitionError struct {
	From, To State
	By       Actor
}

func (e *TransitionError) Error() string {
	return fmt.Sprintf("transition %s -> %s is not allowed for %s", e.From, e.To, e.By)
}

// Move changes a's state to to, recording who did it and why in its history. It
// changes nothing and returns a *TransitionError when the state machine forbids the
// move. principal, when not empty, is recorded after the actor ("operator:oncall").
func (a *Action) Move(to State, by Actor, principal, reason string, at time.Time) error {
	if !CanTransition(a.State, to, by) {
		return &TransitionError{From: a.State, To: to, By: by}
	}
	who := string(by)
	if principal != "" {
		who += ":" + principal
	}
	a.History = append(a.History, Transition{From: a.State, To: to, Reason: reason, By: who, At: at.UTC()})
	a.State = to
	a.UpdatedAt = at.UTC()
	switch to {
	case Unknown:
		if a.UnknownSince.IsZero() {
			a.UnknownSince = at.UTC()
		}
	default:
		a.UnknownSince = time.Time{}
		a.NeedsOperator = false
		a.Checks = 0
		a.NextCheckAt = time.Time{}
	}
	if to != Running {
		a.LeaseOwner, a.LeaseUntil = "", time.Time{}
	}
	return nil
}
