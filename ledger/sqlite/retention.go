package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/toolgate/toolgate/ledger"
)

// Purge drops the arguments, result body and provider calls of up to limit
// terminal actions created before cutoff, in one statement (one short write
// transaction, so calls interleave between batches).
func (s *Store) Purge(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	res, err := s.w.ExecContext(ctx, `UPDATE action_rows
		SET arguments = NULL, result_body = NULL, evidence = NULL, rev = rev + 1
		WHERE rid IN (SELECT rid FROM action_rows
			WHERE state IN ('succeeded', 'rejected') AND created_at < ?
			  AND (arguments IS NOT NULL OR result_body IS NOT NULL OR evidence IS NOT NULL)
			LIMIT ?)`, bound(cutoff), defaultLimit(limit))
	if err != nil {
		return 0, fmt.Errorf("purge actions: %w", translate(err))
	}
	n, err := res.RowsAffected()
	return int(n), translate(err)
}

// Forget deletes up to limit terminal actions created before cutoff.
func (s *Store) Forget(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	res, err := s.w.ExecContext(ctx, `DELETE FROM action_rows WHERE rid IN (SELECT rid FROM action_rows
			WHERE state IN ('succeeded', 'rejected') AND created_at < ? LIMIT ?)`, bound(cutoff), defaultLimit(limit))
	if err != nil {
		return 0, fmt.Errorf("forget actions: %w", translate(err))
	}
	n, err := res.RowsAffected()
	return int(n), translate(err)
}

// Delete removes one action at revision rev.
func (s *Store) Delete(ctx context.Context, tenant, id string, rev int64) error {
	res, err := s.w.ExecContext(ctx, `DELETE FROM action_rows WHERE tenant = ? AND id = ? AND rev = ?`, tenant, id, rev)
	if err != nil {
		return fmt.Errorf("delete action %s: %w", id, translate(err))
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("delete action %s: %w", id, translate(err))
	} else if n == 1 {
		return nil
	}
	var stored int64
	if err := s.rev.QueryRowContext(ctx, tenant, id).Scan(&stored); err != nil {
		return fmt.Errorf("delete action %s: %w", id, translate(err))
	}
	return fmt.Errorf("delete action %s at rev %d (stored %d): %w", id, rev, stored, ledger.ErrStale)
}
