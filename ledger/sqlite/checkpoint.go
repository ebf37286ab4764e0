package sqlite

import (
	"context"
	"database/sql"
	"sync"
	"time"
)

// Checkpoints.
//
// In WAL mode every commit appends pages to the -wal file, and a checkpoint
// copies them back into the database file. Left to SQLite, the connection
// that commits the write taking the WAL past 1,000 pages runs the checkpoint
// inside that commit: here, the committer, so every caller of that batch
// waits for a copy of about a thousand pages and, with synchronous=FULL, an
// fsync of the database file; under load that was every dozen batches or so.
//
// Instead a goroutine of its own, on a connection of its own, runs PASSIVE
// checkpoints (they never block the writer or readers): after every
// checkpointEvery committed writes, and once a second while anything is
// left. The writer keeps an automatic checkpoint only as a backstop, at
// backstopPages, should the background one fall behind (a reader holding an
// old snapshot stops a passive checkpoint short).

const (
	checkpointEvery = 256
	checkpointIdle  = time.Second
	backstopPages   = 10_000
)

type checkpointer struct {
	db      *sql.DB
	kick    chan struct{}
	quit    chan struct{}
	done    chan struct{}
	mu      sync.Mutex
	pending int // writes committed since the last kick
	stop    sync.Once

	// runs counts checkpoints run, for tests.
	runs int64
}

func newCheckpointer(db *sql.DB) *checkpointer {
	c := &checkpointer{db: db, kick: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	go c.run()
	return c
}

// committed tells the checkpointer that n more writes are in the WAL.
func (c *checkpointer) committed(n int) {
	c.mu.Lock()
	c.pending += n
	due := c.pending >= checkpointEvery
	if due {
		c.pending = 0
	}
	c.mu.Unlock()
	if due {
		select {
		case c.kick <- struct{}{}:
		default: // one is already due
		}
	}
}

func (c *checkpointer) run() {
	defer close(c.done)
	t := time.NewTicker(checkpointIdle)
	defer t.Stop()
	dirty := false
	for {
		select {
		case <-c.quit:
			return
		case <-c.kick:
			dirty = true
		case <-t.C:
			c.mu.Lock()
			if c.pending > 0 { // writes since the last kick, fewer than checkpointEvery
				c.pending, dirty = 0, true
			}
			c.mu.Unlock()
			if !dirty {
				continue
			}
		}
		dirty = !c.checkpoint()
	}
}

// checkpoint runs one passive checkpoint and reports whether it copied
// everything the WAL held. Errors are left for the next round (and the
// backstop): a checkpoint only moves pages already durable in the WAL.
func (c *checkpointer) checkpoint() bool {
	var busy, log, done int64
	err := c.db.QueryRowContext(context.Background(), "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &log, &done)
	c.mu.Lock()
	c.runs++
	c.mu.Unlock()
	return err == nil && busy == 0 && done >= log
}

// close stops the goroutine; closing again is a no-op, as Store.Close is.
func (c *checkpointer) close() {
	c.stop.Do(func() { close(c.quit) })
	<-c.done
}

// checkpoints returns how many checkpoints the background has run.
func (c *checkpointer) checkpoints() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.runs
}
