package ledger

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolgate/toolgate/internal/defaults"
)

// Defaults of the ledger's settings.
const (
	// DefaultLease is how long a running claim lasts without renewal.
	DefaultLease = defaults.Lease
	// DefaultReconcileInterval is the time between the reconciler's passes.
	DefaultReconcileInterval = defaults.ReconcileInterval
	// DefaultListLimit and MaxListLimit bound a page of List (Filter.Limit).
	DefaultListLimit = 50
	MaxListLimit     = 500
	// DefaultCacheSize, DefaultCacheBytes and DefaultCacheEntryBytes bound
	// the replay cache (Service.CacheSize, CacheBytes, CacheEntryBytes).
	DefaultCacheSize       = defaults.ReplayCacheEntries
	DefaultCacheBytes      = defaults.ReplayCacheBytes
	DefaultCacheEntryBytes = defaults.ReplayCacheEntryBytes
)

// Service moves actions through their states on top of a Store. Every move is a
// compare-and-set write, so two callers (goroutines, processes or replicas) that
// race for one action never both win.
type Service struct {
	Store Store
	// Now is the clock. Defaults to time.Now.
	Now func() time.Time
	// Lease is how long a running claim lasts without renewal. Defaults to
	// DefaultLease.
	Lease time.Duration
	// Owner names this process in leases. Defaults to "gateway". With a
	// Replica it must start with Replica + "/" and differ from the Owner of
	// every earlier process of that replica (a start time, a pid).
	Owner string
	// Replica, when set, is this gateway's stable identity across
	// restarts, unique among the running gateways (toolgate.yaml
	// replica_id): the running claims of its earlier processes become
	// unknown once their send window closed (ExpireOwn) instead of after
	// their lease.
	Replica string
	// SendWindow is how long an attempt of a tool's action may take from
	// its claim until no request of it can be sent or reach the downstream
	// (sendwindow.go): the gateway gives its binding's timeout, plus its
	// state probe's when it probes. Defaults to (nil, or 0 for a tool) the
	// Lease.
	SendWindow func(toolID string) time.Duration

	// CacheSize is how many terminal actions the call path keeps in memory
	// for replays (GetForCall). Defaults to DefaultCacheSize; negative turns
	// it off.
	CacheSize int
	// CacheBytes bounds the memory those actions hold (arguments, result
	// bodies, history). Defaults to DefaultCacheBytes.
	CacheBytes int64
	// CacheEntryBytes: an action larger than this is not cached; its
	// replays read the store. Defaults to DefaultCacheEntryBytes.
	CacheEntryBytes int64

	mu      sync.Mutex
	waiters map[actionKey]*waitEntry
	waiting map[actionKey]int // callers in Wait, per action

	ownMu   sync.Mutex
	own     map[actionKey]ownClaim // own.go: claims whose outcome this process knows and could not record
	ownKick chan struct{}

	ownExpired atomic.Bool // ExpireOwn's work is done

	cacheOnce sync.Once
	terminal  *terminalCache
}

// ErrActionMismatch reports a prepare whose tool, version, scope or policy
// differs from the stored action's.
var ErrActionMismatch = errors.New("action exists with other attributes")

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

// Time is the service's clock reading, in UTC.
func (s *Service) Time() time.Time { return s.now() }

func (s *Service) lease() time.Duration {
	if s.Lease > 0 {
		return s.Lease
	}
	return DefaultLease
}

// RenewEvery is how often a running action's lease is renewed while its
// downstream call is in flight: a third of the lease, so that two renewals
// can fail before anyone may declare the action lost.
func (s *Service) RenewEvery() time.Duration { return s.lease() / 3 }

func (s *Service) owner() string {
	if s.Owner != "" {
		return s.Owner
	}
	return "gateway"
}

// Get returns one tenant's action, or ErrNotFound.
func (s *Service) Get(ctx context.Context, tenant, id string) (*Action, error) {
	return s.Store.Get(ctx, tenant, id)
}

// PrepareSpec is what PUT /v1/actions/{id} declares.
type PrepareSpec struct {
	ToolID, Version, Scope, PolicyVersion, CorrelationID string
}

// Prepare creates a prepared action, or returns the existing one when it was
// prepared with the same attributes (created=false). Other attributes give
// ErrActionMismatch with the stored action.
func (s *Service) Prepare(ctx context.Context, tenant, id string, p PrepareSpec) (*Action, bool, error) {
	now := s.now()
	a := &Action{
		Tenant: tenant, ID: id, ToolID: p.ToolID, Version: p.Version, State: Prepared,
		Scope: p.Scope, PolicyVersion: p.PolicyVersion, CorrelationID: p.CorrelationID,
		CreatedAt: now, UpdatedAt: now,
		History: []Transition{{To: Prepared, Reason: "prepared", By: string(ByGateway), At: now}},
	}
	err := s.Store.Insert(ctx, a)
	if err == nil {
		return a, true, nil
	}
	if !errors.Is(err, ErrExists) {
		return nil, false, fmt.Errorf("prepare action %s: %w", id, err)
	}
	old, err := s.Store.Get(ctx, tenant, id)
	if err != nil {
		return nil, false, fmt.Errorf("prepare action %s: %w", id, err)
	}
	if old.ToolID != p.ToolID || (p.Version != "" && old.Version != p.Version) ||
		old.Scope != p.Scope || old.PolicyVersion != p.PolicyVersion {
		return old, false, ErrActionMismatch
	}
	return old, false, nil
}

// StartSpec is a first call for an action id that the ledger has not seen.
type StartSpec struct {
	ToolID, Version, ArgsDigest string
	Arguments                   []byte
	CorrelationID               string
	PolicyVersion               string // the policy the rule that caused the call belongs to (docs/reference/files.md)
	Provider                    *ProviderCall
	// Hold parks the action in awaiting_approval instead of claiming it; Reason
	// says why (the review rule, or the binding's require_approval).
	Hold   bool
	Reason string
}

// Start records a new action and, in the same durable write, claims it (state
// running, attempt 1) or parks it for approval. created=false means the id was
// taken meanwhile: the stored action is returned untouched and the caller must
// treat the call as a duplicate.
func (s *Service) Start(ctx context.Context, tenant, id string, sp StartSpec) (a *Action, created bool, err error) {
	now := s.now()
	a = &Action{
		Tenant: tenant, ID: id, ToolID: sp.ToolID, Version: sp.Version, State: Pending,
		ArgsDigest: sp.ArgsDigest, Arguments: sp.Arguments, CorrelationID: sp.CorrelationID, PolicyVersion: sp.PolicyVersion,
		CreatedAt: now, UpdatedAt: now,
		History: append(make([]Transition, 0, 2), // the claim (or hold) is the second entry
			Transition{To: Pending, Reason: "first call bound the arguments", By: string(ByGateway), At: now}),
	}
	if sp.Provider != nil {
		a.AddProviderCall(*sp.Provider)
	}
	if sp.Hold {
		err = a.Move(AwaitingApproval, ByGateway, "", sp.Reason, now)
	} else {
		err = s.claimInMemory(a, now)
	}
	if err != nil {
		return nil, false, err
	}
	switch err := startInsert(ctx, s.Store, a); { // brokenclaim_off.go: s.Store.Insert
	case err == nil:
		if c := s.cache(); c != nil {
			c.note(a)
		}
		return a, true, nil
	case errors.Is(err, ErrExists):
		old, gerr := s.Store.Get(ctx, tenant, id)
		if gerr != nil {
			return nil, false, fmt.Errorf("start action %s: %w", id, gerr)
		}
		if c := s.cache(); c != nil {
			// A finished action is cached as GetForCall would, so the next
			// call for the key reads nothing; any other is remembered as
			// known, so the next call reads first instead of inserting.
			c.note(old)
		}
		return old, false, nil
	default:
		if a.State == Running {
			s.noteOwn(claimOf(a), NotStarted, nil, claimUnconfirmed)
		}
		return nil, false, fmt.Errorf("start action %s: %w", id, err)
	}
}

func (s *Service) claimInMemory(a *Action, now time.Time) error {
	if err := a.Move(Running, ByGateway, "", claimReason(a.Attempts+1), now); err != nil {
		return err
	}
	a.Attempts++
	a.LeaseOwner = s.owner()
	a.LeaseUntil = now.Add(s.lease())
	a.LastSentAt = now
	a.SendUntil = now.Add(s.sendWindow(a))
	return nil
}

// claimReasons are the claims' history reasons of the first attempts,
// made once.
var claimReasons = func() (r [8]string) {
	for i := range r {
		r[i] = fmt.Sprintf("claimed for attempt %d", i)
	}
	return r
}()

func claimReason(attempt int) string {
	if attempt >= 0 && attempt < len(claimReasons) {
		return claimReasons[attempt]
	}
	return fmt.Sprintf("claimed for attempt %d", attempt)
}

// BindSpec is what the first call of a prepared action adds to it.
type BindSpec struct {
	// Version is the contract version the arguments were bound under; ""
	// keeps the one the action was prepared with.
	Version    string
	ArgsDigest string
	Arguments  []byte
	// Provider, when set, is the call's provider evidence (its At set by
	// the caller), recorded by the same write.
	Provider *ProviderCall
	// Hold parks the action in awaiting_approval instead of claiming it;
	// Reason says why.
	Hold   bool
	Reason string
}

// Bind attaches the first call's arguments (and provider evidence) to a
// prepared action and then claims it (or parks it, with Hold), in one
// write. a is left as it was unless the write succeeds. It returns ErrStale
// when another call moved the action first: re-read and handle the call as
// a duplicate.
func (s *Service) Bind(ctx context.Context, a *Action, sp BindSpec) error {
	now := s.now()
	b := a.clone()
	if sp.Version != "" {
		b.Version = sp.Version
	}
	b.ArgsDigest, b.Arguments = sp.ArgsDigest, sp.Arguments
	b.History = append(make([]Transition, 0, len(a.History)+2), a.History...) // the two moves below
	if sp.Provider != nil {
		b.AddProviderCall(*sp.Provider)
	}
	if err := b.Move(Pending, ByGateway, "", "first call bound the arguments", now); err != nil {
		return err
	}
	var err error
	if sp.Hold {
		err = b.Move(AwaitingApproval, ByGateway, "", sp.Reason, now)
	} else {
		err = s.claimInMemory(b, now)
	}
	if err != nil {
		return err
	}
	return s.claimed(s.write(ctx, a, b), b)
}

// claimed records a claim whose write failed in a way that may still have
// landed (own.go): nothing was sent for it, which the gateway settles once
// the ledger answers again.
func (s *Service) claimed(err error, b *Action) error {
	if err != nil && b.State == Running && !errors.Is(err, ErrStale) && !errors.Is(err, ErrNotFound) {
		s.noteOwn(claimOf(b), NotStarted, nil, claimUnconfirmed)
	}
	return err
}

// Claim moves a pending action to running and counts an attempt. It returns
// ErrStale when someone else moved it first.
func (s *Service) Claim(ctx context.Context, a *Action) error {
	b := a.clone()
	if err := s.claimInMemory(b, s.now()); err != nil {
		return err
	}
	return s.claimed(claimWrite(ctx, s, a, b), b) // brokenclaim_off.go: s.write(ctx, a, b)
}

// Renew extends a running action's lease while its downstream call is in flight.
func (s *Service) Renew(ctx context.Context, a *Action) error {
	if a.State != Running {
		return &TransitionError{From: a.State, To: Running, By: ByGateway}
	}
	b := a.clone()
	b.LeaseUntil = s.now().Add(s.lease())
	return s.write(ctx, a, b)
}

// Outcome is what one downstream attempt proves about its effect (docs/reference/http-api.md).
// It is the one vocabulary of attempt outcomes: the invoker reports it
// (invoke.Result.Outcome) and Finish records it. The zero value is no outcome.
type Outcome int

// The outcomes of one attempt.
const (
	Answered   Outcome = iota + 1 // the downstream answered (a status below 500); the answer is the result
	NotStarted                    // nothing can have been done: never sent, or a not-started status
	Lost                          // the request may have taken effect: timeout, dropped after writing, ambiguous 5xx
)

// String is the outcome's name in logs and spans: answered, not_started or
// unknown (what a lost attempt makes its action).
func (o Outcome) String() string {
	switch o {
	case Answered:
		return "answered"
	case NotStarted:
		return "not_started"
	case Lost:
		return "unknown"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// Finish records the outcome of a running action's attempt: answered 2xx
// becomes succeeded, any other answer rejected, not-started goes back to
// pending, lost becomes unknown. If the action was meanwhile declared unknown
// (its lease ran out) an answer still settles it, as a late reconciliation.
func (s *Service) Finish(ctx context.Context, a *Action, o Outcome, res *Result, reason string) (err error) {
	now := s.now()
	claim := claimOf(a)
	defer func() {
		// The outcome is known and was not recorded: settle it as soon as
		// the ledger answers again (own.go), not after the lease.
		if err != nil && !errors.Is(err, ErrStale) && !isTransition(err) {
			s.noteOwn(claim, o, res, reason)
		}
	}()
	for try := 0; ; try++ {
		b, done, err := finishMove(a, o, res, reason, now)
		if done || err != nil {
			return err
		}
		err = s.write(ctx, a, b)
		if !errors.Is(err, ErrStale) || try > 3 {
			return err
		}
		fresh, gerr := s.Store.Get(ctx, a.Tenant, a.ID)
		if gerr != nil {
			return gerr
		}
		*a = *fresh
	}
}

// finishMove is the action a becomes when its attempt ended with o (see
// Finish); done means there is nothing to record.
func finishMove(a *Action, o Outcome, res *Result, reason string, now time.Time) (_ *Action, done bool, _ error) {
	b := a.clone()
	by := ByGateway
	if b.State == Unknown && o == Answered {
		by, reason = ByReconciler, "late answer after the lease ran out: "+reason
	}
	var to State
	switch o {
	case Answered:
		to = Rejected
		if res != nil && res.StatusCode >= 200 && res.StatusCode < 300 {
			to = Succeeded
		}
		b.Result = res
	case NotStarted:
		to = Pending
	case Lost:
		to = Unknown
		// The attempt is over: nothing more of it is sent (sendwindow.go).
		if b.SendUntil.IsZero() || now.Before(b.SendUntil) {
			b.SendUntil = now
		}
	}
	if b.State == Unknown && to == Unknown {
		return nil, true, nil // already unknown: nothing new to record
	}
	if err := b.Move(to, by, "", reason, now); err != nil {
		return nil, false, err
	}
	if to == Unknown {
		b.NextCheckAt = now
	}
	return b, false, nil
}

func isTransition(err error) bool {
	var te *TransitionError
	return errors.As(err, &te)
}

// AddProviderCall stores one more piece of provider evidence, unless the same
// call is already recorded (Action.AddProviderCall: past MaxProviderCalls
// the call is only counted).
func (s *Service) AddProviderCall(ctx context.Context, a *Action, pc ProviderCall) error {
	for try := 0; ; try++ {
		b := a.clone()
		pc.At = s.now()
		if !b.AddProviderCall(pc) {
			return nil
		}
		err := s.write(ctx, a, b)
		if !errors.Is(err, ErrStale) || try > 3 {
			return err
		}
		fresh, gerr := s.Store.Get(ctx, a.Tenant, a.ID)
		if gerr != nil {
			return gerr
		}
		*a = *fresh
	}
}

// write stores b over a (compare-and-set on a.Rev); on success a becomes b and
// anyone waiting for the action is woken. It goes through the store's
// ChangeUpdater when it has one, with a as the action stored at b.Rev:
// every Service write makes b from a clone of a, and a is what the store
// returned or last wrote (no caller changes an action before handing it to
// a Service write; Bind takes what it adds).
//
// What each write changes (Changes' groups; every write also appends to
// History unless noted, and moves UpdatedAt unless noted):
//
//	Bind                   Binding, State, Lease (claim), Provider (evidence)
//	Claim                  State, Lease
//	Renew                  Lease (LeaseUntil only); no history, no UpdatedAt
//	Finish                 State, Lease, Check, Result (answered)
//	AddProviderCall        Provider only; no history, no UpdatedAt
//	NoteProviderTransition history (a provider entry) only
//	Assign                 history (an assignment entry) only
//	Resolve, Approve, Deny State, Lease (attempts reset), Check, Result
//	ApplyLookup            found: State, Check, Result; not found: State, Check;
//	                       no answer yet: Check, no history (past HoldAfter also
//	                       State, NeedsOperator, with an entry)
//	ExpireLeases, ExpireOwn State, Lease, Check
//	claimCheck             Check (NextCheckAt only); no history, no UpdatedAt
//	SettleOwn              as Finish
//
// Start and Prepare insert; Delete and retention (Cleaner) are the store's
// own statements.
func (s *Service) write(ctx context.Context, a, b *Action) error {
	var err error
	if cu, ok := s.Store.(ChangeUpdater); ok {
		err = cu.UpdateChanged(ctx, a, b)
	} else {
		err = s.Store.Update(ctx, b)
	}
	if err != nil {
		return fmt.Errorf("update action %s: %w", a.ID, err)
	}
	*a = *b
	if c := s.cache(); c != nil {
		c.note(a)
	}
	if a.State != Running {
		s.wake(a.Tenant, a.ID)
	}
	return nil
}

// clone copies a so that appending to the copy's slices (History,
// ProviderCalls) or setting its Result leaves a alone: the copy shares a's
// arrays and Result, capped at their length, so its first append makes its
// own array. Nothing changes a history entry, a provider call or a result
// in place (they are replaced or appended), which makes the sharing safe and
// a clone one allocation.
func (a *Action) clone() *Action {
	b := *a
	b.History = a.History[:len(a.History):len(a.History)]
	b.ProviderCalls = a.ProviderCalls[:len(a.ProviderCalls):len(a.ProviderCalls)]
	return &b
}

// Wait blocks until the action leaves running, ctx ends or timeout passes, and
// returns the action as last read. Completions in this process wake it at once;
// completions by other processes are seen by polling every poll interval.
func (s *Service) Wait(ctx context.Context, tenant, id string, timeout, poll time.Duration) (*Action, error) {
	if poll <= 0 {
		poll = 50 * time.Millisecond
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	k := actionKey{tenant, id}
	s.mu.Lock()
	if s.waiting == nil {
		s.waiting = map[actionKey]int{}
	}
	s.waiting[k]++
	s.mu.Unlock()
	defer s.doneWaiting(k)
	for {
		ch := s.waiter(tenant, id)
		a, err := s.Store.Get(ctx, tenant, id)
		if err != nil || a.State != Running {
			return a, err
		}
		t := time.NewTimer(poll)
		select {
		case <-ch:
		case <-t.C:
		case <-deadline.C:
			t.Stop()
			return a, nil
		case <-ctx.Done():
			t.Stop()
			return a, ctx.Err()
		}
		t.Stop()
	}
}

// Waiting is how many callers wait in Wait for the action now.
func (s *Service) Waiting(tenant, id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waiting[actionKey{tenant, id}]
}

// doneWaiting ends one Wait: the last caller to stop waiting for an action
// drops its wake-up channel, so an action finished by another process (which
// never wakes this one) leaves nothing behind.
func (s *Service) doneWaiting(k actionKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.waiting[k]--; s.waiting[k] > 0 {
		return
	}
	delete(s.waiting, k)
	if e, ok := s.waiters[k]; ok {
		delete(s.waiters, k)
		close(e.ch)
	}
}

// actionKey names one action in the Service's maps (waiters, own claims,
// the replay cache) without building a string.
type actionKey struct{ tenant, id string }

func (s *Service) waiter(tenant, id string) chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.waiters == nil {
		s.waiters = map[actionKey]*waitEntry{}
	}
	k := actionKey{tenant, id}
	e, ok := s.waiters[k]
	if !ok {
		e = &waitEntry{ch: make(chan struct{})}
		s.waiters[k] = e
	}
	return e.ch
}

// waitEntry is the wake-up channel of the callers waiting for one action.
type waitEntry struct{ ch chan struct{} }

func (s *Service) wake(tenant, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := actionKey{tenant, id}
	if e, ok := s.waiters[k]; ok {
		close(e.ch)
		delete(s.waiters, k)
	}
}
