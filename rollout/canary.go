package rollout

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/ledger"
)

// Bucket places a caller (a principal of a tenant) in one of 10,000 buckets
// by a hash of the tool, tenant and principal, so every replica puts it in
// the same one, and what a door advertises to that caller is what serves its
// next new action. The tool is in the hash so that one caller is not in
// every canary's share.
func Bucket(toolID, tenant, principal string) int {
	h := sha256.New()
	for _, s := range []string{toolID, tenant, principal} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return int(binary.BigEndian.Uint64(h.Sum(nil)[:8]) % 10000)
}

// ToCandidate reports whether a canary routes the new actions of a caller
// (tenant, principal) to its candidate: every action of a named principal,
// and every action of the callers whose bucket falls under the canary's
// share. The choice is per caller, not per action: a canary of P percent
// takes about P percent of the callers, each wholly.
func ToCandidate(r *ledger.Rollout, tenant, principal string) bool {
	if r == nil || r.Mode != ledger.RolloutCanary {
		return false
	}
	if slices.Contains(r.CanaryPrincipals, principal) {
		return true
	}
	return Bucket(r.ToolID, tenant, principal) < r.CanaryBasisPoints
}

// The counter kinds (ledger.RolloutCount.Kind).
const (
	// Shadow validation, on the candidate's version: calls validated per
	// principal, calls the candidate would refuse per principal, and each
	// error kind (pointer, code) per principal.
	KindShadowCalls  = "shadow_calls"
	KindShadowFailed = "shadow_failed"
	KindShadowError  = "shadow_error"
	// Canary outcomes of routed new actions, per version.
	KindCalls     = "calls"
	KindInvalid   = "invalid"
	Kind4xx       = "downstream_4xx"
	Kind5xx       = "downstream_5xx"
	KindUnknown   = "unknown"
	KindLatencyMS = "latency_ms" // the sum of downstream milliseconds
	KindLatencyN  = "latency_n"  // how many were summed
)

// Outcome is what a routed new action came to, for the canary's comparison.
type Outcome struct {
	Invalid, Downstream4xx, Downstream5xx, Unknown bool
	// Executed: sent downstream and answered; LatencyMS is how long it took.
	Executed  bool
	LatencyMS int64
}

// Counts returns the counters one routed action adds on version.
func (o Outcome) Counts(toolID string, epoch int64, version string) []ledger.RolloutCount {
	c := func(kind string, n int64) ledger.RolloutCount {
		return ledger.RolloutCount{ToolID: toolID, Epoch: epoch, Version: version, Kind: kind, N: n}
	}
	out := []ledger.RolloutCount{c(KindCalls, 1)}
	for _, k := range []struct {
		on   bool
		kind string
	}{{o.Invalid, KindInvalid}, {o.Downstream4xx, Kind4xx}, {o.Downstream5xx, Kind5xx}, {o.Unknown, KindUnknown}} {
		if k.on {
			out = append(out, c(k.kind, 1))
		}
	}
	if o.Executed {
		out = append(out, c(KindLatencyMS, o.LatencyMS), c(KindLatencyN, 1))
	}
	return out
}

// Outcomes sums one version's canary counters into its comparison row.
func Outcomes(counts []ledger.RolloutCount, version, role string) api.VersionOutcomes {
	o := api.VersionOutcomes{Version: version, Role: role}
	var latency, latencyN int64
	for _, c := range counts {
		if c.Version != version {
			continue
		}
		switch c.Kind {
		case KindCalls:
			o.Calls += c.N
		case KindInvalid:
			o.Invalid += c.N
		case Kind4xx:
			o.Downstream4xx += c.N
		case Kind5xx:
			o.Downstream5xx += c.N
		case KindUnknown:
			o.Unknown += c.N
		case KindLatencyMS:
			latency += c.N
		case KindLatencyN:
			latencyN += c.N
		}
	}
	if o.Calls > 0 {
		n := float64(o.Calls)
		o.InvalidRate, o.Rate4xx, o.Rate5xx, o.UnknownRate = float64(o.Invalid)/n, float64(o.Downstream4xx)/n, float64(o.Downstream5xx)/n, float64(o.Unknown)/n
	}
	if latencyN > 0 {
		o.MeanLatencyMS = float64(latency) / float64(latencyN)
	}
	return o
}

// Trip returns why the candidate's outcomes should halt the canary, or "":
// once both versions have r.HaltMinSample routed actions, a rate of the
// candidate (422, downstream 4xx, downstream 5xx, unknown) above the
// default's by more than r.HaltMargin.
func Trip(r *ledger.Rollout, def, cand api.VersionOutcomes) string {
	minimum := r.HaltMinSample
	if minimum <= 0 {
		minimum = DefaultHaltMinSample
	}
	if def.Calls < minimum || cand.Calls < minimum {
		return ""
	}
	for _, m := range []struct {
		name      string
		def, cand float64
	}{
		{"422 rate", def.InvalidRate, cand.InvalidRate},
		{"downstream 4xx rate", def.Rate4xx, cand.Rate4xx},
		{"downstream 5xx rate", def.Rate5xx, cand.Rate5xx},
		{"unknown rate", def.UnknownRate, cand.UnknownRate},
	} {
		if m.cand > m.def+r.HaltMargin {
			return fmt.Sprintf("the candidate %s's %s is %s against the default %s's %s (%d and %d actions; margin %s)",
				cand.Version, m.name, percentOf(m.cand), def.Version, percentOf(m.def), cand.Calls, def.Calls, percentOf(r.HaltMargin))
		}
	}
	return ""
}
