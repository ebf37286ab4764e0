package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/toolgate/toolgate/ledger"
)

// The rollout records (ledger.RolloutStore). They are few and change
// rarely, so they skip the write batcher: each write is one transaction.

// GetRollout returns a tool's rollout record, or ledger.ErrNotFound.
func (s *Store) GetRollout(ctx context.Context, toolID string) (_ *ledger.Rollout, err error) {
	ctx, finish, err := s.op(ctx)
	defer finish(&err)
	if err != nil {
		return nil, err
	}
	var rev int64
	var rec string
	if err := s.queryRow(ctx, `SELECT rev, record::text FROM rollouts WHERE tool_id = $1`, toolID).Scan(&rev, &rec); err != nil {
		return nil, fmt.Errorf("get rollout %s: %w", toolID, translate(err))
	}
	return decodeRollout(rev, rec)
}

func decodeRollout(rev int64, rec string) (*ledger.Rollout, error) {
	return ledger.DecodeRollout(rev, []byte(rec))
}

// ListRollouts returns every rollout record, by tool id.
func (s *Store) ListRollouts(ctx context.Context) (_ []*ledger.Rollout, err error) {
	ctx, finish, err := s.op(ctx)
	defer finish(&err)
	if err != nil {
		return nil, err
	}
	rows, err := s.queryRows(ctx, `SELECT rev, record::text FROM rollouts ORDER BY tool_id`)
	if err != nil {
		return nil, fmt.Errorf("list rollouts: %w", translate(err))
	}
	var out []*ledger.Rollout
	var rev int64
	var rec string
	_, err = pgx.ForEachRow(rows, []any{&rev, &rec}, func() error {
		r, err := decodeRollout(rev, rec)
		if err != nil {
			return err
		}
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list rollouts: %w", translate(err))
	}
	return out, nil
}

// PutRollout writes r over the revision it was read at, appends ev to the
// history and drops what the record no longer needs, in one transaction.
func (s *Store) PutRollout(ctx context.Context, r *ledger.Rollout, ev ledger.RolloutEvent) (err error) {
	ctx, finish, err := s.op(ctx)
	defer finish(&err)
	if err != nil {
		return err
	}
	if strings.ContainsRune(r.ToolID, 0) {
		return fmt.Errorf("put rollout %q: the tool id contains a NUL byte, which PostgreSQL text cannot hold", r.ToolID)
	}
	rec, evb, next, err := ledger.EncodeRollout(r, ev)
	if err != nil {
		return err
	}
	updated, err := nanos(r.UpdatedAt)
	if err != nil {
		return fmt.Errorf("put rollout %s: %w", r.ToolID, err)
	}
	if updated == nil {
		zero := int64(0)
		updated = &zero
	}
	err = s.writeAloneTx(ctx, func(tx pgx.Tx) error {
		var q string
		args := []any{r.ToolID, string(rec), *updated}
		if r.Rev == 0 {
			q = `INSERT INTO rollouts (tool_id, rev, record, updated_at) VALUES ($1, 1, $2, $3) ON CONFLICT (tool_id) DO NOTHING`
		} else {
			q = `UPDATE rollouts SET rev = $4 + 1, record = $2, updated_at = $3 WHERE tool_id = $1 AND rev = $4`
			args = append(args, r.Rev)
		}
		tag, err := tx.Exec(ctx, q, args...)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return ledger.ErrStale
		}
		if _, err := tx.Exec(ctx, `INSERT INTO rollout_events (tool_id, rev, event) VALUES ($1, $2, $3)`, r.ToolID, next, string(evb)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM rollout_events WHERE tool_id = $1 AND rev <= $2`, r.ToolID, next-ledger.RolloutHistoryKeep); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM rollout_counts WHERE tool_id = $1 AND epoch <> $2`, r.ToolID, r.Epoch)
		return err
	})
	if err != nil {
		return fmt.Errorf("put rollout %s: %w", r.ToolID, translate(err))
	}
	r.Rev = next
	return nil
}

// RolloutHistory returns up to limit (default 100) of a tool's audit
// entries, newest first.
func (s *Store) RolloutHistory(ctx context.Context, toolID string, limit int) (_ []ledger.RolloutEvent, err error) {
	ctx, finish, err := s.op(ctx)
	defer finish(&err)
	if err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = 100
	}
	rows, err := s.queryRows(ctx, `SELECT event::text FROM rollout_events WHERE tool_id = $1 ORDER BY rev DESC LIMIT $2`, toolID, limit)
	if err != nil {
		return nil, fmt.Errorf("rollout history %s: %w", toolID, translate(err))
	}
	var out []ledger.RolloutEvent
	var b string
	_, err = pgx.ForEachRow(rows, []any{&b}, func() error {
		var ev ledger.RolloutEvent
		if err := json.Unmarshal([]byte(b), &ev); err != nil {
			return err
		}
		out = append(out, ev)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("rollout history %s: %w", toolID, translate(err))
	}
	return out, nil
}

// AddRolloutCounts adds the counts to their counters in one statement;
// counters are written in key order, so concurrent writers cannot deadlock.
func (s *Store) AddRolloutCounts(ctx context.Context, counts []ledger.RolloutCount) (err error) {
	cs := ledger.MergeRolloutCounts(counts)
	if len(cs) == 0 {
		return nil
	}
	ctx, finish, err := s.op(ctx)
	defer finish(&err)
	if err != nil {
		return err
	}
	cols := make([][]string, 6)
	epochs, ns := make([]int64, len(cs)), make([]int64, len(cs))
	for i, c := range cs {
		for j, v := range []string{c.ToolID, c.Version, c.Kind, c.Pointer, c.Code, c.Principal} {
			if strings.ContainsRune(v, 0) {
				return fmt.Errorf("add rollout counts: %q contains a NUL byte, which PostgreSQL text cannot hold", v)
			}
			cols[j] = append(cols[j], v)
		}
		epochs[i], ns[i] = c.Epoch, c.N
	}
	err = s.writeAlone(ctx, func(c *pgx.Conn) error {
		_, err := c.Exec(ctx, `INSERT INTO rollout_counts (tool_id, epoch, version, kind, pointer, code, principal, n)
			SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::bigint[])
			ON CONFLICT (tool_id, epoch, version, kind, pointer, code, principal) DO UPDATE SET n = rollout_counts.n + EXCLUDED.n`,
			cols[0], epochs, cols[1], cols[2], cols[3], cols[4], cols[5], ns)
		return err
	})
	if err != nil {
		return fmt.Errorf("add rollout counts: %w", translate(err))
	}
	return nil
}

// RolloutCounts returns the counters of one epoch of a tool.
func (s *Store) RolloutCounts(ctx context.Context, toolID string, epoch int64) (_ []ledger.RolloutCount, err error) {
	ctx, finish, err := s.op(ctx)
	defer finish(&err)
	if err != nil {
		return nil, err
	}
	rows, err := s.queryRows(ctx, `SELECT version, kind, pointer, code, principal, n FROM rollout_counts
		WHERE tool_id = $1 AND epoch = $2`, toolID, epoch)
	if err != nil {
		return nil, fmt.Errorf("rollout counts %s: %w", toolID, translate(err))
	}
	var out []ledger.RolloutCount
	c := ledger.RolloutCount{ToolID: toolID, Epoch: epoch}
	_, err = pgx.ForEachRow(rows, []any{&c.Version, &c.Kind, &c.Pointer, &c.Code, &c.Principal, &c.N}, func() error {
		out = append(out, c)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("rollout counts %s: %w", toolID, translate(err))
	}
	return out, nil
}

// VersionUse counts one tool's actions of every tenant per version. It scans
// the tool's actions: an offline check's query (lint, gate), not the call path's.
func (s *Store) VersionUse(ctx context.Context, toolID string) (_ []ledger.VersionUse, err error) {
	ctx, finish, err := s.op(ctx)
	defer finish(&err)
	if err != nil {
		return nil, err
	}
	rows, err := s.queryRows(ctx, `SELECT version, count(*) FILTER (WHERE state NOT IN ('succeeded', 'rejected')), count(*), max(created_at)
		FROM actions WHERE tool_id = $1 GROUP BY version ORDER BY version`, toolID)
	if err != nil {
		return nil, fmt.Errorf("version use %s: %w", toolID, translate(err))
	}
	var out []ledger.VersionUse
	var u ledger.VersionUse
	var newest *int64
	_, err = pgx.ForEachRow(rows, []any{&u.Version, &u.Live, &u.Total, &newest}, func() error {
		u.Newest = fromNanos(newest)
		out = append(out, u)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("version use %s: %w", toolID, translate(err))
	}
	return out, nil
}
