package postgres

import "context"

// BatchStats returns how many batches s has sent and how many writes they
// carried (0, 0 with Config.NoBatch).
func BatchStats(s *Store) (batches, writes int64) {
	if s.batch == nil {
		return 0, 0
	}
	return s.batch.batches.Load(), s.batch.writes.Load()
}

// FreshAnalyzed is closed once the store has analyzed the fresh table it
// opened (see analyze.go); nil when the table was not fresh.
func FreshAnalyzed(s *Store) <-chan struct{} {
	if !s.fresh.armed {
		return nil
	}
	return s.fresh.ran
}

// AnalyzeAfter is how many inserts a store makes before analyzing a fresh table.
const AnalyzeAfter = analyzeAfter

// MigrationLockKey is the advisory lock key of schema's migrations.
func MigrationLockKey(schema string) int64 { return lockKey(schema) }

// Pooled reports whether s found a transaction pooler in the way, and how.
func Pooled(s *Store) (bool, string) { return s.pooling.pooled, s.pooling.evidence }

// Setting reads a setting as the store's statements see it.
func Setting(s *Store, ctx context.Context, name string) (string, error) {
	var v string
	err := s.queryRow(ctx, `SELECT current_setting($1)`, name).Scan(&v)
	return v, err
}

// Exec runs one statement as the store runs its own (with no QueryTimeout).
func Exec(s *Store, ctx context.Context, sql string) error {
	_, err := s.exec(ctx, sql)
	return err
}

// SkipPoolerProbe makes stores opened from now on take their DSN for a
// direct one, until the returned func is called.
func SkipPoolerProbe() (restore func()) {
	skipPoolerProbe = true
	return func() { skipPoolerProbe = false }
}
