package defaults_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/decisionlog"
	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/internal/defaults"
	"github.com/toolgate/toolgate/invoke"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/toolcall"
	"github.com/toolgate/toolgate/upstream"
)

// TestOwnersUseTheLeaf: the Default* constant of each package that acts on a
// setting, and the default config applies to a file that leaves it out, are
// the leaf's value, of the same type, so a default changed in one place
// cannot leave the other behind (config's TestDefaults holds the values to
// the documented ones).
func TestOwnersUseTheLeaf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		leaf, owner any
		configValue any // config's Default*, nil when config has none
	}{
		{"ledger.DefaultLease", defaults.Lease, ledger.DefaultLease, config.DefaultLease},
		{"ledger.DefaultReconcileInterval", defaults.ReconcileInterval, ledger.DefaultReconcileInterval, config.DefaultReconcileInterval},
		{"ledger.DefaultCacheSize", defaults.ReplayCacheEntries, ledger.DefaultCacheSize, config.DefaultReplayCacheEntries},
		{"ledger.DefaultCacheBytes", defaults.ReplayCacheBytes, ledger.DefaultCacheBytes, config.DefaultReplayCacheBytes},
		{"ledger.DefaultCacheEntryBytes", defaults.ReplayCacheEntryBytes, ledger.DefaultCacheEntryBytes, config.DefaultReplayCacheEntryBytes},
		{"toolcall.DefaultJoinTimeout", defaults.JoinTimeout, toolcall.DefaultJoinTimeout, config.DefaultJoinTimeout},
		{"toolcall.DefaultTenant", defaults.Tenant, toolcall.DefaultTenant, config.DefaultTenant},
		{"gateway.DefaultTenant", defaults.Tenant, gateway.DefaultTenant, nil},
		{"gateway.DefaultMaxBodyBytes", defaults.MaxBodyBytes, gateway.DefaultMaxBodyBytes, nil},
		{"gateway.DefaultReadHeaderTimeout", defaults.ReadHeaderTimeout, gateway.DefaultReadHeaderTimeout, config.DefaultReadHeaderTimeout},
		{"gateway.DefaultReadTimeout", defaults.ReadTimeout, gateway.DefaultReadTimeout, config.DefaultReadTimeout},
		{"gateway.DefaultIdleTimeout", defaults.IdleTimeout, gateway.DefaultIdleTimeout, config.DefaultIdleTimeout},
		{"gateway.DefaultMaxHeaderBytes", defaults.MaxHeaderBytes, gateway.DefaultMaxHeaderBytes, config.DefaultMaxHeaderBytes},
		{"gateway.DefaultMaxInFlightPerKey", defaults.InFlightPerKey, gateway.DefaultMaxInFlightPerKey, config.DefaultInFlightPerKey},
		{"gateway.DefaultMaxInFlightPerTenant", defaults.InFlightPerTenant, gateway.DefaultMaxInFlightPerTenant, config.DefaultInFlightPerTenant},
		{"gateway.DefaultMaxMCPStreamsPerKey", defaults.MCPStreamsPerKey, gateway.DefaultMaxMCPStreamsPerKey, config.DefaultMCPStreamsPerKey},
		{"gateway.DefaultMaxMCPStreams", defaults.MCPStreams, gateway.DefaultMaxMCPStreams, config.DefaultMCPStreams},
		{"gateway.DefaultMaxMCPStoredStreamsPerKey", defaults.MCPStoredStreamsPerKey, gateway.DefaultMaxMCPStoredStreamsPerKey, config.DefaultMCPStoredStreamsPerKey},
		{"gateway.DefaultMaxMCPStoredStreams", defaults.MCPStoredStreams, gateway.DefaultMaxMCPStoredStreams, config.DefaultMCPStoredStreams},
		{"gateway.DefaultMaxMCPStoredBytesPerKey", defaults.MCPStoredBytesPerKey, gateway.DefaultMaxMCPStoredBytesPerKey, config.DefaultMCPStoredBytesPerKey},
		{"gateway.DefaultMaxMCPStoredBytes", defaults.MCPStoredBytes, gateway.DefaultMaxMCPStoredBytes, config.DefaultMCPStoredBytes},
		{"gateway.DefaultMCPTaskAfter", defaults.MCPTaskAfter, gateway.DefaultMCPTaskAfter, config.DefaultMCPTaskAfter},
		{"invoke.DefaultMethod", defaults.Method, invoke.DefaultMethod, config.DefaultMethod},
		{"invoke.DefaultTimeout", defaults.DownstreamTimeout, invoke.DefaultTimeout, config.DefaultDownstreamTimeout},
		{"invoke.DefaultIdempotencyHeader", defaults.IdempotencyHeader, invoke.DefaultIdempotencyHeader, config.DefaultIdempotencyHeader},
		{"invoke.DefaultDownstreamKey", defaults.DownstreamKey, invoke.DefaultDownstreamKey, config.DefaultDownstreamKey},
		{"invoke.DefaultMaxAttempts", defaults.MaxAttempts, invoke.DefaultMaxAttempts, config.DefaultMaxAttempts},
		{"invoke.DefaultHoldAfter", defaults.HoldAfter, invoke.DefaultHoldAfter, config.DefaultHoldAfter},
		{"invoke.DefaultSettleAfter", defaults.SettleAfter, invoke.DefaultSettleAfter, config.DefaultSettleAfter},
		{"decisionlog.ModeMasked", decisionlog.ArgumentsMode(defaults.DecisionLogArguments), decisionlog.ModeMasked, decisionlog.ArgumentsMode(config.DefaultDecisionLogArgs)},
		{"decisionlog.DefaultQueueBytes", defaults.DecisionLogQueueBytes, decisionlog.DefaultQueueBytes, config.DefaultDecisionLogQueueBytes},
		{"decisionlog.DefaultMaxPayloadBytes", defaults.DecisionLogMaxPayloadBytes, decisionlog.DefaultMaxPayloadBytes, config.DefaultDecisionLogMaxPayload},
		{"upstream.DefaultCheckInterval", defaults.UpstreamCheckInterval, upstream.DefaultCheckInterval, config.DefaultUpstreamCheck},
		{"upstream.DefaultKeyMeta", defaults.IdempotencyMeta, upstream.DefaultKeyMeta, config.DefaultIdempotencyMeta},
	}
	for _, tt := range tests {
		if fmt.Sprintf("%T %v", tt.owner, tt.owner) != fmt.Sprintf("%T %v", tt.leaf, tt.leaf) {
			t.Errorf("%s = %T %v; internal/defaults has %T %v", tt.name, tt.owner, tt.owner, tt.leaf, tt.leaf)
		}
		if tt.configValue != nil && fmt.Sprintf("%T %v", tt.configValue, tt.configValue) != fmt.Sprintf("%T %v", tt.leaf, tt.leaf) {
			t.Errorf("config's default for %s = %T %v; internal/defaults has %T %v", tt.name, tt.configValue, tt.configValue, tt.leaf, tt.leaf)
		}
	}
	// config's max_body_bytes is an int64 field; the gateway's cap is untyped.
	if config.DefaultMaxBodyBytes != defaults.MaxBodyBytes {
		t.Errorf("config.DefaultMaxBodyBytes = %d; internal/defaults has %d", config.DefaultMaxBodyBytes, defaults.MaxBodyBytes)
	}
	// The modes: "" reads as the default one.
	if m, err := decisionlog.ParseArgumentsMode(""); err != nil || string(m) != defaults.DecisionLogArguments {
		t.Errorf(`decisionlog.ParseArgumentsMode("") = %q, %v; the default is %q`, m, err, defaults.DecisionLogArguments)
	}
}

// TestWriteTimeout: the gateway's default write timeout and config's are the
// leaf's formula, zero read and join timeouts taking their defaults.
func TestWriteTimeout(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ read, join, longest, want time.Duration }{
		{0, 0, 0, 30*time.Second + 5*time.Second + 10*time.Second},
		{10 * time.Second, 2 * time.Second, 4 * time.Second, 10*time.Second + 12*time.Second + 10*time.Second},
		{time.Second, 20 * time.Second, time.Second, time.Second + 20*time.Second + 10*time.Second},
	} {
		if got := defaults.WriteTimeout(tt.read, tt.join, tt.longest); got != tt.want {
			t.Errorf("WriteTimeout(%s, %s, %s) = %s, want %s", tt.read, tt.join, tt.longest, got, tt.want)
		}
		if got := gateway.WriteTimeoutFor(tt.read, tt.join, tt.longest); got != tt.want {
			t.Errorf("gateway.WriteTimeoutFor(%s, %s, %s) = %s, want %s", tt.read, tt.join, tt.longest, got, tt.want)
		}
	}
	c := config.Default()
	if want := defaults.WriteTimeout(c.HTTP.ReadTimeout, c.JoinTimeout, 0); c.HTTP.WriteTimeout != want {
		t.Errorf("config's default write timeout = %s, want %s", c.HTTP.WriteTimeout, want)
	}
}
