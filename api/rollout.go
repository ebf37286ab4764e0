package api

import "time"

// Rollout is a tool's rollout status (GET /v1/rollouts/{tool_id}): which
// version serves calls that name none, the candidate and its mode, what the
// candidate would break (shadow) or how it fares (canary), every version's
// deprecation, and the audit history, newest first.
type Rollout struct {
	ToolID string `json:"tool_id"`
	// Default is the version that serves new calls naming no version;
	// DefaultSource says whether the rollout state chose it ("rollout") or
	// the registry did (the newest version the release policy does not
	// deprecate: "registry").
	Default       string `json:"default"`
	DefaultSource string `json:"default_source"`
	// Previous is what rollback restores ("": nothing to roll back to).
	Previous string `json:"previous,omitempty"`
	// RolledBack is the version the last rollback left, while the default
	// is the one it restored: a rollback does not undo a rollback; a
	// promote serves it again.
	RolledBack string `json:"rolled_back,omitempty"`
	Candidate  string `json:"candidate,omitempty"`
	// Mode is stable, shadow, canary or halted.
	Mode   string          `json:"mode"`
	Canary *CanarySettings `json:"canary,omitempty"`
	// Revision is the rollout record's compare-and-set revision (0: none
	// stored yet); a transition may name it to apply only over it.
	Revision  int64      `json:"revision"`
	Epoch     int64      `json:"epoch"`
	UpdatedAt *time.Time `json:"updated_at,omitempty"`
	UpdatedBy string     `json:"updated_by,omitempty"`
	// Versions lists every version of the tool, oldest first.
	Versions []RolloutVersion `json:"versions"`
	// Shadow is the would-be failures of the candidate in this epoch, when
	// it was validated beside the default.
	Shadow *ShadowReport `json:"shadow,omitempty"`
	// Comparison is the canary's outcomes per version in this epoch.
	Comparison []VersionOutcomes `json:"comparison,omitempty"`
	History    []RolloutEvent    `json:"history"`
}

// CanarySettings is a canary's share and its automatic halt.
type CanarySettings struct {
	// Percent of the callers (API keys) whose new actions that name no
	// version go to the candidate, chosen by a hash of tool, tenant and key name.
	Percent float64 `json:"percent"`
	// Principals are API key names whose new actions all go to the candidate.
	Principals []string `json:"principals,omitempty"`
	// HaltMargin: the canary halts when a rate of the candidate exceeds the
	// default's by more than this fraction, once both have HaltMinSample
	// routed actions.
	HaltMargin    float64 `json:"halt_margin"`
	HaltMinSample int64   `json:"halt_min_sample"`
}

// RolloutVersion is one version of a tool as the rollout sees it.
type RolloutVersion struct {
	Version string `json:"version"`
	// Role is default, candidate, previous, rolled_back or "" for another version.
	Role string `json:"role,omitempty"`
	// Held says why toolgate.lock released the version but holds it from
	// being the default by itself (a promotion the release gate's approval
	// rule covers, with no approval); a promote makes it the default.
	Held       string `json:"held,omitempty"`
	Deprecated bool   `json:"deprecated"`
	// DeprecatedAt starts the deprecation window (from toolgate.lock's
	// deprecated_at, else from when a gateway first served the deprecation);
	// Sunset ends it, after which a new action on the version is refused
	// (410 version_retired).
	DeprecatedAt *time.Time `json:"deprecated_at,omitempty"`
	Sunset       *time.Time `json:"sunset,omitempty"`
	Retired      bool       `json:"retired"`
}

// ShadowReport counts the new calls the default accepted that the candidate
// would have refused, per error kind. It holds no argument value.
type ShadowReport struct {
	Candidate string `json:"candidate"`
	// Calls were validated against the candidate too; WouldFail of them
	// the candidate would have refused.
	Calls     int64           `json:"calls"`
	WouldFail int64           `json:"would_fail"`
	Failures  []ShadowFailure `json:"failures"`
}

// ShadowFailure is one kind of would-be failure: the argument (a JSON
// pointer), the error code, the cause in a reviewer's words, and how many
// calls it hit from which principals (API key names), most first.
type ShadowFailure struct {
	Pointer    string           `json:"pointer"`
	Code       string           `json:"code"`
	Cause      string           `json:"cause"`
	Calls      int64            `json:"calls"`
	Principals []PrincipalCount `json:"principals"`
}

// PrincipalCount is a number of calls from one principal.
type PrincipalCount struct {
	Principal string `json:"principal"`
	Calls     int64  `json:"calls"`
}

// VersionOutcomes is what the canary's routed new actions on one version came to.
type VersionOutcomes struct {
	Version string `json:"version"`
	Role    string `json:"role"` // default or candidate
	Calls   int64  `json:"calls"`
	// Invalid answered 422; Downstream4xx and Downstream5xx were answered so
	// by the downstream (5xx includes not reaching it); Unknown lost their outcome.
	Invalid       int64   `json:"invalid"`
	Downstream4xx int64   `json:"downstream_4xx"`
	Downstream5xx int64   `json:"downstream_5xx"`
	Unknown       int64   `json:"unknown"`
	InvalidRate   float64 `json:"invalid_rate"`
	Rate4xx       float64 `json:"downstream_4xx_rate"`
	Rate5xx       float64 `json:"downstream_5xx_rate"`
	UnknownRate   float64 `json:"unknown_rate"`
	// MeanLatencyMS is the mean downstream time of the executed ones.
	MeanLatencyMS float64 `json:"mean_latency_ms"`
}

// RolloutEvent is one entry of a rollout's audit history.
type RolloutEvent struct {
	Revision       int64     `json:"revision"`
	At             time.Time `json:"at"`
	By             string    `json:"by"`
	Action         string    `json:"action"`
	From           string    `json:"from,omitempty"`
	To             string    `json:"to,omitempty"`
	Candidate      string    `json:"candidate,omitempty"`
	Mode           string    `json:"mode,omitempty"`
	Approver       string    `json:"approver,omitempty"`
	ApprovalSource string    `json:"approval_source,omitempty"`
	Note           string    `json:"note,omitempty"`
	Detail         string    `json:"detail,omitempty"`
}

// RolloutList is GET /v1/rollouts: every tool's rollout the key may see.
type RolloutList struct {
	Rollouts []Rollout `json:"rollouts"`
}

// ShadowRequest is the body of POST /v1/rollouts/{tool_id}/shadow.
type ShadowRequest struct {
	Version  string `json:"version"`
	Note     string `json:"note,omitempty"`
	Revision *int64 `json:"revision,omitempty"`
}

// CanaryRequest is the body of POST /v1/rollouts/{tool_id}/canary. Version
// defaults to the current candidate; unset halt settings keep their current
// (else default) values.
type CanaryRequest struct {
	Version       string   `json:"version,omitempty"`
	Percent       *float64 `json:"percent,omitempty"`
	Principals    []string `json:"principals,omitempty"`
	HaltMargin    *float64 `json:"halt_margin,omitempty"`
	HaltMinSample *int64   `json:"halt_min_sample,omitempty"`
	Note          string   `json:"note,omitempty"`
	Revision      *int64   `json:"revision,omitempty"`
}

// PromoteRequest is the body of POST /v1/rollouts/{tool_id}/promote.
// Version defaults to the candidate; Approver defaults to the operator.
type PromoteRequest struct {
	Version  string `json:"version,omitempty"`
	Approver string `json:"approver,omitempty"`
	Note     string `json:"note,omitempty"`
	Revision *int64 `json:"revision,omitempty"`
}

// RolloutNoteRequest is the body of POST /v1/rollouts/{tool_id}/rollback
// and /halt. Version, when set, names what the operator means: the version
// a rollback restores, the candidate a halt stops; the transition is
// refused (409 rollout_conflict) when the rollout no longer matches it.
type RolloutNoteRequest struct {
	Version string `json:"version,omitempty"`
	// From, on a rollback: the default the operator saw and rolls back
	// from; refused (409 rollout_changed, naming the change that came
	// first) when it is no longer the default.
	From     string `json:"from,omitempty"`
	Note     string `json:"note,omitempty"`
	Revision *int64 `json:"revision,omitempty"`
}
