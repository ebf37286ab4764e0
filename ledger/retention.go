package ledger

import (
	"context"
	"fmt"
	"time"
)

// Cleaner enforces retention in the background: terminal actions older than
// Retention become tombstones (Store.Purge), and those older than
// TombstoneRetention are forgotten (Store.Forget). It works in bounded
// batches with a pause between them, so calls keep flowing while it runs.
type Cleaner struct {
	Store Store
	// Now is the clock. Defaults to time.Now.
	Now func() time.Time
	// Retention: results stay replayable this long. 0 keeps them forever.
	Retention time.Duration
	// TombstoneRetention: tombstones stay (and the key is refused) until
	// this age. 0 keeps them forever.
	TombstoneRetention time.Duration
	// Batch is the most actions one statement touches. Defaults to 500.
	Batch int
	// Pause between batches. Defaults to 10ms.
	Pause time.Duration
	// Interval between passes. Defaults to 1m.
	Interval time.Duration
	// Errorf, if set, receives errors a pass meets.
	Errorf func(format string, args ...any)
}

// RunOnce makes one pass and reports how many actions it purged and forgot.
// An action whose age is exactly the retention counts as expired, as the
// gateway counts it (the stores' cutoffs are exclusive, hence the 1ns).
func (c *Cleaner) RunOnce(ctx context.Context) (purged, forgotten int, err error) {
	now := time.Now()
	if c.Now != nil {
		now = c.Now()
	}
	batch, pause := c.Batch, c.Pause
	if batch <= 0 {
		batch = 500
	}
	if pause <= 0 {
		pause = 10 * time.Millisecond
	}
	if c.TombstoneRetention > 0 {
		if forgotten, err = c.batches(ctx, now.Add(1-c.TombstoneRetention), batch, pause, c.Store.Forget); err != nil {
			return purged, forgotten, fmt.Errorf("forget expired tombstones: %w", err)
		}
	}
	if c.Retention > 0 {
		if purged, err = c.batches(ctx, now.Add(1-c.Retention), batch, pause, c.Store.Purge); err != nil {
			return purged, forgotten, fmt.Errorf("purge expired results: %w", err)
		}
	}
	return purged, forgotten, nil
}

func (c *Cleaner) batches(ctx context.Context, cutoff time.Time, batch int, pause time.Duration, step func(context.Context, time.Time, int) (int, error)) (int, error) {
	total := 0
	for {
		n, err := step(ctx, cutoff, batch)
		total += n
		if err != nil || n < batch {
			return total, err
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return total, ctx.Err()
		case <-t.C:
		}
	}
}

// Run makes a pass every Interval until ctx ends.
func (c *Cleaner) Run(ctx context.Context) {
	iv := c.Interval
	if iv <= 0 {
		iv = time.Minute
	}
	t := time.NewTicker(iv)
	defer t.Stop()
	for {
		if _, _, err := c.RunOnce(ctx); err != nil && ctx.Err() == nil && c.Errorf != nil {
			c.Errorf("retention: %v", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
