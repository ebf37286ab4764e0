package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/toolgate/toolgate/ledger"
)

// columns lists the actions columns in the order row.args and scan use.
const columns = `tenant, id, tool_id, version, state, needs_operator, args_digest, arguments,
	attempts, lease_owner, lease_until, last_sent_at, unknown_since, next_check_at, checks,
	result_status, result_content_type, result_body, provider_calls,
	correlation_id, scope, policy_version, created_at, updated_at, history, rev`

// The statements every call runs, prepared once per connection.
const (
	insertSQL = `INSERT INTO actions (` + columns + `)
		VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)
		ON CONFLICT (tenant, id) DO NOTHING`
	getSQL    = `SELECT ` + columns + ` FROM actions WHERE tenant = ? AND id = ?`
	revSQL    = `SELECT rev FROM actions WHERE tenant = ? AND id = ?`
	updateSQL = `UPDATE actions SET
		version = ?, state = ?, needs_operator = ?, args_digest = ?, arguments = ?,
		attempts = ?, lease_owner = ?, lease_until = ?, last_sent_at = ?, unknown_since = ?,
		next_check_at = ?, checks = ?, result_status = ?, result_content_type = ?, result_body = ?,
		provider_calls = ?, correlation_id = ?, scope = ?, policy_version = ?,
		updated_at = ?, history = ?, rev = ?
		WHERE tenant = ? AND id = ? AND rev = ?`
)

// Insert stores a new action with Rev 1 and sets a.Rev. It returns
// ledger.ErrExists when the tenant already has an action with a.ID. Tenant, ID,
// a valid State and CreatedAt are required.
func (s *Store) Insert(ctx context.Context, a *ledger.Action) error {
	if a.Tenant == "" || a.ID == "" {
		return fmt.Errorf("insert action: tenant and id are required")
	}
	if a.CreatedAt.IsZero() {
		return fmt.Errorf("insert action %s: created_at is required", a.ID)
	}
	vals, err := values(a, 1)
	if err != nil {
		return fmt.Errorf("insert action %s: %w", a.ID, err)
	}
	if err := s.gc.do(ctx, &write{kind: writeInsert, id: a.ID, tenant: a.Tenant, args: vals}); err != nil {
		return err
	}
	a.Rev = 1
	return nil
}

// Get returns the tenant's action id, or ledger.ErrNotFound.
func (s *Store) Get(ctx context.Context, tenant, id string) (*ledger.Action, error) {
	row := s.get.QueryRowContext(ctx, tenant, id)
	a, err := scan(row)
	if err != nil {
		return nil, fmt.Errorf("get action %s: %w", id, err)
	}
	return a, nil
}

// Update writes every field of a except Tenant, ID, ToolID and CreatedAt
// (fixed at Insert: leaving tool_id out of the SET list spares SQLite
// rewriting its index entry on every update), in one
// conditional statement that matches only the stored revision a.Rev, and then
// increments a.Rev. It returns ledger.ErrStale (and writes nothing) when the
// stored revision differs, ledger.ErrNotFound when there is no such action.
func (s *Store) Update(ctx context.Context, a *ledger.Action) error {
	vals, err := values(a, a.Rev+1)
	if err != nil {
		return fmt.Errorf("update action %s: %w", a.ID, err)
	}
	// values order: tenant, id, tool_id, then the updatable fields, created_at at 22.
	set := vals[3:22:22]
	set = append(set, vals[23:]...)
	args := append(set, a.Tenant, a.ID, a.Rev)
	if err := s.gc.do(ctx, &write{kind: writeUpdate, id: a.ID, tenant: a.Tenant, rev: a.Rev, args: args}); err != nil {
		return err
	}
	a.Rev++
	return nil
}

// Expired returns up to limit (default 50) running actions of any tenant whose
// lease ends at or before now, oldest lease first.
func (s *Store) Expired(ctx context.Context, now time.Time, limit int) ([]*ledger.Action, error) {
	as, err := s.query(ctx, `SELECT `+columns+` FROM actions
		WHERE state = 'running' AND (lease_until IS NULL OR lease_until <= ?)
		ORDER BY lease_until, tenant, id LIMIT ?`, bound(now), defaultLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("expired actions: %w", err)
	}
	return as, nil
}

// DueChecks returns up to limit (default 50) unknown actions of any tenant
// whose NextCheckAt is at or before now, most overdue first.
func (s *Store) DueChecks(ctx context.Context, now time.Time, limit int) ([]*ledger.Action, error) {
	as, err := s.query(ctx, `SELECT `+columns+` FROM actions
		WHERE state = 'unknown' AND (next_check_at IS NULL OR next_check_at <= ?)
		ORDER BY next_check_at, tenant, id LIMIT ?`, bound(now), defaultLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("due checks: %w", err)
	}
	return as, nil
}

// CountByState counts the actions of all tenants per state. Every state of
// ledger.States is in the map, with 0 when no action is in it.
func (s *Store) CountByState(ctx context.Context) (map[ledger.State]int64, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT state, COUNT(*) FROM actions GROUP BY state`)
	if err != nil {
		return nil, fmt.Errorf("count by state: %w", translate(err))
	}
	defer rows.Close()
	out := make(map[ledger.State]int64, len(ledger.States))
	for _, st := range ledger.States {
		out[st] = 0
	}
	for rows.Next() {
		var st string
		var n int64
		if err := rows.Scan(&st, &n); err != nil {
			return nil, fmt.Errorf("count by state: %w", translate(err))
		}
		out[ledger.State(st)] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count by state: %w", translate(err))
	}
	return out, nil
}

func defaultLimit(n int) int {
	if n <= 0 {
		return 50
	}
	return n
}

func (s *Store) query(ctx context.Context, q string, args ...any) ([]*ledger.Action, error) {
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []*ledger.Action
	for rows.Next() {
		a, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, translate(err)
	}
	return out, nil
}

// values returns a's column values in columns order, with rev as the revision.
func values(a *ledger.Action, rev int64) ([]any, error) {
	if !a.State.Valid() {
		return nil, fmt.Errorf("state %q is not a ledger state", a.State)
	}
	var times [6]any
	for i, t := range []time.Time{a.LeaseUntil, a.LastSentAt, a.UnknownSince, a.NextCheckAt, a.CreatedAt, a.UpdatedAt} {
		v, err := nanos(t)
		if err != nil {
			return nil, err
		}
		times[i] = v
	}
	var status, ctype, body any = nil, "", nil
	if a.Result != nil {
		status, ctype, body = a.Result.StatusCode, a.Result.ContentType, nonNilBytes(a.Result.Body)
	}
	var calls, hist any // NULL when empty
	if len(a.ProviderCalls) > 0 || a.ProviderCallsOmitted > 0 {
		calls = string(ledger.AppendEvidenceJSON(make([]byte, 0, 128*len(a.ProviderCalls)+32), a.ProviderCalls, a.ProviderCallsOmitted))
	}
	if len(a.History) > 0 {
		hist = string(ledger.AppendHistoryJSON(make([]byte, 0, 160*len(a.History)), a.History))
	}
	var args any
	if a.Arguments != nil {
		args = a.Arguments
	}
	return []any{
		a.Tenant, a.ID, a.ToolID, a.Version, string(a.State), a.NeedsOperator, a.ArgsDigest, args,
		a.Attempts, a.LeaseOwner, times[0], times[1], times[2], times[3], a.Checks,
		status, ctype, body, calls,
		a.CorrelationID, a.Scope, a.PolicyVersion, times[4], times[5], hist, rev,
	}, nil
}

func nonNilBytes(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// nanos returns t as unix nanoseconds, nil for the zero time, or an error when
// t does not fit in int64 nanoseconds.
func nanos(t time.Time) (any, error) {
	if t.IsZero() {
		return nil, nil
	}
	n := t.UnixNano()
	if !time.Unix(0, n).Equal(t) {
		return nil, fmt.Errorf("time %s is outside the storable range (years 1678 to 2262)", t.Format(time.RFC3339))
	}
	return n, nil
}

// bound returns now as unix nanoseconds for a comparison, clamped to the
// int64 range, so a "now" far in the future (the orphan sweep) compares as
// later than every stored time instead of overflowing.
func bound(now time.Time) int64 {
	switch {
	case now.After(time.Unix(0, math.MaxInt64)):
		return math.MaxInt64
	case now.Before(time.Unix(0, math.MinInt64)):
		return math.MinInt64
	}
	return now.UnixNano()
}

func fromNanos(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return time.Unix(0, n.Int64).UTC()
}

type scanner interface{ Scan(dest ...any) error }

// scan reads one row of columns into an Action.
func scan(row scanner) (*ledger.Action, error) {
	var (
		a                                             ledger.Action
		state                                         string
		leaseUntil, lastSent, unknownSince, nextCheck sql.NullInt64
		createdAt, updatedAt, status                  sql.NullInt64
		args, body                                    []byte
		calls, hist                                   sql.NullString
		ctype                                         string
	)
	err := row.Scan(&a.Tenant, &a.ID, &a.ToolID, &a.Version, &state, &a.NeedsOperator, &a.ArgsDigest, &args,
		&a.Attempts, &a.LeaseOwner, &leaseUntil, &lastSent, &unknownSince, &nextCheck, &a.Checks,
		&status, &ctype, &body, &calls,
		&a.CorrelationID, &a.Scope, &a.PolicyVersion, &createdAt, &updatedAt, &hist, &a.Rev)
	if err != nil {
		return nil, translate(err)
	}
	a.State = ledger.State(state)
	if len(args) > 0 {
		a.Arguments = args
	}
	a.LeaseUntil, a.LastSentAt = fromNanos(leaseUntil), fromNanos(lastSent)
	a.UnknownSince, a.NextCheckAt = fromNanos(unknownSince), fromNanos(nextCheck)
	a.CreatedAt, a.UpdatedAt = fromNanos(createdAt), fromNanos(updatedAt)
	if status.Valid {
		a.Result = &ledger.Result{StatusCode: int(status.Int64), ContentType: ctype, Body: body}
		if a.Result.Body == nil {
			a.Result.Body = []byte{}
		}
	}
	if calls.Valid {
		if a.ProviderCalls, a.ProviderCallsOmitted, err = ledger.DecodeEvidenceJSON([]byte(calls.String)); err != nil {
			return nil, fmt.Errorf("decode provider calls of %s: %w", a.ID, err)
		}
	}
	if hist.Valid {
		if err := json.Unmarshal([]byte(hist.String), &a.History); err != nil {
			return nil, fmt.Errorf("decode history of %s: %w", a.ID, err)
		}
	}
	return &a, nil
}
