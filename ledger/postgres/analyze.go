package postgres

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Statistics for a fresh table.
//
// The store's statements are prepared once per connection, and PostgreSQL
// may switch a prepared statement to a generic plan after a few executions.
// A generic plan made while the actions table is empty (never analyzed) can
// look rows up by (tenant, id) through actions_tenant_tool_created, whose
// last column is id, instead of the primary key: at 50,000 rows such a Get
// reads 738 buffers in 3.7 ms instead of 3 in 0.05 ms, and Update's lookups
// pay the same. The plan lasts until the table is next analyzed, which
// autovacuum does only after its next nap (a minute by default) once enough
// rows changed. So a store that opens a table with fewer than freshBelow
// rows analyzes it itself once this process has inserted analyzeAfter
// actions; an ANALYZE invalidates the cached plans of every connection.

const (
	freshBelow   = 1_000
	analyzeAfter = 500
)

type freshTable struct {
	left   atomic.Int64 // inserts to go; 0 or less: nothing to do
	armed  bool         // the table was fresh at Open
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	ran    chan struct{} // closed once the ANALYZE has run (or failed)
}

func (f *freshTable) init() {
	f.ran = make(chan struct{})
	f.ctx, f.cancel = context.WithCancel(context.Background())
}

// watchFresh arms the one ANALYZE when the table is fresh. A failing
// catalog query leaves it unarmed: autovacuum still gets there.
func (s *Store) watchFresh(ctx context.Context) {
	var tuples float64
	err := s.queryRow(ctx, `SELECT reltuples FROM pg_class WHERE oid = to_regclass($1)`,
		quoteIdent(s.schema)+".actions").Scan(&tuples)
	if err == nil && tuples < freshBelow { // -1: never analyzed
		s.fresh.left.Store(analyzeAfter)
		s.fresh.armed = true
	}
}

// inserted counts one insert of this store; the one that completes
// analyzeAfter starts the ANALYZE in the background.
func (s *Store) inserted() {
	if s.fresh.left.Load() <= 0 {
		return
	}
	if s.fresh.left.Add(-1) == 0 {
		s.fresh.wg.Add(1)
		go func() {
			defer s.fresh.wg.Done()
			defer close(s.fresh.ran)
			ctx, cancel := context.WithTimeout(s.fresh.ctx, time.Minute)
			defer cancel()
			s.exec(ctx, `ANALYZE `+quoteIdent(s.schema)+`.actions`) // best effort: autovacuum is the fallback
		}()
	}
}

// stopFresh cancels an ANALYZE still running and waits for it.
func (s *Store) stopFresh() {
	if s.fresh.cancel != nil {
		s.fresh.cancel()
	}
	s.fresh.wg.Wait()
}
