package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/toolgate/toolgate/ledger"
)

// columns lists the actions columns in the order values and scan use.
const columns = `tenant, id, tool_id, version, state, needs_operator, args_digest, arguments,
	attempts, lease_owner, lease_until, last_sent_at, unknown_since, next_check_at, checks,
	result_status, result_content_type, result_body, provider_calls,
	correlation_id, scope, policy_version, created_at, updated_at, history, rev`

// insertSQL is Insert's statement: no row written means the action exists.
const insertSQL = `INSERT INTO actions (` + columns + `)
	VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,$19,$20,$21,$22,$23,$24,$25,$26)
	ON CONFLICT (tenant, id) DO NOTHING`

// Insert stores a new action with Rev 1 and sets a.Rev, in one INSERT … ON
// CONFLICT DO NOTHING: when the tenant already has an action with a.ID no
// row is written and it returns ledger.ErrExists. Tenant, ID, a valid State
// and CreatedAt are required. Concurrent writes share transactions (see
// batch.go) unless Config.NoBatch is set.
func (s *Store) Insert(ctx context.Context, a *ledger.Action) (err error) {
	ctx, finish, err := s.op(ctx)
	defer finish(&err)
	if err != nil {
		return err
	}
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
	if s.batch != nil {
		w := &write{kind: writeInsert, ctx: ctx, a: a, args: vals, bytes: writeBytes(vals)}
		if s.batch.do(w) {
			if w.err != nil {
				return w.err
			}
			a.Rev = w.rev
			s.inserted()
			return nil
		}
	}
	var tag pgconn.CommandTag
	err = s.writeAlone(ctx, func(c *pgx.Conn) (err error) {
		tag, err = c.Exec(ctx, insertSQL, vals...)
		return err
	})
	if err != nil {
		return fmt.Errorf("insert action %s: %w", a.ID, translate(err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("insert action %s: %w", a.ID, ledger.ErrExists)
	}
	a.Rev = 1
	s.inserted()
	return nil
}

// Get returns the tenant's action id, or ledger.ErrNotFound.
func (s *Store) Get(ctx context.Context, tenant, id string) (_ *ledger.Action, err error) {
	ctx, finish, err := s.op(ctx)
	defer finish(&err)
	if err != nil {
		return nil, err
	}
	row := s.queryRow(ctx, `SELECT `+columns+` FROM actions WHERE tenant = $1 AND id = $2`, tenant, id)
	a, err := scan(row)
	if err != nil {
		return nil, fmt.Errorf("get action %s: %w", id, err)
	}
	return a, nil
}

// updateSQL writes every column but tenant, id, tool_id and created_at when the
// stored revision is $24 (Update gives the parameters), and reports in the
// same statement (so in the same snapshot) whether the row exists: the conditional UPDATE is the whole
// compare-and-set, the second CTE only names the failure (and gives the
// state the write replaced).
const updateSQL = `WITH upd AS (
	UPDATE actions SET
		version = $3, state = $4, needs_operator = $5, args_digest = $6, arguments = $7,
		attempts = $8, lease_owner = $9, lease_until = $10, last_sent_at = $11, unknown_since = $12,
		next_check_at = $13, checks = $14, result_status = $15, result_content_type = $16, result_body = $17,
		provider_calls = $18, correlation_id = $19, scope = $20, policy_version = $21,
		updated_at = $22, history = $23, rev = $24 + 1
	WHERE tenant = $1 AND id = $2 AND rev = $24
	RETURNING rev
), cur AS (
	SELECT rev, state FROM actions WHERE tenant = $1 AND id = $2
)
SELECT (SELECT rev FROM upd), (SELECT rev FROM cur), (SELECT state FROM cur)`

// Update writes every field of a except Tenant, ID, ToolID and CreatedAt, in one
// conditional UPDATE that matches only the stored revision a.Rev, and then
// increments a.Rev. It returns ledger.ErrStale (and writes nothing) when the
// stored revision differs, ledger.ErrNotFound when there is no such action.
// When the error satisfies IsUnavailable the write may or may not have
// happened: re-read before acting on it. After a write that moved the action
// out of running it sends a completion wake-up (see Listen) unless
// Config.NoNotify is set. Concurrent writes share transactions (see
// batch.go) unless Config.NoBatch is set.
func (s *Store) Update(ctx context.Context, a *ledger.Action) (err error) {
	vals, err := values(a, a.Rev)
	if err != nil {
		return fmt.Errorf("update action %s: %w", a.ID, err)
	}
	// values order: tenant, id, tool_id (fixed at insert), the updatable
	// fields, created_at at 22, then updated_at, history and rev.
	vals = append(append(vals[:2:2], vals[3:22]...), vals[23:]...)
	return s.update(ctx, a, updateSQL, vals)
}

// update runs the compare-and-set UPDATE q (updateSQL or a narrow one, see
// changed.go) with args, batched unless Config.NoBatch is set. q reports the
// revision written, the one stored and the state it replaced, as updateSQL
// does. ctx is the caller's: the operation's limits are added here.
func (s *Store) update(parent context.Context, a *ledger.Action, q string, args []any) (err error) {
	ctx, finish, err := s.op(parent)
	defer finish(&err)
	if err != nil {
		return err
	}
	if s.batch != nil {
		w := &write{kind: writeUpdate, ctx: ctx, a: a, sql: q, args: args, bytes: writeBytes(args)}
		if s.batch.do(w) {
			if w.err != nil {
				return w.err
			}
			a.Rev = w.rev
			return nil
		}
	}
	var written, stored *int64
	var was *string
	if err := s.writeAlone(ctx, func(c *pgx.Conn) error {
		return c.QueryRow(ctx, q, args...).Scan(&written, &stored, &was)
	}); err != nil {
		return fmt.Errorf("update action %s: %w", a.ID, translate(err))
	}
	switch {
	case written != nil:
		a.Rev = *written
		if was != nil && *was == string(ledger.Running) && a.State != ledger.Running && !s.noNotify {
			s.notify(parent, a)
		}
		return nil
	case stored == nil:
		return fmt.Errorf("update action %s: %w", a.ID, ledger.ErrNotFound)
	default:
		return fmt.Errorf("update action %s at rev %d (stored %d or later): %w", a.ID, a.Rev, *stored, ledger.ErrStale)
	}
}

// Expired returns up to limit (default 50) running actions of any tenant whose
// lease ends at or before now, oldest lease first (a running action without a
// lease end first of all). It is a plain read: whoever acts on the result
// writes with Update, whose compare-and-set lets one replica win.
func (s *Store) Expired(ctx context.Context, now time.Time, limit int) (_ []*ledger.Action, err error) {
	ctx, finish, err := s.op(ctx)
	defer finish(&err)
	if err != nil {
		return nil, err
	}
	as, err := s.query(ctx, `SELECT `+columns+` FROM actions
		WHERE state = 'running' AND (lease_until IS NULL OR lease_until <= $1)
		ORDER BY lease_until NULLS FIRST, tenant, id LIMIT $2`, now.UnixNano(), defaultLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("expired actions: %w", err)
	}
	return as, nil
}

// DueChecks returns up to limit (default 50) unknown actions of any tenant
// whose NextCheckAt is at or before now, most overdue first (never scheduled
// first of all). Like Expired it is a plain read.
func (s *Store) DueChecks(ctx context.Context, now time.Time, limit int) (_ []*ledger.Action, err error) {
	ctx, finish, err := s.op(ctx)
	defer finish(&err)
	if err != nil {
		return nil, err
	}
	as, err := s.query(ctx, `SELECT `+columns+` FROM actions
		WHERE state = 'unknown' AND (next_check_at IS NULL OR next_check_at <= $1)
		ORDER BY next_check_at NULLS FIRST, tenant, id LIMIT $2`, now.UnixNano(), defaultLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("due checks: %w", err)
	}
	return as, nil
}

// CountByState counts the actions of all tenants per state. Every state of
// ledger.States is in the map, with 0 when no action is in it.
func (s *Store) CountByState(ctx context.Context) (_ map[ledger.State]int64, err error) {
	ctx, finish, err := s.op(ctx)
	defer finish(&err)
	if err != nil {
		return nil, err
	}
	rows, err := s.queryRows(ctx, `SELECT state, count(*) FROM actions GROUP BY state`)
	if err != nil {
		return nil, fmt.Errorf("count by state: %w", translate(err))
	}
	out := make(map[ledger.State]int64, len(ledger.States))
	for _, st := range ledger.States {
		out[st] = 0
	}
	var st string
	var n int64
	_, err = pgx.ForEachRow(rows, []any{&st, &n}, func() error {
		out[ledger.State(st)] = n
		return nil
	})
	if err != nil {
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
	rows, err := s.queryRows(ctx, q, args...)
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
	for _, f := range []string{a.Tenant, a.ID, a.ToolID} {
		if strings.IndexByte(f, 0) >= 0 {
			return nil, fmt.Errorf("%q contains a NUL byte, which PostgreSQL text cannot hold", f)
		}
	}
	v := make([]any, 0, 4+len(setCols))
	v = append(v, a.Tenant, a.ID, a.ToolID)
	// Then the columns Update sets (setValue), with created_at, which only
	// Insert writes, before updated_at.
	for col := range len(setCols) {
		if col == colUpdatedAt {
			created, err := nanos(a.CreatedAt)
			if err != nil {
				return nil, err
			}
			v = append(v, created)
		}
		x, err := setValue(a, col)
		if err != nil {
			return nil, err
		}
		v = append(v, x)
	}
	return append(v, rev), nil
}

// jsonList encodes a non-empty list as JSON text (times normalized to UTC by
// norm); an empty list is NULL.
func jsonList[T any](xs []T, norm func(T) T) (*string, error) {
	if len(xs) == 0 {
		return nil, nil
	}
	cp := make([]T, len(xs))
	for i, x := range xs {
		cp[i] = norm(x)
	}
	b, err := json.Marshal(cp)
	if err != nil {
		return nil, err
	}
	s := string(b)
	return &s, nil
}

// nanos returns t as unix nanoseconds, nil for the zero time, or an error when
// t does not fit in int64 nanoseconds.
func nanos(t time.Time) (*int64, error) {
	if t.IsZero() {
		return nil, nil
	}
	n := t.UnixNano()
	if !time.Unix(0, n).Equal(t) {
		return nil, fmt.Errorf("time %s is outside the storable range (years 1678 to 2262)", t.Format(time.RFC3339))
	}
	return &n, nil
}

func fromNanos(n *int64) time.Time {
	if n == nil {
		return time.Time{}
	}
	return time.Unix(0, *n).UTC()
}

// scan reads one row of columns into an Action.
func scan(row pgx.Row) (*ledger.Action, error) {
	var (
		a                                             ledger.Action
		state                                         string
		leaseUntil, lastSent, unknownSince, nextCheck *int64
		createdAt, updatedAt                          *int64
		status, attempts, checks                      *int32
		args, body                                    []byte
		calls, hist                                   *string
		ctype                                         string
	)
	err := row.Scan(&a.Tenant, &a.ID, &a.ToolID, &a.Version, &state, &a.NeedsOperator, &a.ArgsDigest, &args,
		&attempts, &a.LeaseOwner, &leaseUntil, &lastSent, &unknownSince, &nextCheck, &checks,
		&status, &ctype, &body, &calls,
		&a.CorrelationID, &a.Scope, &a.PolicyVersion, &createdAt, &updatedAt, &hist, &a.Rev)
	if err != nil {
		return nil, translate(err)
	}
	a.State = ledger.State(state)
	if len(args) > 0 {
		a.Arguments = args
	}
	if attempts != nil {
		a.Attempts = int(*attempts)
	}
	if checks != nil {
		a.Checks = int(*checks)
	}
	a.LeaseUntil, a.LastSentAt = fromNanos(leaseUntil), fromNanos(lastSent)
	a.UnknownSince, a.NextCheckAt = fromNanos(unknownSince), fromNanos(nextCheck)
	a.CreatedAt, a.UpdatedAt = fromNanos(createdAt), fromNanos(updatedAt)
	if status != nil {
		a.Result = &ledger.Result{StatusCode: int(*status), ContentType: ctype, Body: body}
		if a.Result.Body == nil {
			a.Result.Body = []byte{}
		}
	}
	if calls != nil {
		var err error
		if a.ProviderCalls, a.ProviderCallsOmitted, err = ledger.DecodeEvidenceJSON([]byte(*calls)); err != nil {
			return nil, fmt.Errorf("decode provider calls of %s: %w", a.ID, err)
		}
	}
	if hist != nil {
		if err := json.Unmarshal([]byte(*hist), &a.History); err != nil {
			return nil, fmt.Errorf("decode history of %s: %w", a.ID, err)
		}
	}
	return &a, nil
}
