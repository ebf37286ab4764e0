package postgres

// BatchStats returns how many batches s has sent and how many writes they
// carried (0, 0 with Config.NoBatch).
func BatchStats(s *Store) (batches, writes int64) {
	if s.batch == nil {
		return 0, 0
	}
	return s.batch.batches.Load(), s.batch.writes.Load()
}
