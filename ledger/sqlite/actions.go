package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"time"

	"github.com/toolgate/toolgate/ledger"
)

// columns lists what a read selects, in the order scan reads it (row.go,
// migration 007).
const columns = `tenant, id, tool_id, state, created_at, rev, lease_until, next_check_at,
	policy_version, correlation_id, doc, arguments, result_body, evidence, history`

// countSQL is CountByState: two covering scans of the partial state
// indexes (migration 007), not of the table with its payloads.
const countSQL = `SELECT state, COUNT(*) FROM action_rows
		WHERE state IN ('succeeded', 'rejected') GROUP BY state
	UNION ALL SELECT state, COUNT(*) FROM action_rows
		WHERE state NOT IN ('succeeded', 'rejected') GROUP BY state`

// The statements every call runs, prepared once per connection.
const (
	insertSQL = `INSERT INTO action_rows (tenant, id, tool_id, state, created_at, rev, lease_until, next_check_at,
		policy_version, correlation_id, doc, arguments, result_body, evidence, history)
		VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)
		ON CONFLICT (tenant, id) DO NOTHING`
	getSQL    = `SELECT ` + columns + ` FROM action_rows WHERE tenant = ? AND id = ?`
	revSQL    = `SELECT rev FROM action_rows WHERE tenant = ? AND id = ?`
	updateSQL = `UPDATE action_rows SET
		state = ?, lease_until = ?, next_check_at = ?, policy_version = ?, correlation_id = ?,
		doc = ?, arguments = ?, result_body = ?, evidence = ?, history = ?, rev = ?
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
	vals, err := values(a)
	if err != nil {
		return fmt.Errorf("insert action %s: %w", a.ID, err)
	}
	created, err := nanos(a.CreatedAt)
	if err != nil {
		return fmt.Errorf("insert action %s: %w", a.ID, err)
	}
	args := []any{a.Tenant, a.ID, a.ToolID, vals[0], created, int64(1), vals[1], vals[2], vals[3], vals[4],
		vals[5], vals[6], vals[7], vals[8], vals[9]}
	if err := s.gc.do(ctx, &write{kind: writeInsert, id: a.ID, tenant: a.Tenant, args: args}); err != nil {
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
// rewriting its index entry on every update), its whole history replacing
// the stored one, in one
// conditional statement that matches only the stored revision a.Rev, and then
// increments a.Rev. It returns ledger.ErrStale (and writes nothing) when the
// stored revision differs, ledger.ErrNotFound when there is no such action.
func (s *Store) Update(ctx context.Context, a *ledger.Action) error {
	vals, err := values(a)
	if err != nil {
		return fmt.Errorf("update action %s: %w", a.ID, err)
	}
	args := append(vals[:], a.Rev+1, a.Tenant, a.ID, a.Rev)
	if err := s.gc.do(ctx, &write{kind: writeUpdate, id: a.ID, tenant: a.Tenant, rev: a.Rev, args: args}); err != nil {
		return err
	}
	a.Rev++
	return nil
}

// Expired returns up to limit (default 50) running actions of any tenant whose
// lease ends at or before now, oldest lease first.
func (s *Store) Expired(ctx context.Context, now time.Time, limit int) ([]*ledger.Action, error) {
	as, err := s.query(ctx, `SELECT `+columns+` FROM action_rows
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
	as, err := s.query(ctx, `SELECT `+columns+` FROM action_rows
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
	rows, err := s.r.QueryContext(ctx, countSQL)
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

// values returns what Update sets of a, in updateSQL's order up to history:
// state, lease_until, next_check_at, policy_version, correlation_id, doc,
// arguments, result_body, evidence, history.
func values(a *ledger.Action) ([colHistory + 1]any, error) {
	var v [colHistory + 1]any
	if !a.State.Valid() {
		return v, fmt.Errorf("state %q is not a ledger state", a.State)
	}
	for col := range v { // setCols' order: the narrow write's values
		x, err := setValue(a, col)
		if err != nil {
			return v, err
		}
		v[col] = x
	}
	return v, nil
}

// evidence is the stored provider evidence of a, NULL when it has none.
func evidence(a *ledger.Action) any {
	if len(a.ProviderCalls) == 0 && a.ProviderCallsOmitted == 0 {
		return nil
	}
	return string(ledger.AppendEvidenceJSON(make([]byte, 0, 128*len(a.ProviderCalls)+32), a.ProviderCalls, a.ProviderCallsOmitted))
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
		a                       ledger.Action
		state                   string
		createdAt               int64
		leaseUntil, nextCheck   sql.NullInt64
		d, args, body, ev, hist []byte
	)
	err := row.Scan(&a.Tenant, &a.ID, &a.ToolID, &state, &createdAt, &a.Rev, &leaseUntil, &nextCheck,
		&a.PolicyVersion, &a.CorrelationID, &d, &args, &body, &ev, &hist)
	if err != nil {
		return nil, translate(err)
	}
	a.State = ledger.State(state)
	a.CreatedAt = time.Unix(0, createdAt).UTC()
	a.LeaseUntil, a.NextCheckAt = fromNanos(leaseUntil), fromNanos(nextCheck)
	if err := readDoc(&a, d); err != nil {
		return nil, fmt.Errorf("decode action %s: %w", a.ID, err)
	}
	if len(args) > 0 {
		a.Arguments = args
	}
	if a.Result != nil {
		a.Result.Body = body
		if a.Result.Body == nil {
			a.Result.Body = []byte{}
		}
	}
	if ev != nil {
		if a.ProviderCalls, a.ProviderCallsOmitted, err = ledger.DecodeEvidenceJSON(ev); err != nil {
			return nil, fmt.Errorf("decode provider calls of %s: %w", a.ID, err)
		}
	}
	if a.History, err = readHistory(hist); err != nil {
		return nil, fmt.Errorf("decode history of %s: %w", a.ID, err)
	}
	return &a, nil
}
