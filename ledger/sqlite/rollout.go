package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/toolgate/toolgate/ledger"
)

// The rollout records (ledger.RolloutStore): writes take the writer
// connection in a transaction of their own, beside the group committer's.

// GetRollout returns a tool's rollout record, or ledger.ErrNotFound.
func (s *Store) GetRollout(ctx context.Context, toolID string) (*ledger.Rollout, error) {
	var rev int64
	var rec string
	err := s.r.QueryRowContext(ctx, `SELECT rev, record FROM rollouts WHERE tool_id = ?`, toolID).Scan(&rev, &rec)
	if err != nil {
		return nil, fmt.Errorf("get rollout %s: %w", toolID, translate(err))
	}
	return decodeRollout(rev, rec)
}

func decodeRollout(rev int64, rec string) (*ledger.Rollout, error) {
	return ledger.DecodeRollout(rev, []byte(rec))
}

// ListRollouts returns every rollout record, by tool id.
func (s *Store) ListRollouts(ctx context.Context) ([]*ledger.Rollout, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT rev, record FROM rollouts ORDER BY tool_id`)
	if err != nil {
		return nil, fmt.Errorf("list rollouts: %w", translate(err))
	}
	defer rows.Close()
	var out []*ledger.Rollout
	for rows.Next() {
		var rev int64
		var rec string
		if err := rows.Scan(&rev, &rec); err != nil {
			return nil, fmt.Errorf("list rollouts: %w", translate(err))
		}
		r, err := decodeRollout(rev, rec)
		if err != nil {
			return nil, fmt.Errorf("list rollouts: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list rollouts: %w", translate(err))
	}
	return out, nil
}

// PutRollout writes r over the revision it was read at, appends ev to the
// history and drops what the record no longer needs, in one transaction.
func (s *Store) PutRollout(ctx context.Context, r *ledger.Rollout, ev ledger.RolloutEvent) error {
	rec, evb, next, err := ledger.EncodeRollout(r, ev)
	if err != nil {
		return err
	}
	updated, err := nanos(r.UpdatedAt)
	if err != nil {
		return fmt.Errorf("put rollout %s: %w", r.ToolID, err)
	}
	if updated == nil {
		updated = int64(0)
	}
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		var res sql.Result
		var err error
		if r.Rev == 0 {
			res, err = tx.ExecContext(ctx, `INSERT INTO rollouts (tool_id, rev, record, updated_at) VALUES (?, 1, ?, ?)
				ON CONFLICT (tool_id) DO NOTHING`, r.ToolID, string(rec), updated)
		} else {
			res, err = tx.ExecContext(ctx, `UPDATE rollouts SET rev = ?, record = ?, updated_at = ? WHERE tool_id = ? AND rev = ?`,
				next, string(rec), updated, r.ToolID, r.Rev)
		}
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return ledger.ErrStale
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO rollout_events (tool_id, rev, event) VALUES (?, ?, ?)`, r.ToolID, next, string(evb)); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM rollout_events WHERE tool_id = ? AND rev <= ?`, r.ToolID, next-ledger.RolloutHistoryKeep); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM rollout_counts WHERE tool_id = ? AND epoch <> ?`, r.ToolID, r.Epoch)
		return err
	})
	if err != nil {
		return fmt.Errorf("put rollout %s: %w", r.ToolID, err)
	}
	r.Rev = next
	return nil
}

// inTx runs fn in a transaction on the writer connection and commits it.
func (s *Store) inTx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return translate(err)
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return translate(err)
	}
	return translate(tx.Commit())
}

// RolloutHistory returns up to limit (default 100) of a tool's audit
// entries, newest first.
func (s *Store) RolloutHistory(ctx context.Context, toolID string, limit int) ([]ledger.RolloutEvent, error) {
	if limit <= 0 {
		limit = 100
	}
	rows, err := s.r.QueryContext(ctx, `SELECT event FROM rollout_events WHERE tool_id = ? ORDER BY rev DESC LIMIT ?`, toolID, limit)
	if err != nil {
		return nil, fmt.Errorf("rollout history %s: %w", toolID, translate(err))
	}
	defer rows.Close()
	var out []ledger.RolloutEvent
	for rows.Next() {
		var b string
		if err := rows.Scan(&b); err != nil {
			return nil, fmt.Errorf("rollout history %s: %w", toolID, translate(err))
		}
		var ev ledger.RolloutEvent
		if err := json.Unmarshal([]byte(b), &ev); err != nil {
			return nil, fmt.Errorf("rollout history %s: %w", toolID, err)
		}
		out = append(out, ev)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("rollout history %s: %w", toolID, translate(err))
	}
	return out, nil
}

// AddRolloutCounts adds the counts to their counters in one transaction.
func (s *Store) AddRolloutCounts(ctx context.Context, counts []ledger.RolloutCount) error {
	cs := ledger.MergeRolloutCounts(counts)
	if len(cs) == 0 {
		return nil
	}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		st, err := tx.PrepareContext(ctx, `INSERT INTO rollout_counts (tool_id, epoch, version, kind, pointer, code, principal, n)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (tool_id, epoch, version, kind, pointer, code, principal) DO UPDATE SET n = n + excluded.n`)
		if err != nil {
			return err
		}
		defer st.Close()
		for _, c := range cs {
			if _, err := st.ExecContext(ctx, c.ToolID, c.Epoch, c.Version, c.Kind, c.Pointer, c.Code, c.Principal, c.N); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("add rollout counts: %w", err)
	}
	return nil
}

// RolloutCounts returns the counters of one epoch of a tool.
func (s *Store) RolloutCounts(ctx context.Context, toolID string, epoch int64) ([]ledger.RolloutCount, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT version, kind, pointer, code, principal, n FROM rollout_counts
		WHERE tool_id = ? AND epoch = ?`, toolID, epoch)
	if err != nil {
		return nil, fmt.Errorf("rollout counts %s: %w", toolID, translate(err))
	}
	defer rows.Close()
	var out []ledger.RolloutCount
	for rows.Next() {
		c := ledger.RolloutCount{ToolID: toolID, Epoch: epoch}
		if err := rows.Scan(&c.Version, &c.Kind, &c.Pointer, &c.Code, &c.Principal, &c.N); err != nil {
			return nil, fmt.Errorf("rollout counts %s: %w", toolID, translate(err))
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("rollout counts %s: %w", toolID, translate(err))
	}
	return out, nil
}

// VersionUse counts one tool's actions of every tenant per version. It scans
// the tool's actions: an offline check's query (lint, gate), not the call path's.
func (s *Store) VersionUse(ctx context.Context, toolID string) ([]ledger.VersionUse, error) {
	// The version is a field of doc (row.go), absent when empty.
	rows, err := s.r.QueryContext(ctx, `SELECT COALESCE(json_extract(doc, '$.v'), '') AS v,
			SUM(CASE WHEN state IN ('succeeded', 'rejected') THEN 0 ELSE 1 END), COUNT(*), MAX(created_at)
		FROM action_rows WHERE tool_id = ? GROUP BY v ORDER BY v`, toolID)
	if err != nil {
		return nil, fmt.Errorf("version use %s: %w", toolID, translate(err))
	}
	defer rows.Close()
	var out []ledger.VersionUse
	for rows.Next() {
		var u ledger.VersionUse
		var newest sql.NullInt64
		if err := rows.Scan(&u.Version, &u.Live, &u.Total, &newest); err != nil {
			return nil, fmt.Errorf("version use %s: %w", toolID, translate(err))
		}
		u.Newest = fromNanos(newest)
		out = append(out, u)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("version use %s: %w", toolID, translate(err))
	}
	return out, nil
}
