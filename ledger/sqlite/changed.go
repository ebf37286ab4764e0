package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"math/bits"
	"strings"
	"sync"

	"github.com/toolgate/toolgate/ledger"
)

// Narrow updates.
//
// A completion changes a handful of fields (state, lease, result, history,
// updated_at, rev). Update binds every column and replaces the whole
// history. UpdateChanged sets only the columns on which the new action
// differs from the one stored at its revision, and appends the transitions
// added since to the stored history text (history || ',' || the new ones)
// instead of encoding every transition again: one prepared statement per
// set of changed columns, made the first time it is needed. The lifecycle of an action uses
// a few such sets; past maxNarrow of them a write falls back to the full
// Update statement, so the cache stays bounded.

// setCols are the columns UpdateChanged may set; bit i of a change mask
// stands for setCols[i]: "col = ?". colHistoryAppend appends to history.
var setCols = [...]string{
	"state = ?", "lease_until = ?", "next_check_at = ?", "policy_version = ?", "correlation_id = ?",
	"doc = ?", "arguments = ?", "result_body = ?", "evidence = ?", "history = ?", "history = history || ?", "rev = ?",
}

const (
	colState = iota
	colLeaseUntil
	colNextCheckAt
	colPolicyVersion
	colCorrelationID
	colDoc
	colArguments
	colResultBody
	colEvidence
	colHistory
	colHistoryAppend
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
	mask, from := changed(prev, a)
	st := s.narrow(ctx, mask)
	if st == nil {
		return s.Update(ctx, a) // past maxNarrow distinct masks, or closed
	}
	args := make([]any, 0, bits.OnesCount32(mask)+4)
	for m := mask; m != 0; m &= m - 1 {
		col := bits.TrailingZeros32(m)
		if col == colHistoryAppend {
			args = append(args, historyText(a.History[from:], true))
			continue
		}
		v, err := setValue(a, col)
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
	q.WriteString("UPDATE action_rows SET ")
	for m, first := mask, true; m != 0; m &= m - 1 {
		if !first {
			q.WriteString(", ")
		}
		first = false
		q.WriteString(setCols[bits.TrailingZeros32(m)])
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

// changed returns the mask of the columns on which a differs from prev (rev
// is always in it) and, when a's history extends prev's non-empty one, the
// index of its first new transition (colHistoryAppend); any other change
// of the history is colHistory, which writes it whole. A field compared as different although it
// is equal only costs a column written needlessly, never one skipped.
func changed(prev, a *ledger.Action) (mask uint32, from int) {
	m := uint32(1) << colRev
	set := func(col int, diff bool) {
		if diff {
			m |= 1 << col
		}
	}
	set(colState, prev.State != a.State)
	set(colLeaseUntil, !ledger.SameInstant(prev.LeaseUntil, a.LeaseUntil))
	set(colNextCheckAt, !ledger.SameInstant(prev.NextCheckAt, a.NextCheckAt))
	set(colPolicyVersion, prev.PolicyVersion != a.PolicyVersion)
	set(colCorrelationID, prev.CorrelationID != a.CorrelationID)
	set(colDoc, prev.Version != a.Version || prev.NeedsOperator != a.NeedsOperator || prev.ArgsDigest != a.ArgsDigest ||
		prev.Attempts != a.Attempts || prev.LeaseOwner != a.LeaseOwner || !ledger.SameInstant(prev.LastSentAt, a.LastSentAt) ||
		!ledger.SameInstant(prev.SendUntil, a.SendUntil) || !ledger.SameInstant(prev.UnknownSince, a.UnknownSince) || prev.Checks != a.Checks || prev.Scope != a.Scope ||
		!ledger.SameInstant(prev.UpdatedAt, a.UpdatedAt) || !sameResultHead(prev.Result, a.Result))
	set(colArguments, (prev.Arguments == nil) != (a.Arguments == nil) || !bytes.Equal(prev.Arguments, a.Arguments))
	set(colResultBody, !ledger.SameResult(prev.Result, a.Result))
	set(colEvidence, prev.ProviderCallsOmitted != a.ProviderCallsOmitted || !ledger.SameCalls(prev.ProviderCalls, a.ProviderCalls))
	switch n := ledger.HistoryPrefix(prev.History, a.History); {
	case n == len(a.History): // unchanged
	case n > 0:
		m |= 1 << colHistoryAppend
		from = n
	default:
		m |= 1 << colHistory
	}
	return m, from
}

// sameResultHead compares what doc keeps of a result: its presence, status
// and content type.
func sameResultHead(x, y *ledger.Result) bool {
	if x == nil || y == nil {
		return x == y
	}
	return x.StatusCode == y.StatusCode && x.ContentType == y.ContentType
}

// setValue is the stored value of setCols[col] for a, as values gives it
// (colHistoryAppend is bound by its caller).
func setValue(a *ledger.Action, col int) (any, error) {
	switch col {
	case colState:
		return string(a.State), nil
	case colLeaseUntil:
		return nanos(a.LeaseUntil)
	case colNextCheckAt:
		return nanos(a.NextCheckAt)
	case colPolicyVersion:
		return a.PolicyVersion, nil
	case colCorrelationID:
		return a.CorrelationID, nil
	case colDoc:
		d, err := appendDoc(make([]byte, 0, 192), a)
		if err != nil {
			return nil, err
		}
		return string(d), nil
	case colArguments:
		if a.Arguments == nil {
			return nil, nil
		}
		return a.Arguments, nil
	case colResultBody:
		if a.Result == nil {
			return nil, nil
		}
		return nonNilBytes(a.Result.Body), nil
	case colEvidence:
		return evidence(a), nil
	case colHistory:
		return historyTail(a.History), nil
	case colRev:
		return a.Rev + 1, nil
	}
	return nil, fmt.Errorf("no column %d", col)
}
