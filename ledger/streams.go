package ledger

import (
	"context"
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
}

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
