package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"math/bits"
	"strings"
	"sync"
	"time"

	"github.com/toolgate/toolgate/ledger"
)

// Narrow updates.
//
// A completion changes a handful of columns (state, lease, result, history,
// updated_at, rev) of a row of 26. Update binds every updatable column, so
// SQLite copies the arguments blob into the statement and re-evaluates the
// entries of every index over a column in the SET list (the policy and
// correlation indexes among them) although nothing there moved.
// UpdateChanged sets only the columns on which the new action differs from
// the one stored at its revision: one prepared statement per set of changed
// columns, made the first time it is needed. The lifecycle of an action uses
// a few such sets; past maxNarrow of them a write falls back to the full
// Update statement, so the cache stays bounded.

// setCols are the columns Update sets, in updateSQL's order; bit i of a
// change mask stands for setCols[i].
var setCols = [...]string{
	"version", "state", "needs_operator", "args_digest", "arguments",
	"attempts", "lease_owner", "lease_until", "last_sent_at", "unknown_since",
	"next_check_at", "checks", "result_status", "result_content_type", "result_body",
	"provider_calls", "correlation_id", "scope", "policy_version",
	"updated_at", "history", "rev",
}

const (
	colVersion = iota
	colState
	colNeedsOperator
	colArgsDigest
	colArguments
	colAttempts
	colLeaseOwner
	colLeaseUntil
	colLastSentAt
	colUnknownSince
	colNextCheckAt
	colChecks
	colResultStatus
	colResultContentType
	colResultBody
	colProviderCalls
	colCorrelationID
	colScope
	colPolicyVersion
	colUpdatedAt
	colHistory
	colRev
	nSetCols
)

// maxNarrow bounds the prepared narrow statements of one store.
const maxNarrow = 32

// narrowStmts caches the prepared narrow UPDATE per change mask.
type narrowStmts struct {
	mu sync.Mutex
	m  map[uint32]*sql.Stmt
}

// UpdateChanged is Update writing only the columns on which a differs from
// prev, the action as stored at revision a.Rev (ledger.ChangeUpdater). When
// prev is not at a.Rev it is Update.
func (s *Store) UpdateChanged(ctx context.Context, prev, a *ledger.Action) error {
	if prev == nil || prev.Rev != a.Rev || prev.Tenant != a.Tenant || prev.ID != a.ID {
		return s.Update(ctx, a)
	}
	if !a.State.Valid() {
		return fmt.Errorf("update action %s: state %q is not a ledger state", a.ID, a.State)
	}
	mask := changed(prev, a)
	st := s.narrow(ctx, mask)
	if st == nil {
		return s.Update(ctx, a) // past maxNarrow distinct masks, or closed
	}
	args := make([]any, 0, bits.OnesCount32(mask)+3)
	for m := mask; m != 0; m &= m - 1 {
		v, err := setValue(a, bits.TrailingZeros32(m))
		if err != nil {
			return fmt.Errorf("update action %s: %w", a.ID, err)
		}
		args = append(args, v)
	}
	args = append(args, a.Tenant, a.ID, a.Rev)
	if err := s.gc.do(ctx, &write{kind: writeUpdate, id: a.ID, tenant: a.Tenant, rev: a.Rev, args: args, stmt: st}); err != nil {
		return err
	}
	a.Rev++
	return nil
}

// narrow returns the prepared UPDATE setting the columns of mask, or nil
// when maxNarrow statements exist already or it cannot be prepared (the
// store is closed): the caller then writes with Update, whose error says why.
func (s *Store) narrow(ctx context.Context, mask uint32) *sql.Stmt {
	s.ns.mu.Lock()
	defer s.ns.mu.Unlock()
	if st, ok := s.ns.m[mask]; ok {
		return st
	}
	if len(s.ns.m) >= maxNarrow {
		return nil
	}
	var q strings.Builder
	q.WriteString("UPDATE actions SET ")
	for m, first := mask, true; m != 0; m &= m - 1 {
		if !first {
			q.WriteString(", ")
		}
		first = false
		q.WriteString(setCols[bits.TrailingZeros32(m)])
		q.WriteString(" = ?")
	}
	q.WriteString(" WHERE tenant = ? AND id = ? AND rev = ?")
	st, err := s.w.PrepareContext(ctx, q.String())
	if err != nil {
		return nil
	}
	if s.ns.m == nil {
		s.ns.m = make(map[uint32]*sql.Stmt)
	}
	s.ns.m[mask] = st
	return st
}

// closeNarrow closes the cached narrow statements.
func (s *Store) closeNarrow() {
	s.ns.mu.Lock()
	defer s.ns.mu.Unlock()
	for k, st := range s.ns.m {
		st.Close()
		delete(s.ns.m, k)
	}
}

// changed returns the mask of the columns on which a differs from prev; rev
// is always in it. A field compared as different although it is equal only
// costs a column written needlessly, never one skipped.
func changed(prev, a *ledger.Action) uint32 {
	m := uint32(1) << colRev
	set := func(col int, diff bool) {
		if diff {
			m |= 1 << col
		}
	}
	set(colVersion, prev.Version != a.Version)
	set(colState, prev.State != a.State)
	set(colNeedsOperator, prev.NeedsOperator != a.NeedsOperator)
	set(colArgsDigest, prev.ArgsDigest != a.ArgsDigest)
	set(colArguments, (prev.Arguments == nil) != (a.Arguments == nil) || !bytes.Equal(prev.Arguments, a.Arguments))
	set(colAttempts, prev.Attempts != a.Attempts)
	set(colLeaseOwner, prev.LeaseOwner != a.LeaseOwner)
	set(colLeaseUntil, !sameTime(prev.LeaseUntil, a.LeaseUntil))
	set(colLastSentAt, !sameTime(prev.LastSentAt, a.LastSentAt))
	set(colUnknownSince, !sameTime(prev.UnknownSince, a.UnknownSince))
	set(colNextCheckAt, !sameTime(prev.NextCheckAt, a.NextCheckAt))
	set(colChecks, prev.Checks != a.Checks)
	if !sameResult(prev.Result, a.Result) {
		m |= 1<<colResultStatus | 1<<colResultContentType | 1<<colResultBody
	}
	set(colProviderCalls, prev.ProviderCallsOmitted != a.ProviderCallsOmitted || !sameCalls(prev.ProviderCalls, a.ProviderCalls))
	set(colCorrelationID, prev.CorrelationID != a.CorrelationID)
	set(colScope, prev.Scope != a.Scope)
	set(colPolicyVersion, prev.PolicyVersion != a.PolicyVersion)
	set(colUpdatedAt, !sameTime(prev.UpdatedAt, a.UpdatedAt))
	set(colHistory, !sameHistory(prev.History, a.History))
	return m
}

// sameTime is equality as stored: both zero (NULL) or the same instant.
func sameTime(x, y time.Time) bool {
	if x.IsZero() || y.IsZero() {
		return x.IsZero() == y.IsZero()
	}
	return x.Equal(y)
}

func sameResult(x, y *ledger.Result) bool {
	if x == nil || y == nil {
		return x == y
	}
	return x.StatusCode == y.StatusCode && x.ContentType == y.ContentType && bytes.Equal(x.Body, y.Body)
}

func sameCalls(x, y []ledger.ProviderCall) bool {
	if len(x) != len(y) {
		return false
	}
	for i := range x {
		if x[i].Name != y[i].Name || x[i].Route != y[i].Route || x[i].CallID != y[i].CallID || !sameTime(x[i].At, y[i].At) {
			return false
		}
	}
	return true
}

// sameHistory compares transitions as stored; a provider transition counts
// as the same only when it is the same pointer (clone keeps it).
func sameHistory(x, y []ledger.Transition) bool {
	if len(x) != len(y) {
		return false
	}
	for i := range x {
		p, q := &x[i], &y[i]
		if p.From != q.From || p.To != q.To || p.Reason != q.Reason || p.By != q.By || !sameTime(p.At, q.At) || p.Provider != q.Provider || p.Assignment != q.Assignment {
			return false
		}
	}
	return true
}

// setValue is the stored value of setCols[col] for a, as values gives it.
func setValue(a *ledger.Action, col int) (any, error) {
	switch col {
	case colVersion:
		return a.Version, nil
	case colState:
		return string(a.State), nil
	case colNeedsOperator:
		return a.NeedsOperator, nil
	case colArgsDigest:
		return a.ArgsDigest, nil
	case colArguments:
		if a.Arguments == nil {
			return nil, nil
		}
		return a.Arguments, nil
	case colAttempts:
		return a.Attempts, nil
	case colLeaseOwner:
		return a.LeaseOwner, nil
	case colLeaseUntil:
		return nanos(a.LeaseUntil)
	case colLastSentAt:
		return nanos(a.LastSentAt)
	case colUnknownSince:
		return nanos(a.UnknownSince)
	case colNextCheckAt:
		return nanos(a.NextCheckAt)
	case colChecks:
		return a.Checks, nil
	case colResultStatus:
		if a.Result == nil {
			return nil, nil
		}
		return a.Result.StatusCode, nil
	case colResultContentType:
		if a.Result == nil {
			return "", nil
		}
		return a.Result.ContentType, nil
	case colResultBody:
		if a.Result == nil {
			return nil, nil
		}
		return nonNilBytes(a.Result.Body), nil
	case colProviderCalls:
		if len(a.ProviderCalls) == 0 && a.ProviderCallsOmitted == 0 {
			return nil, nil
		}
		return string(ledger.AppendEvidenceJSON(make([]byte, 0, 128*len(a.ProviderCalls)+32), a.ProviderCalls, a.ProviderCallsOmitted)), nil
	case colCorrelationID:
		return a.CorrelationID, nil
	case colScope:
		return a.Scope, nil
	case colPolicyVersion:
		return a.PolicyVersion, nil
	case colUpdatedAt:
		return nanos(a.UpdatedAt)
	case colHistory:
		if len(a.History) == 0 {
			return nil, nil
		}
		return string(ledger.AppendHistoryJSON(make([]byte, 0, 160*len(a.History)), a.History)), nil
	case colRev:
		return a.Rev + 1, nil
	}
	return nil, fmt.Errorf("no column %d", col)
}
