package config

import (
	"time"

	"github.com/toolgate/toolgate/internal/defaults"
)

// The limits against slow and greedy clients and the byte bounds of the
// gateway's memory (docs/security.md). Each default is internal/defaults',
// which the owning package's Default* constant is too.
const (
	DefaultReadHeaderTimeout      = defaults.ReadHeaderTimeout
	DefaultReadTimeout            = defaults.ReadTimeout
	DefaultIdleTimeout            = defaults.IdleTimeout
	DefaultMaxHeaderBytes         = defaults.MaxHeaderBytes
	DefaultInFlightPerKey         = defaults.InFlightPerKey
	DefaultInFlightPerTenant      = defaults.InFlightPerTenant
	DefaultMCPStreamsPerKey       = defaults.MCPStreamsPerKey
	DefaultMCPStreams             = defaults.MCPStreams
	DefaultMCPStoredStreamsPerKey = defaults.MCPStoredStreamsPerKey
	DefaultMCPStoredStreams       = defaults.MCPStoredStreams
	DefaultMCPStoredBytesPerKey   = defaults.MCPStoredBytesPerKey
	DefaultMCPStoredBytes         = defaults.MCPStoredBytes
	DefaultReplayCacheEntries     = defaults.ReplayCacheEntries
	DefaultReplayCacheBytes       = defaults.ReplayCacheBytes
	DefaultReplayCacheEntryBytes  = defaults.ReplayCacheEntryBytes
	DefaultDecisionLogQueueBytes  = defaults.DecisionLogQueueBytes
	DefaultDecisionLogMaxPayload  = defaults.DecisionLogMaxPayloadBytes
)

// HTTP is the HTTP server's limits.
type HTTP struct {
	ReadHeaderTimeout time.Duration `yaml:"read_header_timeout"` // default 10s
	ReadTimeout       time.Duration `yaml:"read_timeout"`        // the whole request, body included; default 30s
	// WriteTimeout bounds a request from the end of its head to the end of
	// its answer. Default: read_timeout + the longer of join_timeout and 3 ×
	// the longest binding timeout + 10s (defaults.WriteTimeout).
	WriteTimeout   time.Duration `yaml:"write_timeout"`
	IdleTimeout    time.Duration `yaml:"idle_timeout"`     // default 30s
	MaxHeaderBytes int           `yaml:"max_header_bytes"` // default 65536
	// PublicURL is the gateway's address as its clients reach it (behind a
	// proxy or a load balancer), named as the server of GET /v1/openapi.json;
	// default "": the scheme and host each request was sent to.
	PublicURL string `yaml:"public_url"`
}

// Limits caps what one caller may hold at once.
type Limits struct {
	InFlightPerKey    int `yaml:"in_flight_per_key"`    // default 256; -1: no cap
	InFlightPerTenant int `yaml:"in_flight_per_tenant"` // default 1024; -1: no cap
	// MCPStreamsPerKey and MCPStreams cap the MCP notification streams
	// (GET /mcp) open at once for one API key and on one gateway.
	MCPStreamsPerKey int `yaml:"mcp_streams_per_key"` // default 32; -1: no cap
	MCPStreams       int `yaml:"mcp_streams"`         // default 1024; -1: no cap
	// MCPStoredStreamsPerKey, MCPStoredStreams, MCPStoredBytesPerKey and
	// MCPStoredBytes bound the MCP tools/call streams kept in the ledger
	// for resumption (within their 15-minute retention), per API key and
	// in all; a call past a bound runs, but its stream is not kept.
	MCPStoredStreamsPerKey int   `yaml:"mcp_stored_streams_per_key"` // default 1000; -1: no cap
	MCPStoredStreams       int   `yaml:"mcp_stored_streams"`         // default 20000; -1: no cap
	MCPStoredBytesPerKey   int64 `yaml:"mcp_stored_bytes_per_key"`   // default 32 MiB; -1: no cap
	MCPStoredBytes         int64 `yaml:"mcp_stored_bytes"`           // default 512 MiB; -1: no cap
}

// ReplayCache bounds the cache of finished actions that replays are answered from.
type ReplayCache struct {
	Entries       int   `yaml:"entries"`         // default 10000; -1 turns the cache off
	Bytes         int64 `yaml:"bytes"`           // default 64 MiB
	MaxEntryBytes int64 `yaml:"max_entry_bytes"` // default 256 KiB: a larger action is replayed from the ledger
}

func (c *Config) applyLimitDefaults() {
	setDur(&c.HTTP.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	setDur(&c.HTTP.ReadTimeout, DefaultReadTimeout)
	setDur(&c.HTTP.IdleTimeout, DefaultIdleTimeout)
	setInt(&c.HTTP.MaxHeaderBytes, DefaultMaxHeaderBytes)
	if c.HTTP.WriteTimeout == 0 {
		c.HTTP.WriteTimeout = c.defaultWriteTimeout()
	}
	setInt(&c.Limits.InFlightPerKey, DefaultInFlightPerKey)
	setInt(&c.Limits.InFlightPerTenant, DefaultInFlightPerTenant)
	setInt(&c.Limits.MCPStreamsPerKey, DefaultMCPStreamsPerKey)
	setInt(&c.Limits.MCPStreams, DefaultMCPStreams)
	setInt(&c.Limits.MCPStoredStreamsPerKey, DefaultMCPStoredStreamsPerKey)
	setInt(&c.Limits.MCPStoredStreams, DefaultMCPStoredStreams)
	setInt64(&c.Limits.MCPStoredBytesPerKey, DefaultMCPStoredBytesPerKey)
	setInt64(&c.Limits.MCPStoredBytes, DefaultMCPStoredBytes)
	setInt(&c.ReplayCache.Entries, DefaultReplayCacheEntries)
	setInt64(&c.ReplayCache.Bytes, DefaultReplayCacheBytes)
	setInt64(&c.ReplayCache.MaxEntryBytes, DefaultReplayCacheEntryBytes)
	setInt64(&c.DecisionLog.QueueBytes, DefaultDecisionLogQueueBytes)
	setInt(&c.DecisionLog.MaxPayloadBytes, DefaultDecisionLogMaxPayload)
}

// defaultWriteTimeout is defaults.WriteTimeout of the configuration.
func (c *Config) defaultWriteTimeout() time.Duration {
	return defaults.WriteTimeout(c.HTTP.ReadTimeout, c.JoinTimeout, c.longestTimeout())
}

// longestTimeout is the longest binding timeout (defaults applied).
func (c *Config) longestTimeout() time.Duration {
	longest := time.Duration(0)
	for _, b := range c.Bindings {
		longest = max(longest, b.Timeout)
	}
	return longest
}

func (c *Config) checkLimits(bad func(path, format string, a ...any)) {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"http.read_header_timeout", c.HTTP.ReadHeaderTimeout}, {"http.read_timeout", c.HTTP.ReadTimeout},
		{"http.write_timeout", c.HTTP.WriteTimeout}, {"http.idle_timeout", c.HTTP.IdleTimeout}} {
		if d.v < 0 {
			bad(d.name, "must not be negative")
		}
	}
	if min := c.JoinTimeout + c.longestTimeout(); c.HTTP.WriteTimeout > 0 && c.HTTP.WriteTimeout < min {
		bad("http.write_timeout", "%s is shorter than join_timeout plus the longest binding timeout (%s): answers of calls within their configured times would be cut off; leave it out for %s",
			c.HTTP.WriteTimeout, min, c.defaultWriteTimeout())
	}
	for _, n := range []struct {
		name string
		v    int64
	}{{"http.max_header_bytes", int64(c.HTTP.MaxHeaderBytes)}, {"replay_cache.bytes", c.ReplayCache.Bytes},
		{"replay_cache.max_entry_bytes", c.ReplayCache.MaxEntryBytes}, {"decision_log.queue_bytes", c.DecisionLog.QueueBytes},
		{"decision_log.max_payload_bytes", int64(c.DecisionLog.MaxPayloadBytes)}} {
		if n.v < 0 {
			bad(n.name, "must not be negative")
		}
	}
	for _, n := range []struct {
		name string
		v    int
	}{{"limits.in_flight_per_key", c.Limits.InFlightPerKey}, {"limits.in_flight_per_tenant", c.Limits.InFlightPerTenant},
		{"limits.mcp_streams_per_key", c.Limits.MCPStreamsPerKey}, {"limits.mcp_streams", c.Limits.MCPStreams},
		{"limits.mcp_stored_streams_per_key", c.Limits.MCPStoredStreamsPerKey}, {"limits.mcp_stored_streams", c.Limits.MCPStoredStreams},
		{"replay_cache.entries", c.ReplayCache.Entries}} {
		if n.v < -1 {
			bad(n.name, "must be a whole number of at least 1 (or -1 for no limit)")
		}
	}
	for _, n := range []struct {
		name string
		v    int64
	}{{"limits.mcp_stored_bytes_per_key", c.Limits.MCPStoredBytesPerKey}, {"limits.mcp_stored_bytes", c.Limits.MCPStoredBytes}} {
		if n.v < -1 {
			bad(n.name, "must be a whole number of at least 1 (or -1 for no limit)")
		}
	}
	if c.ReplayCache.MaxEntryBytes > c.ReplayCache.Bytes && c.ReplayCache.Bytes > 0 {
		bad("replay_cache.max_entry_bytes", "%d is larger than replay_cache.bytes (%d)", c.ReplayCache.MaxEntryBytes, c.ReplayCache.Bytes)
	}
}

func setInt(p *int, d int) {
	if *p == 0 {
		*p = d
	}
}

func setInt64(p *int64, d int64) {
	if *p == 0 {
		*p = d
	}
}
