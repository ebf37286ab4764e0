package ledger

import (
	"context"
	"fmt"
	"time"
)

// StreamStore keeps the server-sent events of MCP tools/call streams, so that
// a client whose stream dropped resumes it (Last-Event-ID) on any gateway that
// shares the ledger and receives the answer the first gateway stored, instead
// of calling again. Stores that implement it: sqlite and postgres.
type StreamStore interface {
	// OpenStream records a new stream (its Done false).
	OpenStream(ctx context.Context, s StreamInfo) error
	// AppendStreamEvent stores event idx (1, 2, …) of a stream.
	AppendStreamEvent(ctx context.Context, streamID string, idx int, data []byte) error
	// CloseStream marks a stream done: no event follows its last one.
	CloseStream(ctx context.Context, streamID string) error
	// StreamEvents returns a stream's record and its events with an index
	// above after, in order; ErrNotFound when there is no such stream.
	StreamEvents(ctx context.Context, streamID string, after int) (StreamInfo, []StreamEvent, error)
	// PruneStreams deletes the streams opened before t, with their events,
	// and returns how many.
	PruneStreams(ctx context.Context, before time.Time) (int, error)
	// StreamUsage counts the streams opened at or after since, and the bytes
	// of their events: those of one key (tenant and principal) and all.
	StreamUsage(ctx context.Context, tenant, principal string, since time.Time) (StreamUsage, error)
}

// StreamRetention is how long a stream is kept: a resumption of an older
// one finds nothing, and StreamCleaner deletes it.
const StreamRetention = 15 * time.Minute

// StreamInfo is a stored stream: who opened it (only they may resume it)
// and whether its last event is stored.
type StreamInfo struct {
	ID        string
	Tenant    string
	Principal string
	Created   time.Time
	Done      bool
}

// StreamEvent is one stored event of a stream: its index and data (one
// JSON-RPC message).
type StreamEvent struct {
	Index int
	Data  []byte
}

// StreamUsage is what the stored streams hold: of one key and in all.
type StreamUsage struct {
	KeyStreams, Streams int
	KeyBytes, Bytes     int64
}

// StreamLimits bound the stored streams: how many one key, and all keys,
// may have within the retention, and the bytes of their events. A value
// below 1 is no bound.
type StreamLimits struct {
	PerKey, Total           int
	PerKeyBytes, TotalBytes int64
}

// Exceeded names the first bound u has reached ("" for none), as its
// configuration setting names it, with what u holds of it.
func (l StreamLimits) Exceeded(u StreamUsage) (name string, held int64) {
	switch {
	case l.PerKey > 0 && u.KeyStreams >= l.PerKey:
		return "mcp_stored_streams_per_key", int64(u.KeyStreams)
	case l.PerKeyBytes > 0 && u.KeyBytes >= l.PerKeyBytes:
		return "mcp_stored_bytes_per_key", u.KeyBytes
	case l.Total > 0 && u.Streams >= l.Total:
		return "mcp_stored_streams", int64(u.Streams)
	case l.TotalBytes > 0 && u.Bytes >= l.TotalBytes:
		return "mcp_stored_bytes", u.Bytes
	}
	return "", 0
}

// StreamCleaner deletes the streams older than the retention, on a tick,
// whether or not any new stream is opened.
type StreamCleaner struct {
	Store StreamStore
	// Now is the clock. Defaults to time.Now.
	Now func() time.Time
	// Retention defaults to StreamRetention.
	Retention time.Duration
	// Interval between passes. Defaults to 1m.
	Interval time.Duration
	// Errorf, if set, receives errors a pass meets.
	Errorf func(format string, args ...any)
}

// RunOnce deletes the expired streams and reports how many. A stream whose
// age is exactly the retention counts as expired, as a resumption counts it.
func (c *StreamCleaner) RunOnce(ctx context.Context) (int, error) {
	now := time.Now()
	if c.Now != nil {
		now = c.Now()
	}
	ret := c.Retention
	if ret <= 0 {
		ret = StreamRetention
	}
	n, err := c.Store.PruneStreams(ctx, now.Add(1-ret))
	if err != nil {
		return n, fmt.Errorf("prune expired MCP streams: %w", err)
	}
	return n, nil
}

// Run makes a pass every Interval until ctx ends.
func (c *StreamCleaner) Run(ctx context.Context) {
	iv := c.Interval
	if iv <= 0 {
		iv = time.Minute
	}
	t := time.NewTicker(iv)
	defer t.Stop()
	for {
		if _, err := c.RunOnce(ctx); err != nil && c.Errorf != nil && ctx.Err() == nil {
			c.Errorf("%v", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
