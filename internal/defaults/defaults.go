// Package defaults holds the default of every setting that toolgate.yaml may
// leave out and that a package below the configuration acts on: the one
// place each value is written. The owning packages define their exported
// Default* constants from these (ledger.DefaultLease is defaults.Lease), and
// config applies them to a file that leaves a field out, so the two cannot
// disagree. It imports nothing of toolgate, so any package may use it.
package defaults

import "time"

// The ledger's (ledger.Service).
const (
	// Lease is how long a running claim lasts without renewal.
	Lease = 30 * time.Second
	// ReconcileInterval is the time between the reconciler's passes.
	ReconcileInterval = 5 * time.Second
	// ReplayCacheEntries, ReplayCacheBytes and ReplayCacheEntryBytes bound
	// the cache of finished actions that replays are answered from.
	ReplayCacheEntries          = 10_000
	ReplayCacheBytes      int64 = 64 << 20
	ReplayCacheEntryBytes int64 = 256 << 10
)

// The call service's (toolcall.Config).
const (
	// JoinTimeout is how long a duplicate waits for a running action.
	JoinTimeout = 5 * time.Second
	// Tenant is the tenant of every call when the gateway has no keys.
	Tenant = "default"
)

// The gateway's: its request bound, the HTTP server's limits, the caps of
// what one caller may hold, and the MCP server's settings.
const (
	// MaxBodyBytes caps a request body.
	MaxBodyBytes = 1 << 20
	// ReadHeaderTimeout bounds reading a request's head.
	ReadHeaderTimeout = 10 * time.Second
	// ReadTimeout bounds reading a whole request, body included.
	ReadTimeout = 30 * time.Second
	// IdleTimeout closes a keep-alive connection idle this long.
	IdleTimeout = 30 * time.Second
	// MaxHeaderBytes caps a request's head (431 beyond it).
	MaxHeaderBytes = 64 << 10
	// WriteMargin is added to the longest a handler can take, for the
	// ledger's writes and the answer itself (WriteTimeout).
	WriteMargin = 10 * time.Second
	// InFlightPerKey and InFlightPerTenant cap the requests in flight at
	// once for one API key and for one tenant.
	InFlightPerKey    = 256
	InFlightPerTenant = 1024
	// MCPStreamsPerKey and MCPStreams cap the MCP notification streams open
	// at once for one API key and on one gateway.
	MCPStreamsPerKey = 32
	MCPStreams       = 1024
	// MCPStoredStreamsPerKey, MCPStoredStreams, MCPStoredBytesPerKey and
	// MCPStoredBytes bound the MCP tools/call streams kept for resumption.
	MCPStoredStreamsPerKey       = 1000
	MCPStoredStreams             = 20000
	MCPStoredBytesPerKey   int64 = 32 << 20
	MCPStoredBytes         int64 = 512 << 20
	// MCPTaskAfter is how long a tools/call of a client that declared the
	// MCP tasks extension runs before it is answered with a task.
	MCPTaskAfter = time.Second
)

// WriteTimeout is the HTTP server's default write timeout: reading the body
// (readTimeout), then the longer of a duplicate's wait (joinTimeout) and an
// execution (the state probe, the call and the probe again, each up to the
// binding's timeout), plus WriteMargin. A zero or negative readTimeout or
// joinTimeout takes its default.
func WriteTimeout(readTimeout, joinTimeout, longestBindingTimeout time.Duration) time.Duration {
	if readTimeout <= 0 {
		readTimeout = ReadTimeout
	}
	if joinTimeout <= 0 {
		joinTimeout = JoinTimeout
	}
	return readTimeout + max(joinTimeout, 3*longestBindingTimeout) + WriteMargin
}

// A binding's, used when its field is zero (invoke.Binding).
const (
	Method            = "POST"
	DownstreamTimeout = 5 * time.Second
	IdempotencyHeader = "Idempotency-Key"
	DownstreamKey     = "{tenant}:{action_id}"
	MaxAttempts       = 3
	HoldAfter         = 15 * time.Minute
	SettleAfter       = 10 * time.Second
)

// The decision log's (decisionlog.Config, decisionlog.ArgumentsMode).
const (
	// DecisionLogArguments is the arguments mode: payloads with x-sensitive
	// values erased or masked.
	DecisionLogArguments = "masked"
	// DecisionLogQueueBytes bounds the bytes of records waiting to be written.
	DecisionLogQueueBytes int64 = 16 << 20
	// DecisionLogMaxPayloadBytes: a larger payload is logged by its digest.
	DecisionLogMaxPayloadBytes = 64 << 10
)

// The upstream MCP servers' (upstream).
const (
	// UpstreamCheckInterval is how often every bound server's tools/list is read.
	UpstreamCheckInterval = time.Minute
	// IdempotencyMeta is the _meta key of tools/call that carries the
	// downstream key when the binding names none.
	IdempotencyMeta = "toolgate/idempotency_key"
)
