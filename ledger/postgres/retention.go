package postgres

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/toolgate/toolgate/ledger"
)

// Purge drops the arguments, result body and provider calls of up to limit
// (default 50) terminal actions created before cutoff, and increments their
// Rev, in one statement. Rows another session holds locked (a concurrent
// purge on another replica, a write in flight) are skipped, not waited for:
// the next call gets them.
func (s *Store) Purge(ctx context.Context, cutoff time.Time, limit int) (_ int, err error) {
	ctx, finish, err := s.op(ctx)
	defer finish(&err)
	if err != nil {
		return 0, err
	}
	tag, err := s.exec(ctx, `UPDATE actions
		SET arguments = NULL, result_body = NULL, provider_calls = NULL, rev = rev + 1
		WHERE (tenant, id) IN (SELECT tenant, id FROM actions
			WHERE state IN ('succeeded', 'rejected') AND created_at < $1
			  AND (arguments IS NOT NULL OR result_body IS NOT NULL OR provider_calls IS NOT NULL)
			ORDER BY created_at LIMIT $2
			FOR UPDATE SKIP LOCKED)`, bound(cutoff), defaultLimit(limit))
	if err != nil {
		return 0, fmt.Errorf("purge actions: %w", translate(err))
	}
	return int(tag.RowsAffected()), nil
}

// Forget deletes up to limit (default 50) terminal actions created before
// cutoff, oldest first, skipping rows another session holds locked.
func (s *Store) Forget(ctx context.Context, cutoff time.Time, limit int) (_ int, err error) {
	ctx, finish, err := s.op(ctx)
	defer finish(&err)
	if err != nil {
		return 0, err
	}
	tag, err := s.exec(ctx, `DELETE FROM actions
		WHERE (tenant, id) IN (SELECT tenant, id FROM actions
			WHERE state IN ('succeeded', 'rejected') AND created_at < $1
			ORDER BY created_at LIMIT $2
			FOR UPDATE SKIP LOCKED)`, bound(cutoff), defaultLimit(limit))
	if err != nil {
		return 0, fmt.Errorf("forget actions: %w", translate(err))
	}
	return int(tag.RowsAffected()), nil
}

// Delete removes one action if its stored revision is rev, in one
// conditional DELETE; ledger.ErrStale when it changed, ledger.ErrNotFound
// when it is gone.
func (s *Store) Delete(ctx context.Context, tenant, id string, rev int64) (err error) {
	ctx, finish, err := s.op(ctx)
	defer finish(&err)
	if err != nil {
		return err
	}
	var deleted, stored *int64
	err = s.writeAlone(ctx, func(c *pgx.Conn) error {
		return c.QueryRow(ctx, `WITH del AS (
			DELETE FROM actions WHERE tenant = $1 AND id = $2 AND rev = $3 RETURNING rev
		), cur AS (
			SELECT rev FROM actions WHERE tenant = $1 AND id = $2
		)
		SELECT (SELECT rev FROM del), (SELECT rev FROM cur)`, tenant, id, rev).Scan(&deleted, &stored)
	})
	switch {
	case err != nil:
		return fmt.Errorf("delete action %s: %w", id, translate(err))
	case deleted != nil:
		return nil
	case stored == nil:
		return fmt.Errorf("delete action %s: %w", id, ledger.ErrNotFound)
	default:
		return fmt.Errorf("delete action %s at rev %d (stored %d or later): %w", id, rev, *stored, ledger.ErrStale)
	}
}

// bound returns t as unix nanoseconds, clamped to the storable range, for
// comparisons.
func bound(t time.Time) int64 {
	switch {
	case t.Before(time.Unix(0, math.MinInt64)):
		return math.MinInt64
	case t.After(time.Unix(0, math.MaxInt64)):
		return math.MaxInt64
	}
	return t.UnixNano()
}
