package postgres

import (
	"bytes"
	"context"
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"sync"

	"github.com/toolgate/toolgate/ledger"
)

// Narrow updates.
//
// A claim or a completion changes a handful of columns (state, lease,
// result, history, updated_at, rev) of a row of 27. Update sends every
// updatable column, so the server decodes them all and stores new copies of
// values that did not move (an arguments blob large enough to be TOASTed is
// written out again, because a parameter is a new value even when its bytes
// are the old ones). UpdateChanged sends only the columns on which the new
// action differs from the one stored at its revision: one statement text per
// set of changed columns ("change mask"), which pgx prepares once per
// connection like the others, queued in the same batch as every other
// write. A column left out of the SET list keeps the stored value as it is
// (for a TOASTed value, its pointer). An action's lifecycle uses a few masks;
// past maxNarrow distinct ones a store falls back to the full Update
// statement, so the statements of a connection stay bounded.
//
// Measured against one UPDATE with a "keep" flag per column (SET c = CASE
// WHEN $k THEN c ELSE $v END): see docs/performance.md, "The ledger's
// storage shape: PostgreSQL (issue 32)".

// setCols are the columns Update sets, in updateSQL's order; bit i of a
// change mask stands for setCols[i]. rev is always set.
var setCols = [...]string{
	"version", "state", "needs_operator", "args_digest", "arguments",
	"attempts", "lease_owner", "lease_until", "last_sent_at", "unknown_since",
	"next_check_at", "checks", "result_status", "result_content_type", "result_body",
	"provider_calls", "correlation_id", "scope", "policy_version",
	"updated_at", "history", "send_until",
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
	colSendUntil // last: added by migration 006, after the columns values orders before it
	nSetCols
)

// maxNarrow bounds the narrow statement texts of one store.
const maxNarrow = 32

// narrowSQL caches the narrow UPDATE text per change mask.
type narrowSQL struct {
	mu sync.Mutex
	m  map[uint32]string
}

// UpdateChanged is Update writing only the columns on which a differs from
// prev, the action as stored at revision a.Rev (ledger.ChangeUpdater). When
// prev is not at a.Rev (or is another action) it is Update. The write is
// the same compare-and-set as Update's, in the same batch, with the same
// results and completion wake-up.
func (s *Store) UpdateChanged(ctx context.Context, prev, a *ledger.Action) (err error) {
	if prev == nil || prev.Rev != a.Rev || prev.Tenant != a.Tenant || prev.ID != a.ID {
		return s.Update(ctx, a)
	}
	if !a.State.Valid() {
		return fmt.Errorf("update action %s: state %q is not a ledger state", a.ID, a.State)
	}
	mask := changed(prev, a)
	q := s.narrow(mask)
	if q == "" {
		return s.Update(ctx, a) // past maxNarrow distinct masks
	}
	args := make([]any, 0, bits.OnesCount32(mask)+3)
	args = append(args, a.Tenant, a.ID)
	for m := mask; m != 0; m &= m - 1 {
		v, err := setValue(a, bits.TrailingZeros32(m))
		if err != nil {
			return fmt.Errorf("update action %s: %w", a.ID, err)
		}
		args = append(args, v)
	}
	args = append(args, a.Rev)
	return s.update(ctx, a, q, args)
}

// narrow returns the UPDATE text setting the columns of mask, or "" when
// maxNarrow texts exist already.
func (s *Store) narrow(mask uint32) string {
	s.ns.mu.Lock()
	defer s.ns.mu.Unlock()
	if q, ok := s.ns.m[mask]; ok {
		return q
	}
	if len(s.ns.m) >= maxNarrow {
		return ""
	}
	n := bits.OnesCount32(mask)
	rev := "$" + strconv.Itoa(n+3)
	var q strings.Builder
	q.WriteString("WITH upd AS (\n\tUPDATE actions SET ")
	i := 3
	for m := mask; m != 0; m &= m - 1 {
		q.WriteString(setCols[bits.TrailingZeros32(m)])
		q.WriteString(" = $")
		q.WriteString(strconv.Itoa(i))
		q.WriteString(", ")
		i++
	}
	q.WriteString("rev = " + rev + " + 1\n\tWHERE tenant = $1 AND id = $2 AND rev = " + rev + `
	RETURNING rev
), cur AS (
	SELECT rev, state FROM actions WHERE tenant = $1 AND id = $2
)
SELECT (SELECT rev FROM upd), (SELECT rev FROM cur), (SELECT state FROM cur)`)
	if s.ns.m == nil {
		s.ns.m = make(map[uint32]string)
	}
	s.ns.m[mask] = q.String()
	return s.ns.m[mask]
}

// changed returns the mask of the columns on which a differs from prev. A
// field compared as different although it is equal only costs a column
// written needlessly, never one skipped.
func changed(prev, a *ledger.Action) uint32 {
	var m uint32
	set := func(col int, diff bool) {
		if diff {
			m |= 1 << col
		}
	}
	set(colVersion, prev.Version != a.Version)
	set(colState, prev.State != a.State)
	set(colNeedsOperator, prev.NeedsOperator != a.NeedsOperator)
	set(colArgsDigest, prev.ArgsDigest != a.ArgsDigest)
	// Stored as bytea: nil and empty are both kept as given.
	set(colArguments, (prev.Arguments == nil) != (a.Arguments == nil) || !bytes.Equal(prev.Arguments, a.Arguments))
	set(colAttempts, prev.Attempts != a.Attempts)
	set(colLeaseOwner, prev.LeaseOwner != a.LeaseOwner)
	set(colLeaseUntil, !ledger.SameInstant(prev.LeaseUntil, a.LeaseUntil))
	set(colLastSentAt, !ledger.SameInstant(prev.LastSentAt, a.LastSentAt))
	set(colUnknownSince, !ledger.SameInstant(prev.UnknownSince, a.UnknownSince))
	set(colNextCheckAt, !ledger.SameInstant(prev.NextCheckAt, a.NextCheckAt))
	set(colChecks, prev.Checks != a.Checks)
	if !ledger.SameResult(prev.Result, a.Result) {
		m |= 1<<colResultStatus | 1<<colResultContentType | 1<<colResultBody
	}
	set(colProviderCalls, prev.ProviderCallsOmitted != a.ProviderCallsOmitted || !ledger.SameCalls(prev.ProviderCalls, a.ProviderCalls))
	set(colCorrelationID, prev.CorrelationID != a.CorrelationID)
	set(colScope, prev.Scope != a.Scope)
	set(colPolicyVersion, prev.PolicyVersion != a.PolicyVersion)
	set(colUpdatedAt, !ledger.SameInstant(prev.UpdatedAt, a.UpdatedAt))
	set(colHistory, ledger.HistoryPrefix(prev.History, a.History) != len(a.History))
	set(colSendUntil, !ledger.SameInstant(prev.SendUntil, a.SendUntil))
	return m
}

// setValue is the stored value of setCols[col] for a: the narrow write
// binds it, and values builds the full row from it.
func setValue(a *ledger.Action, col int) (any, error) {
	text := func(s string) (any, error) {
		if strings.IndexByte(s, 0) >= 0 {
			return nil, fmt.Errorf("%q contains a NUL byte, which PostgreSQL text cannot hold", s)
		}
		return s, nil
	}
	switch col {
	case colVersion:
		return text(a.Version)
	case colState:
		return string(a.State), nil
	case colNeedsOperator:
		return a.NeedsOperator, nil
	case colArgsDigest:
		return text(a.ArgsDigest)
	case colArguments:
		return a.Arguments, nil
	case colAttempts:
		return int32(a.Attempts), nil
	case colLeaseOwner:
		return text(a.LeaseOwner)
	case colLeaseUntil:
		return nanos(a.LeaseUntil)
	case colLastSentAt:
		return nanos(a.LastSentAt)
	case colUnknownSince:
		return nanos(a.UnknownSince)
	case colNextCheckAt:
		return nanos(a.NextCheckAt)
	case colChecks:
		return int32(a.Checks), nil
	case colResultStatus:
		if a.Result == nil {
			return (*int32)(nil), nil
		}
		st := int32(a.Result.StatusCode)
		return &st, nil
	case colResultContentType:
		if a.Result == nil {
			return "", nil
		}
		if strings.IndexByte(a.Result.ContentType, 0) >= 0 {
			return nil, fmt.Errorf("result content type %q contains a NUL byte, which PostgreSQL text cannot hold", a.Result.ContentType)
		}
		return a.Result.ContentType, nil
	case colResultBody:
		if a.Result == nil {
			return []byte(nil), nil
		}
		if a.Result.Body == nil {
			return []byte{}, nil
		}
		return a.Result.Body, nil
	case colProviderCalls:
		if len(a.ProviderCalls) == 0 && a.ProviderCallsOmitted == 0 {
			return (*string)(nil), nil
		}
		c := string(ledger.AppendEvidenceJSON(make([]byte, 0, 128*len(a.ProviderCalls)+32), a.ProviderCalls, a.ProviderCallsOmitted))
		return &c, nil
	case colCorrelationID:
		return text(a.CorrelationID)
	case colScope:
		return text(a.Scope)
	case colPolicyVersion:
		return text(a.PolicyVersion)
	case colUpdatedAt:
		return nanos(a.UpdatedAt)
	case colSendUntil:
		return nanos(a.SendUntil)
	case colHistory:
		h, err := jsonList(a.History, func(h ledger.Transition) ledger.Transition { h.At = h.At.UTC(); return h })
		if err != nil {
			return nil, fmt.Errorf("history: %w", err)
		}
		return h, nil
	}
	return nil, fmt.Errorf("no column %d", col)
}

var _ ledger.ChangeUpdater = (*Store)(nil)
