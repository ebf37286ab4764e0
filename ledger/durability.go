package ledger

import "context"

// Durability is a store's account of whether a write it reports committed
// survives a crash of its server and a failover to a standby: what start-up
// logs and /readyz show.
type Durability struct {
	// Settings are the server settings read, by name (for PostgreSQL:
	// fsync, synchronous_commit, synchronous_standby_names, full_page_writes).
	Settings map[string]string `json:"settings"`
	// SyncStandbys is how many synchronous standbys are connected now; -1
	// when the store may not see it.
	SyncStandbys int `json:"sync_standbys"`
	// Replicated reports that every commit waits for a synchronous standby,
	// so an acknowledged write survives the loss of the primary.
	Replicated bool `json:"replicated"`
	// Warnings name each way a committed write could still be lost, in
	// words an operator can act on; empty when there is none.
	Warnings []string `json:"warnings"`
}

// DurabilityReporter is a Store that can report its Durability.
type DurabilityReporter interface {
	Durability(ctx context.Context) (Durability, error)
}

// ReadinessReporter is a Store that can say why it does not serve yet (a
// shared database still being set up, a primary whose commits wait for a
// standby that is not connected), in words for an operator: /readyz shows
// it. Unready returns "" once the store serves.
type ReadinessReporter interface {
	Unready() string
}
