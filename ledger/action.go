// Package ledger is the durable action ledger: the Action record, its state
// machine, the small Store interface the databases implement, and the Service
// that claims, completes and reconciles actions. It imports no database driver
// and no net/http.
package ledger

import (
	"context"
	"errors"
	"time"
	"unicode/utf8"
)

// Action is one intended side effect, named by an application-owned id and
// scoped by tenant. Every call that carries the same id belongs to it.
type Action struct {
	Tenant  string
	ID      string
	ToolID  string
	Version string // the contract version the arguments were bound under
	State   State

	// NeedsOperator is set on an unknown action whose lookup stayed unanswered
	// past the binding's hold_after.
	NeedsOperator bool

	ArgsDigest string // "sha256:<hex>" of the canonical arguments; empty while prepared
	Arguments  []byte // the canonical (RFC 8785) arguments

	Attempts   int       // downstream attempts started (claims)
	LeaseOwner string    // who holds the running claim
	LeaseUntil time.Time // the running claim lapses after this unless renewed
	LastSentAt time.Time // when the last attempt was claimed, its request about to be sent
	// SendUntil is when the last attempt's send window closes: no request
	// of it may be sent or reach the downstream later (sendwindow.go). Zero
	// on actions recorded before it existed (SendWindowEnd).
	SendUntil time.Time

	UnknownSince time.Time // when the action last became unknown
	NextCheckAt  time.Time // when the reconciler should next run the lookup
	Checks       int       // lookups run since the action became unknown

	Result        *Result
	ProviderCalls []ProviderCall // the first MaxProviderCalls, in arrival order
	// ProviderCallsOmitted counts the provider calls that came after the
	// first MaxProviderCalls and were not recorded.
	ProviderCallsOmitted int

	CorrelationID string
	Scope         string
	PolicyVersion string

	CreatedAt time.Time
	UpdatedAt time.Time
	History   []Transition

	// Rev is the stored revision. Store.Update writes only when it still
	// matches, which makes every transition a compare-and-set.
	Rev int64
}

// Result is a stored downstream answer, replayed byte for byte.
type Result struct {
	StatusCode  int    `json:"status_code"`
	ContentType string `json:"content_type,omitempty"`
	Body        []byte `json:"body"`
}

// ProviderCall is evidence of the model-provider tool call that asked for an action.
type ProviderCall struct {
	Name   string    `json:"name,omitempty"`
	Route  string    `json:"route,omitempty"`
	CallID string    `json:"call_id,omitempty"`
	At     time.Time `json:"at"`
}

// Bounds of an action's provider evidence: a retried action must not grow
// without end (every replay may bring a new call id), so only the first
// MaxProviderCalls calls are kept and the later ones counted
// (ProviderCallsOmitted), and each field of a call keeps its first
// MaxEvidenceLength bytes.
const (
	MaxProviderCalls  = 20
	MaxEvidenceLength = 255
)

// ClampEvidence returns pc with each field cut to MaxEvidenceLength bytes,
// at a UTF-8 character boundary.
func ClampEvidence(pc ProviderCall) ProviderCall {
	pc.Name, pc.Route, pc.CallID = clampText(pc.Name), clampText(pc.Route), clampText(pc.CallID)
	return pc
}

func clampText(s string) string {
	if len(s) <= MaxEvidenceLength {
		return s
	}
	n := MaxEvidenceLength
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// AddProviderCall records pc (clamped) as evidence of a, unless the same
// call is recorded already; past MaxProviderCalls it is only counted. It
// reports whether a changed.
func (a *Action) AddProviderCall(pc ProviderCall) bool {
	if pc.CallID == "" && pc.Name == "" {
		return false
	}
	pc = ClampEvidence(pc)
	for _, old := range a.ProviderCalls {
		if old.CallID == pc.CallID && old.Name == pc.Name && old.Route == pc.Route {
			return false
		}
	}
	if len(a.ProviderCalls) >= MaxProviderCalls {
		a.ProviderCallsOmitted++
		return true
	}
	a.ProviderCalls = append(a.ProviderCalls, pc)
	return true
}

// Errors the stores report; nothing above a store sees a driver error.
var (
	ErrNotFound = errors.New("action not found")
	ErrExists   = errors.New("action already exists")
	ErrStale    = errors.New("action changed since it was read")
	// ErrBadCursor reports a List cursor that the store did not issue: a
	// client's mistake, not a store failure.
	ErrBadCursor = errors.New("bad list cursor")
	// ErrUnavailable reports a store that cannot serve for now (its
	// database restarts, fails over, is locked, out of connections or
	// disk, or the store is closed): answer 503 with Retry-After and try
	// again later. Stores wrap their own error with it (errors.Is finds
	// both). A write that failed so may or may not have been stored;
	// re-read before acting on it.
	ErrUnavailable = errors.New("ledger unavailable")
)

// Filter selects actions for List. The zero value lists a tenant's newest actions.
type Filter struct {
	Tenant string // required: lists never cross tenants
	State  State  // "" for any
	ToolID string // "" for any
	// PolicyVersion and CorrelationID select the actions a rule's firing
	// caused (docs/reference/files.md): exact matches, "" for any.
	PolicyVersion string
	CorrelationID string
	Limit         int    // defaults to DefaultListLimit, at most MaxListLimit
	Cursor        string // opaque, from a previous Page.Next
}

// Page is one page of List.
type Page struct {
	Actions []*Action
	Next    string // "" on the last page
}

// ChangeUpdater is an optional Store method: Update that may leave out what
// did not change. UpdateChanged(ctx, prev, a) has exactly Update(ctx, a)'s
// contract and result (a compare-and-set on a.Rev, then a.Rev incremented),
// given that prev is the action as this store last wrote or read it at
// revision a.Rev: the store may then skip writing every field on which prev
// and a agree, since the stored row already holds it. When prev.Rev differs
// from a.Rev it must write every field, as Update does. Changes(prev, a)
// names the field groups to write (ChangeAll in that case) and
// AppendedHistory the history entries to append. Service uses it for every
// write when the store has it (Service.write lists what each changes); a
// write that skips a field is as durable as one that rewrites it.
type ChangeUpdater interface {
	UpdateChanged(ctx context.Context, prev, a *Action) error
}

// Store keeps actions durably. Implementations must pass storetest.Exercise.
//
// Every write is durable when it returns. Update is a compare-and-set on Rev, so
// two writers that read the same revision never both succeed: that is what
// makes a claim atomic across goroutines, processes and replicas. Opening a
// store migrates its database; opening another on a migrated database (a
// restart, a second replica) changes nothing.
//
// Errors (storetest checks each rule on every store): besides the sentinels
// (ErrNotFound, ErrExists, ErrStale, ErrBadCursor), a failure that passes —
// the database cannot be reached, restarts, fails over, is locked by another
// process past the busy timeout, is out of connections, disk or memory, or
// the store is closed — matches ErrUnavailable, with the store's own error
// kept in the chain; a call whose context ended returns that context's
// error (context.Canceled, context.DeadlineExceeded) and not ErrUnavailable;
// anything else (a constraint the schema enforces, a malformed row, a
// defect) is a plain error that matches none of them.
type Store interface {
	// Insert stores a new action with Rev 1 (and sets a.Rev). It returns
	// ErrExists when the tenant already has an action with that id.
	Insert(ctx context.Context, a *Action) error
	// Get returns the action, or ErrNotFound.
	Get(ctx context.Context, tenant, id string) (*Action, error)
	// Update writes a when the stored Rev equals a.Rev and then increments a.Rev.
	// Tenant, ID, ToolID and CreatedAt are fixed at Insert and never rewritten;
	// it returns ErrStale when the stored revision differs and ErrNotFound when
	// the action is gone.
	Update(ctx context.Context, a *Action) error
	// List returns one tenant's actions matching f, newest first; a cursor it
	// did not issue is ErrBadCursor.
	List(ctx context.Context, f Filter) (Page, error)
	// Expired returns up to limit running actions of any tenant whose lease
	// ends at or before now, oldest lease first.
	Expired(ctx context.Context, now time.Time, limit int) ([]*Action, error)
	// DueChecks returns up to limit unknown actions of any tenant whose
	// NextCheckAt is at or before now, most overdue first.
	DueChecks(ctx context.Context, now time.Time, limit int) ([]*Action, error)
	// CountByState counts actions of all tenants per state.
	CountByState(ctx context.Context) (map[State]int64, error)
	// Purge turns up to limit terminal actions (of any tenant) created before
	// cutoff into tombstones: their arguments, result body and provider calls
	// are dropped, while the key, digest, state, result status and history
	// stay. Actions already purged are not counted again. It returns how many
	// it purged; each purge increments the action's Rev.
	Purge(ctx context.Context, cutoff time.Time, limit int) (int, error)
	// Forget deletes up to limit terminal actions (of any tenant) created
	// before cutoff and returns how many.
	Forget(ctx context.Context, cutoff time.Time, limit int) (int, error)
	// Delete removes one action if its stored Rev equals rev; ErrStale when it
	// changed, ErrNotFound when it is gone.
	Delete(ctx context.Context, tenant, id string, rev int64) error
	// Close releases the store's resources; a second Close returns nil.
	Close() error
	// RolloutStore keeps the tools' rollout records (ledger/rollout.go).
	RolloutStore
}
