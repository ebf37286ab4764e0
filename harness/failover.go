package harness

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"
)

// HA is a PostgreSQL primary with one streaming standby that the harness
// fails over (internal/pgtest.ReplicaSet satisfies it). The ledger's DSN
// must name both servers.
type HA interface {
	// StallReplication holds back what the primary sends the standby
	// until the next KillPrimary: the standby falls behind.
	StallReplication()
	// KillPrimary SIGKILLs every process of the primary at once.
	KillPrimary() error
	// Promote makes the standby the primary and returns once it takes
	// writes.
	Promote() error
	// Rejoin makes the old primary the new primary's standby and returns
	// how ("pg_rewind", or a fresh base backup).
	Rejoin() (string, error)
}

// Failover is what one failover of the run measured.
type Failover struct {
	At     float64   // share of the actions started when the primary died
	Killed time.Time // when it died
	// Promoted is from the death to the standby taking writes.
	Promoted time.Duration
	// Recovery (the recovery time) is from the death to the first action
	// that a request sent after it ran to success (not a replay); 0 when
	// none did.
	Recovery time.Duration
	// Unavailable counts the 503 ledger_unavailable answers from the death
	// to the next failover (or the end).
	Unavailable int
	// Rejoined is from the promotion to the old primary streaming as the
	// new standby (0 when it was not rejoined), and RejoinedBy how.
	Rejoined   time.Duration
	RejoinedBy string
}

// failover fails the primary over once: an optional stall of the
// replication (so the standby falls behind), the primary's death, the
// standby's promotion, and (when rejoin) the old primary's return as the
// standby.
func (c *chaos) failover(ctx context.Context) error {
	var f Failover
	if d := c.cfg.StallBeforeKill; d > 0 {
		c.cfg.logf("stall the standby's replication at %.0f%% for %s", 100*c.progress(), d)
		c.ha.StallReplication()
		sleep(ctx, d)
	}
	f.At = c.progress()
	verb := "SIGKILL"
	if v, ok := c.ha.(interface{ Verb() string }); ok {
		verb = v.Verb() // an HA whose "kill" is something else (a planned switchover)
	}
	c.cfg.logf("%s the PostgreSQL primary at %.0f%%", verb, 100*f.At)
	if err := c.ha.KillPrimary(); err != nil {
		return fmt.Errorf("kill the primary: %w", err)
	}
	// Its death is complete once KillPrimary returns: a request sent later
	// cannot have reached it.
	f.Killed = time.Now()
	if err := c.ha.Promote(); err != nil {
		return fmt.Errorf("promote the standby: %w", err)
	}
	f.Promoted = time.Since(f.Killed)
	c.cfg.logf("standby promoted %s after the primary's death", f.Promoted.Round(time.Millisecond))
	if c.cfg.Rejoin || c.cfg.Failovers > 1 {
		start := time.Now()
		how, err := c.ha.Rejoin()
		if err != nil {
			return fmt.Errorf("rejoin the old primary: %w", err)
		}
		f.Rejoined, f.RejoinedBy = time.Since(start), how
		c.cfg.logf("old primary rejoined as the standby by %s in %s", how, f.Rejoined.Round(time.Millisecond))
	}
	c.mu.Lock()
	c.failovers = append(c.failovers, f)
	c.mu.Unlock()
	return nil
}

// measureFailovers fills each failover's recovery time and 503 count from
// what the clients saw.
func measureFailovers(fs []Failover, ld *loader) {
	ld.timesMu.Lock()
	defer ld.timesMu.Unlock()
	for i := range fs {
		end := time.Now()
		if i+1 < len(fs) {
			end = fs[i+1].Killed
		}
		k := fs[i].Killed
		for _, s := range ld.fresh {
			if !s.sent.Before(k) && (fs[i].Recovery == 0 || s.got.Sub(k) < fs[i].Recovery) {
				fs[i].Recovery = s.got.Sub(k)
			}
		}
		for _, t := range ld.unavailable {
			if !t.Before(k) && t.Before(end) {
				fs[i].Unavailable++
			}
		}
	}
}

// failoverRows are the report's rows about failovers.
func (r *Report) failoverRows(row func(string, any)) {
	if len(r.Failovers) == 0 {
		return
	}
	row("PostgreSQL failovers", fmt.Sprintf("%d (%s)", len(r.Failovers), r.HA))
	var rec []time.Duration
	for i, f := range r.Failovers {
		rejoin := "not rejoined"
		if f.RejoinedBy != "" {
			rejoin = fmt.Sprintf("rejoined in %s by %s", f.Rejoined.Round(10*time.Millisecond), f.RejoinedBy)
		}
		recovery := "no new action succeeded"
		if f.Recovery > 0 {
			recovery = "first new action succeeded " + f.Recovery.Round(10*time.Millisecond).String()
			rec = append(rec, f.Recovery)
		}
		row(fmt.Sprintf("failover %d at %.0f%%", i+1, 100*f.At), fmt.Sprintf("promoted %s, %s after the kill; %d × 503 ledger_unavailable; %s",
			f.Promoted.Round(10*time.Millisecond), recovery, f.Unavailable, rejoin))
	}
	if len(rec) > 0 {
		sort.Slice(rec, func(i, j int) bool { return rec[i] < rec[j] })
		parts := []string{"median " + rec[len(rec)/2].Round(10*time.Millisecond).String(), "max " + rec[len(rec)-1].Round(10*time.Millisecond).String()}
		row("recovery time (primary's death → first new action succeeded)", strings.Join(parts, ", "))
	}
}
