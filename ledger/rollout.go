package ledger

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"
)

// A tool's rollout state lives in the same database as its actions, so every
// gateway replica on that database serves the same default version and
// agrees on a canary, and a restart keeps it. The contracts on disk say
// which versions exist; the rollout record says which one serves a call that
// names none. Package rollout holds the rules for moving it (docs/release-gate.md).

// RolloutMode is what a rollout's candidate version does.
type RolloutMode string

// The rollout modes.
const (
	// RolloutStable: no candidate; the default serves every call that names no version.
	RolloutStable RolloutMode = ""
	// RolloutShadow: every new call served by the default is also validated
	// against the candidate, and would-be failures are counted; nothing is enforced.
	RolloutShadow RolloutMode = "shadow"
	// RolloutCanary: a share of new actions that name no version is routed
	// to the candidate; outcomes are compared per version.
	RolloutCanary RolloutMode = "canary"
	// RolloutHalted: a canary was stopped (by an operator or automatically);
	// the candidate is kept for the record and serves nothing.
	RolloutHalted RolloutMode = "halted"
)

// Rollout is one tool's rollout record. Rev is its compare-and-set revision:
// PutRollout writes only over the revision it was read at.
type Rollout struct {
	ToolID string `json:"tool_id"`
	// Default is the version that serves calls naming none; "" leaves it to
	// the registry (the newest version the release policy does not deprecate).
	Default string `json:"default,omitempty"`
	// Previous is the default before the last promote or rollback: what
	// rollback restores.
	Previous  string      `json:"previous,omitempty"`
	Candidate string      `json:"candidate,omitempty"`
	Mode      RolloutMode `json:"mode,omitempty"`
	// CanaryBasisPoints is the canary's share of new actions in hundredths
	// of a percent (0 to 10000).
	CanaryBasisPoints int `json:"canary_basis_points,omitempty"`
	// CanaryPrincipals are API key names whose new actions all go to the candidate.
	CanaryPrincipals []string `json:"canary_principals,omitempty"`
	// HaltMargin and HaltMinSample are the automatic halt's settings: the
	// canary is halted when a rate of the candidate exceeds the default's by
	// more than HaltMargin (a fraction) once both versions have HaltMinSample
	// routed actions.
	HaltMargin    float64 `json:"halt_margin,omitempty"`
	HaltMinSample int64   `json:"halt_min_sample,omitempty"`
	// Epoch names the observation period of the current candidate: counts
	// (RolloutCount) are kept per epoch, and a new shadow or canary starts a
	// new one.
	Epoch int64 `json:"epoch,omitempty"`
	// Deprecated records, per version, when a gateway first served the tool
	// with a release policy that deprecates the version, for versions whose
	// lock entry has no deprecated_at: the start of their deprecation window.
	Deprecated map[string]time.Time `json:"deprecated,omitempty"`
	// Move is the last transition that changed the default (a promote or a
	// rollback): a rollback never undoes a rollback, and a refused one
	// names the change that came first. Nil in records written before it
	// was kept.
	Move      *RolloutMove `json:"move,omitempty"`
	UpdatedAt time.Time    `json:"updated_at"`
	UpdatedBy string       `json:"updated_by,omitempty"`
	// UpdatedByTenant is the tenant of UpdatedBy's key ("" for the gateway,
	// and in records written before it was kept): an operator of another
	// tenant is not shown the key's name.
	UpdatedByTenant string `json:"updated_by_tenant,omitempty"`
	Rev             int64  `json:"rev"`
}

// RolloutMove is a change of a rollout's default: Action (promote or
// rollback) moved it From one version To another, By whom, At when, writing
// revision Rev of the record.
type RolloutMove struct {
	Action string    `json:"action"`
	From   string    `json:"from"`
	To     string    `json:"to"`
	By     string    `json:"by"`
	Tenant string    `json:"tenant,omitempty"` // By's tenant
	At     time.Time `json:"at"`
	Rev    int64     `json:"rev"`
}

// RolloutEvent is one entry of a tool's rollout audit history: who changed
// what, when, and why. Entries are only ever appended.
type RolloutEvent struct {
	ToolID string `json:"tool_id"`
	// Rev is the revision of the rollout record the change wrote.
	Rev int64     `json:"rev"`
	At  time.Time `json:"at"`
	// By is the operator (an API key name) or "gateway" for automatic changes.
	By string `json:"by"`
	// Tenant is By's tenant ("" for the gateway, and in entries written
	// before it was kept): an operator of another tenant is not shown the
	// key's name.
	Tenant string `json:"tenant,omitempty"`
	// Action is the transition: shadow, canary, promote, rollback, halt,
	// auto_halt, deprecated.
	Action string `json:"action"`
	// From and To are the default before and after; Candidate and Mode the
	// candidate and its mode after the change.
	From      string      `json:"from,omitempty"`
	To        string      `json:"to,omitempty"`
	Candidate string      `json:"candidate,omitempty"`
	Mode      RolloutMode `json:"mode,omitempty"`
	// Approver and ApprovalSource record who signed a promotion off and where
	// (an approvals/ file).
	Approver       string `json:"approver,omitempty"`
	ApprovalSource string `json:"approval_source,omitempty"`
	Note           string `json:"note,omitempty"`
	// Detail is the change in words (an automatic halt names the rate that tripped it).
	Detail string `json:"detail,omitempty"`
}

// RolloutCount is one counter of a rollout epoch, summed over every replica:
// N calls of Kind on Version (shadow would-be failures also by Pointer, Code
// and Principal). AddRolloutCounts adds to it.
type RolloutCount struct {
	ToolID    string `json:"tool_id"`
	Epoch     int64  `json:"epoch"`
	Version   string `json:"version"`
	Kind      string `json:"kind"`
	Pointer   string `json:"pointer,omitempty"`
	Code      string `json:"code,omitempty"`
	Principal string `json:"principal,omitempty"`
	N         int64  `json:"n"`
}

// VersionUse is how the ledger's actions of one tool use one version.
type VersionUse struct {
	Version string
	// Live counts the actions that are not terminal (prepared, pending,
	// awaiting_approval, running, unknown): they may still run, join or be
	// reconciled under this version.
	Live int64
	// Total counts every stored action of the version; Newest is when the
	// newest of them was created.
	Total  int64
	Newest time.Time
}

// RolloutHistoryKeep is how many audit entries PutRollout keeps per tool;
// older ones are dropped as new ones are appended.
const RolloutHistoryKeep = 1000

// RolloutStore keeps rollout records, their audit history and their
// counters; it is part of every Store.
type RolloutStore interface {
	// GetRollout returns a tool's rollout record, or ErrNotFound.
	GetRollout(ctx context.Context, toolID string) (*Rollout, error)
	// ListRollouts returns every rollout record, by tool id.
	ListRollouts(ctx context.Context) ([]*Rollout, error)
	// PutRollout writes r when the stored revision equals r.Rev (0: no
	// record stored yet) and sets r.Rev to the next revision; it returns
	// ErrStale, writing nothing, when the stored revision differs. In the
	// same transaction it appends ev (with ev.Rev set to the new revision)
	// to the tool's history, drops history beyond RolloutHistoryKeep
	// entries, and drops the counts of every epoch but r.Epoch.
	PutRollout(ctx context.Context, r *Rollout, ev RolloutEvent) error
	// RolloutHistory returns up to limit (default 100) of a tool's audit
	// entries, newest first.
	RolloutHistory(ctx context.Context, toolID string, limit int) ([]RolloutEvent, error)
	// AddRolloutCounts adds each count's N to the stored counter with the
	// same tool, epoch, version, kind, pointer, code and principal (creating
	// it), all in one transaction.
	AddRolloutCounts(ctx context.Context, counts []RolloutCount) error
	// RolloutCounts returns the counters of one epoch of a tool.
	RolloutCounts(ctx context.Context, toolID string, epoch int64) ([]RolloutCount, error)
	// VersionUse counts one tool's actions (of every tenant) per version.
	VersionUse(ctx context.Context, toolID string) ([]VersionUse, error)
}

// MergeRolloutCounts sums the counts that share a counter and returns one
// count per counter (N != 0), sorted by every key: the order stores write
// them in, so two concurrent writers lock counters in the same order.
func MergeRolloutCounts(cs []RolloutCount) []RolloutCount {
	type key struct {
		tool                                  string
		epoch                                 int64
		version, kind, pointer, code, whoever string
	}
	sum := map[key]int64{}
	for _, c := range cs {
		sum[key{c.ToolID, c.Epoch, c.Version, c.Kind, c.Pointer, c.Code, c.Principal}] += c.N
	}
	out := make([]RolloutCount, 0, len(sum))
	for k, n := range sum {
		if n != 0 {
			out = append(out, RolloutCount{ToolID: k.tool, Epoch: k.epoch, Version: k.version, Kind: k.kind, Pointer: k.pointer, Code: k.code, Principal: k.whoever, N: n})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		switch {
		case a.ToolID != b.ToolID:
			return a.ToolID < b.ToolID
		case a.Epoch != b.Epoch:
			return a.Epoch < b.Epoch
		case a.Version != b.Version:
			return a.Version < b.Version
		case a.Kind != b.Kind:
			return a.Kind < b.Kind
		case a.Pointer != b.Pointer:
			return a.Pointer < b.Pointer
		case a.Code != b.Code:
			return a.Code < b.Code
		}
		return a.Principal < b.Principal
	})
	return out
}

// EncodeRollout is how both stores keep a rollout write: the JSON of r at
// its next revision and of ev (its ToolID and Rev set to match), and the
// next revision.
func EncodeRollout(r *Rollout, ev RolloutEvent) (record, event []byte, next int64, err error) {
	next = r.Rev + 1
	stored := *r
	stored.Rev = next
	if record, err = json.Marshal(&stored); err != nil {
		return nil, nil, 0, fmt.Errorf("put rollout %s: %w", r.ToolID, err)
	}
	ev.ToolID, ev.Rev = r.ToolID, next
	if event, err = json.Marshal(&ev); err != nil {
		return nil, nil, 0, fmt.Errorf("put rollout %s: %w", r.ToolID, err)
	}
	return record, event, next, nil
}

// DecodeRollout reads a stored rollout record at revision rev.
func DecodeRollout(rev int64, record []byte) (*Rollout, error) {
	var r Rollout
	if err := json.Unmarshal(record, &r); err != nil {
		return nil, fmt.Errorf("rollout record: %w", err)
	}
	r.Rev = rev
	return &r, nil
}
