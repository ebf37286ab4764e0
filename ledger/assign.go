package ledger

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/toolgate/toolgate/internal/textsafe"
)

// Assignment: who works an action that needs a person (docs/operator-cli.md).
//
// An assignment is information, not a lock: it never changes an action's
// state, key or arguments, and it blocks no resolve, reconcile, approve or
// deny. It is kept in the action's history as entries whose Assignment field
// is set (self-edges, From == To, like provider transitions), so it needs no
// column of its own, is written by the same compare-and-set as every other
// change of the action (Store.Update on Rev) and so is atomic across
// replicas; the current assignee is the newest such entry.

// Bounds of assignments.
const (
	// MaxAssigneeBytes bounds an assignee's name.
	MaxAssigneeBytes = 128
	// MaxAssignmentNoteBytes bounds the note of one assignment change.
	MaxAssignmentNoteBytes = 1024
	// MaxAssignmentChanges is how many assignment entries one action's
	// history keeps. A change past it is recorded, and the oldest
	// assignment entries are dropped (compacted) so that the newest
	// MaxAssignmentChanges stay: a bound on the history, never a lock on
	// the action (AssignmentChange.Compacted counts what was dropped).
	MaxAssignmentChanges = 64
)

// AssignmentChange is the part of a history entry that records an
// assignment change: the new assignee ("" when released), the previous one
// ("" when there was none), whether it took the action over from another
// assignee, and the operator's note.
type AssignmentChange struct {
	Assignee string `json:"assignee"`
	Previous string `json:"previous,omitempty"`
	TakeOver bool   `json:"take_over,omitempty"`
	Note     string `json:"note,omitempty"`
	// Compacted is how many older assignment changes of the action had been
	// dropped from its history when this one was recorded, to keep the
	// newest MaxAssignmentChanges (0: none).
	Compacted int `json:"compacted,omitempty"`
}

// Assignment is who works an action now, and since when; the zero value
// means nobody.
type Assignment struct {
	Assignee string
	At       time.Time
	By       string // the history entry's By: "operator:<principal>"
}

// Assignable reports whether an action in state s may be assigned or
// released: one that waits for a person (unknown, needs_operator included,
// and awaiting_approval).
func Assignable(s State) bool { return s == Unknown || s == AwaitingApproval }

// Assignment returns who works a now: the newest assignment entry of its
// history (zero when there is none or it released the action).
func (a *Action) Assignment() Assignment {
	for i := len(a.History) - 1; i >= 0; i-- {
		if ch := a.History[i].Assignment; ch != nil {
			if ch.Assignee == "" {
				return Assignment{}
			}
			return Assignment{Assignee: ch.Assignee, At: a.History[i].At, By: a.History[i].By}
		}
	}
	return Assignment{}
}

// StateChange reports whether the entry records a move of the action's state
// (or its creation), not a note beside it (a provider transition or an
// assignment change).
func (t *Transition) StateChange() bool { return t.Provider == nil && t.Assignment == nil }

// AssignRequest is an operator's assignment change.
type AssignRequest struct {
	// Assignee takes the action; "" releases it.
	Assignee string
	// Principal is the operator making the change (history By).
	Principal string
	Note      string
	// TakeOver allows taking (or releasing) an action another assignee holds.
	TakeOver bool
}

// Errors of Service.Assign.
var (
	// ErrNotAssignable reports an action in a state that does not wait for
	// a person (see Assignable).
	ErrNotAssignable = errors.New("action is not assignable")
	// ErrAssignmentLimit is no longer returned: past MaxAssignmentChanges
	// the oldest assignment entries are compacted instead, so that a
	// bound never freezes an action on one assignee.
	ErrAssignmentLimit = errors.New("action has too many assignment changes")
)

// AssignedError reports an action another assignee holds, to a request
// without TakeOver.
type AssignedError struct {
	Current Assignment
}

func (e *AssignedError) Error() string {
	return fmt.Sprintf("action is assigned to %s since %s", e.Current.Assignee, e.Current.At.Format(time.RFC3339))
}

// CheckAssignText validates an assignee ("" allowed: a release) and a note:
// valid UTF-8 within their bounds, and an assignee that shows as itself (a
// *NameError otherwise): no control, format, bidi, zero-width or separator
// character (textsafe.CheckName), no white space at its ends. A note may
// hold any text; every place that shows one escapes it (textsafe).
func CheckAssignText(assignee, note string) error {
	switch {
	case len(assignee) > MaxAssigneeBytes:
		return fmt.Errorf("assignee is %d bytes, more than %d", len(assignee), MaxAssigneeBytes)
	case !utf8.ValidString(assignee):
		return errors.New("assignee is not valid UTF-8")
	case len(note) > MaxAssignmentNoteBytes:
		return fmt.Errorf("note is %d bytes, more than %d", len(note), MaxAssignmentNoteBytes)
	case !utf8.ValidString(note):
		return errors.New("note is not valid UTF-8")
	}
	if err := textsafe.CheckName(assignee); err != nil {
		return &NameError{Field: "assignee", Err: err}
	}
	if assignee != strings.TrimSpace(assignee) {
		return &NameError{Field: "assignee", Err: errors.New("starts or ends with white space")}
	}
	return nil
}

// NameError is a name (an assignee) that would not show as itself.
type NameError struct {
	Field string // the request field: "assignee"
	Err   error
}

func (e *NameError) Error() string { return e.Field + " " + e.Err.Error() }
func (e *NameError) Unwrap() error { return e.Err }

// Assign records an assignment change on a and stores it, a compare-and-set
// like every write: when another writer changed the action first, it is read
// again and the request judged anew, so of two operators racing to take an
// unassigned action one wins and the other gets *AssignedError. Assigning
// the current assignee again, or releasing an unassigned action, changes
// nothing (changed false). Taking or releasing an action another assignee
// holds needs r.TakeOver (else *AssignedError); releasing one's own
// (r.Principal is the assignee) does not. It returns ErrNotAssignable for a
// state that does not wait for a person. Past MaxAssignmentChanges the
// oldest assignment entries are dropped from the history (compactAssignments),
// so assign and release always work. The state, key, state moves of the
// history and everything else of a stay as they are.
func (s *Service) Assign(ctx context.Context, a *Action, r AssignRequest) (changed bool, err error) {
	if err := CheckAssignText(r.Assignee, r.Note); err != nil {
		return false, err
	}
	for try := 0; ; try++ {
		if !Assignable(a.State) {
			return false, ErrNotAssignable
		}
		cur := a.Assignment()
		if cur.Assignee == r.Assignee {
			return false, nil
		}
		if cur.Assignee != "" && !r.TakeOver && !(r.Assignee == "" && cur.Assignee == r.Principal) {
			return false, &AssignedError{Current: cur}
		}
		b := a.clone()
		now := s.now()
		ch := &AssignmentChange{Assignee: r.Assignee, Previous: cur.Assignee, Note: r.Note,
			TakeOver: cur.Assignee != "" && cur.Assignee != r.Principal && r.TakeOver}
		var dropped int
		b.History, ch.Compacted, dropped = compactAssignments(b.History, MaxAssignmentChanges-1)
		who := string(ByOperator)
		if r.Principal != "" {
			who += ":" + r.Principal
		}
		b.History = append(b.History, Transition{From: a.State, To: a.State, By: who, At: now,
			Reason: assignmentReason(ch, dropped), Assignment: ch})
		b.UpdatedAt = now
		err := s.write(ctx, a, b)
		if err == nil {
			return true, nil
		}
		if !errors.Is(err, ErrStale) || try > 3 {
			return false, err
		}
		fresh, gerr := s.Store.Get(ctx, a.Tenant, a.ID)
		if gerr != nil {
			return false, gerr
		}
		*a = *fresh
	}
}

// assignmentReason is the history entry's reason in words; dropped is how
// many old assignment entries this change compacted.
func assignmentReason(ch *AssignmentChange, dropped int) string {
	var s string
	switch {
	case ch.Assignee == "":
		s = "unassigned " + ch.Previous
	case ch.Previous == "":
		s = "assigned to " + ch.Assignee
	default:
		s = "assignment taken over from " + ch.Previous + " by " + ch.Assignee
	}
	if ch.Note != "" {
		s += ": " + ch.Note
	}
	if dropped > 0 {
		s += fmt.Sprintf(" (the history keeps the newest %d assignment changes; %d older ones compacted so far)", MaxAssignmentChanges, ch.Compacted)
	}
	return s
}

// compactAssignments returns h keeping at most keep of its assignment
// entries, the newest, and every other entry in order (h itself when
// nothing is dropped; else a new slice); compacted is how many assignment
// changes the action has lost so far, dropped those dropped now.
func compactAssignments(h []Transition, keep int) (out []Transition, compacted, dropped int) {
	n := 0
	for _, t := range h {
		if t.Assignment != nil {
			n++
			compacted = max(compacted, t.Assignment.Compacted)
		}
	}
	drop := n - keep
	if drop <= 0 {
		return h, compacted, 0
	}
	out = make([]Transition, 0, len(h)-drop+1)
	for _, t := range h {
		if t.Assignment != nil && dropped < drop {
			dropped++
			continue
		}
		out = append(out, t)
	}
	return out, compacted + dropped, dropped
}
