package config

import (
	"testing"
	"time"
)

func TestLimitKeys(t *testing.T) {
	t.Parallel()
	c, err := Parse([]byte(`
join_timeout: 2s
http: {read_header_timeout: 2s, read_timeout: 20s, write_timeout: 40s, idle_timeout: 15s, max_header_bytes: 32768}
limits: {in_flight_per_key: 8, in_flight_per_tenant: -1, mcp_streams_per_key: 3, mcp_streams: -1, mcp_stored_streams_per_key: 5, mcp_stored_streams: -1, mcp_stored_bytes_per_key: 4096, mcp_stored_bytes: -1}
replay_cache: {entries: 500, bytes: 1048576, max_entry_bytes: 65536}
decision_log: {path: ./d.jsonl, queue_bytes: 4194304, max_payload_bytes: 8192}
bindings:
  t: {url: http://x/y, timeout: 7s}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := Config{HTTP: HTTP{2 * time.Second, 20 * time.Second, 40 * time.Second, 15 * time.Second, 32768, ""},
		Limits: Limits{8, -1, 3, -1, 5, -1, 4096, -1}, ReplayCache: ReplayCache{500, 1 << 20, 64 << 10}}
	if c.HTTP != want.HTTP || c.Limits != want.Limits || c.ReplayCache != want.ReplayCache ||
		c.DecisionLog.QueueBytes != 4<<20 || c.DecisionLog.MaxPayloadBytes != 8192 {
		t.Fatalf("parsed %+v %+v %+v %+v", c.HTTP, c.Limits, c.ReplayCache, c.DecisionLog)
	}
}

func TestLimitDefaults(t *testing.T) {
	t.Parallel()
	c, err := Parse([]byte("join_timeout: 5s\nbindings:\n  a: {url: http://x/y, timeout: 2s}\n  b: {url: http://x/z, timeout: 9s}\n"))
	if err != nil {
		t.Fatal(err)
	}
	// The write timeout covers reading the body, then an execution (probe,
	// call, probe) of the slowest binding or a join, and a margin.
	if want := 30*time.Second + 27*time.Second + 10*time.Second; c.HTTP.WriteTimeout != want {
		t.Fatalf("write timeout %s, want %s", c.HTTP.WriteTimeout, want)
	}
	if c.HTTP.ReadHeaderTimeout != 10*time.Second || c.HTTP.ReadTimeout != 30*time.Second || c.HTTP.IdleTimeout != 30*time.Second ||
		c.HTTP.MaxHeaderBytes != 64<<10 || c.Limits.InFlightPerKey != 256 || c.Limits.InFlightPerTenant != 1024 ||
		c.Limits.MCPStreamsPerKey != 32 || c.Limits.MCPStreams != 1024 ||
		c.Limits.MCPStoredStreamsPerKey != 1000 || c.Limits.MCPStoredStreams != 20000 ||
		c.Limits.MCPStoredBytesPerKey != 32<<20 || c.Limits.MCPStoredBytes != 512<<20 ||
		c.ReplayCache.Entries != 10000 || c.ReplayCache.Bytes != 64<<20 || c.ReplayCache.MaxEntryBytes != 256<<10 ||
		c.DecisionLog.QueueBytes != 16<<20 || c.DecisionLog.MaxPayloadBytes != 64<<10 {
		t.Fatalf("defaults %+v %+v %+v %+v", c.HTTP, c.Limits, c.ReplayCache, c.DecisionLog)
	}
}

func TestLimitErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, doc, want string }{
		{"typo", "http: {idle_timout: 5s}\n", `toolgate.yaml:1: http.idle_timout: unknown field; did you mean "idle_timeout"?`},
		{"negative timeout", "http: {read_timeout: -1s}\n", `toolgate.yaml:1: http.read_timeout: must not be negative`},
		{"write timeout too short", "join_timeout: 5s\nhttp: {write_timeout: 6s}\nbindings: {t: {url: http://x/y, timeout: 4s}}\n",
			`toolgate.yaml:2: http.write_timeout: 6s is shorter than join_timeout plus the longest binding timeout (9s): answers of calls within their configured times would be cut off; leave it out for 52s`},
		{"cap below -1", "limits: {in_flight_per_key: -5}\n", `toolgate.yaml:1: limits.in_flight_per_key: must be a whole number of at least 1 (or -1 for no limit)`},
		{"stream cap below -1", "limits: {mcp_streams: -2}\n", `toolgate.yaml:1: limits.mcp_streams: must be a whole number of at least 1 (or -1 for no limit)`},
		{"stored bytes below -1", "limits: {mcp_stored_bytes_per_key: -3}\n", `toolgate.yaml:1: limits.mcp_stored_bytes_per_key: must be a whole number of at least 1 (or -1 for no limit)`},
		{"negative bytes", "replay_cache: {bytes: -1}\n", `toolgate.yaml:1: replay_cache.bytes: must not be negative`},
		{"entry over the cache", "replay_cache: {bytes: 1000, max_entry_bytes: 2000}\n", `toolgate.yaml:1: replay_cache.max_entry_bytes: 2000 is larger than replay_cache.bytes (1000)`},
		{"negative queue", "decision_log: {queue_bytes: -1}\n", `toolgate.yaml:1: decision_log.queue_bytes: must not be negative`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := Parse([]byte(tt.doc)); err == nil || err.Error() != tt.want {
				t.Fatalf("error:\n%v\nwant:\n%s", err, tt.want)
			}
		})
	}
}
