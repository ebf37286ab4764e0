package harness

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"time"
)

// chaos kills and restarts replicas, partitions them from the downstream
// and restarts the database, at points spread evenly over the load's
// progress (with jitter), so that every event falls inside the load however
// fast it runs.
type chaos struct {
	cfg      *Config
	replicas []*replica
	ports    []*Port
	db       Database
	ha       HA
	progress func() float64 // share of actions started
	rng      *rand.Rand

	mu                            sync.Mutex
	kills, partitions, dbRestarts int
	failovers                     []Failover
}

type event struct {
	at   float64
	kind string // kill, partition, db, failover
}

func (c *chaos) schedule() []event {
	var evs []event
	spread := func(n int, kind string) {
		for i := range n {
			at := (float64(i) + 0.5 + 0.6*(c.rng.Float64()-0.5)) / float64(n)
			evs = append(evs, event{at: 0.05 + 0.85*at, kind: kind})
		}
	}
	spread(c.cfg.Kills, "kill")
	spread(c.cfg.Partitions, "partition")
	if c.db != nil && c.cfg.DBRestarts > 0 {
		evs = append(evs, event{at: 0.4 + 0.2*c.rng.Float64(), kind: "db"})
	}
	if c.ha != nil {
		spread(c.cfg.Failovers, "failover")
	}
	sort.Slice(evs, func(i, j int) bool { return evs[i].at < evs[j].at })
	return evs
}

// run fires the events; it returns when all fired or ctx ends, after any
// partition it started has healed.
func (c *chaos) run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	for _, ev := range c.schedule() {
		for c.progress() < ev.at {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(5 * time.Millisecond):
			}
		}
		switch ev.kind {
		case "kill":
			r := c.replicas[c.rng.IntN(len(c.replicas))]
			down := time.Duration(c.rng.Int64N(int64(c.cfg.KillDowntime) + 1))
			c.cfg.logf("SIGKILL replica %d at %.0f%% (down %s)", r.n, 100*c.progress(), down.Round(time.Millisecond))
			r.kill()
			c.count(&c.kills)
			time.Sleep(down)
			if err := r.start(context.WithoutCancel(ctx)); err != nil {
				return fmt.Errorf("restart after kill: %w", err)
			}
		case "partition":
			n := c.rng.IntN(len(c.ports))
			p := c.ports[n]
			c.cfg.logf("partition replica %d from the downstream at %.0f%% for %s", n, 100*c.progress(), c.cfg.PartitionLength)
			p.Partition()
			c.count(&c.partitions)
			wg.Add(1)
			go func() {
				defer wg.Done()
				sleep(ctx, c.cfg.PartitionLength)
				p.Heal()
			}()
		case "db":
			c.cfg.logf("restart PostgreSQL at %.0f%%", 100*c.progress())
			if err := c.db.Restart(); err != nil {
				return fmt.Errorf("restart the database: %w", err)
			}
			c.count(&c.dbRestarts)
		case "failover":
			if err := c.failover(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *chaos) count(p *int) {
	c.mu.Lock()
	*p++
	c.mu.Unlock()
}

func (c *chaos) fill(r *Report) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r.Kills, r.Partitions, r.DBRestarts = c.kills, c.partitions, c.dbRestarts
	r.Failovers = append([]Failover(nil), c.failovers...)
}
