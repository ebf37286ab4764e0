package toolcall

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/rollout"
)

// The version rollout on the call path (docs/release-gate.md). Every replica
// keeps the rollout records of the ledger's database in memory and reads
// them on every call; RolloutTick (run after every reconciler pass) reads
// them again, so a change made through another replica serves here within
// one reconcile interval. The call path adds three things to a call: the
// version a new action binds (the default, or the canary's candidate),
// shadow validation against a candidate, and the deprecation of the version
// that served; a new action on a retired version is refused (410). Counters
// are kept in memory and added to the database's on the same tick.

// RolloutObserver hears what the rollouts do, for metrics.
type RolloutObserver interface {
	// ShadowValidated: a new call the default accepted was validated
	// against the candidate; kinds are what the candidate would refuse.
	ShadowValidated(toolID, candidate string, kinds []rollout.ErrorKind)
	// CanaryRouted: a new action was routed to version (role default or
	// candidate) by a canary, and came to o.
	CanaryRouted(toolID, version, role string, o rollout.Outcome)
	// DeprecatedServed: a call was served (or refused) by a deprecated version.
	DeprecatedServed(toolID, version, principal string)
	// AutoHalted: this replica halted a canary on its outcomes.
	AutoHalted(toolID, candidate, reason string)
}

// Deprecation is a deprecated version's window, for the Deprecation (RFC
// 9745) and Sunset (RFC 8594) headers.
type Deprecation struct {
	Version string
	Since   time.Time
	Sunset  time.Time
}

// rollouts is a Service's view of the rollout records and its counters not
// yet added to the database's.
type rollouts struct {
	records atomic.Pointer[map[string]*ledger.Rollout]
	loaded  atomic.Bool

	sig atomic.Pointer[string] // what served at the last tick (servingSignature)

	mu       sync.Mutex
	nextLoad time.Time               // a failed first load is retried no sooner
	pending  []ledger.RolloutCount   // counted since the last flush
	kinds    map[string]*kindSet     // per tool: the shadow error kinds counted in its epoch (MaxShadowKinds)
	seen     map[[2]string]time.Time // deprecations first seen by this process
}

type kindSet struct {
	epoch int64
	kinds map[rollout.ErrorKind]bool
}

// maxPending bounds the counts kept between flushes: past it they are merged.
const maxPending = 4096

func newRollouts() *rollouts {
	r := &rollouts{kinds: map[string]*kindSet{}, seen: map[[2]string]time.Time{}}
	r.records.Store(&map[string]*ledger.Rollout{})
	return r
}

// changes delivers what Config.OnChange and OnChange hear: on a goroutine
// that lives only while a change is being delivered (so a Service leaves
// nothing running between changes), coalesced, never two at once; Stop ends
// delivery and waits for the one under way.
type changes struct {
	mu       sync.Mutex
	fns      []func()
	pending  bool // a change came since the last delivery began
	running  bool // a delivery goroutine is under way
	stopped  bool
	delivery sync.WaitGroup
}

// OnChange adds f to what hears that what serves a new action may have
// changed (Config.OnChange). Add listeners before the service is used.
func (s *Service) OnChange(f func()) {
	s.ch.mu.Lock()
	defer s.ch.mu.Unlock()
	s.ch.fns = append(s.ch.fns, f)
}

// changed tells the listeners that what serves may have changed.
func (s *Service) changed() {
	c := &s.ch
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.fns) == 0 || c.stopped {
		return
	}
	c.pending = true
	if c.running {
		return // the delivery under way takes this change too
	}
	c.running = true
	c.delivery.Add(1)
	go s.deliverChanges()
}

// deliverChanges calls the listeners until no change is pending.
func (s *Service) deliverChanges() {
	c := &s.ch
	defer c.delivery.Done()
	for {
		c.mu.Lock()
		if !c.pending || c.stopped {
			c.running = false
			c.mu.Unlock()
			return
		}
		c.pending = false
		fns := c.fns
		c.mu.Unlock()
		for _, f := range fns {
			f()
		}
	}
}

// Stop ends the delivery of changes and waits, until ctx ends, for the one
// under way: a stopped Service runs no goroutine of its own. Calls still
// work after Stop; their changes are no longer delivered.
func (s *Service) Stop(ctx context.Context) error {
	s.ch.mu.Lock()
	s.ch.stopped = true
	s.ch.mu.Unlock()
	done := make(chan struct{})
	go func() {
		s.ch.delivery.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("toolcall: stop: a change is still being delivered: %w", ctx.Err())
	}
}

// servingSignature sums up what serves every tool's new actions: each
// default, and each canary's candidate and share. A tick that finds it
// changed (another replica's transition, a version that retired) calls
// Config.OnChange.
func (s *Service) servingSignature() string {
	var b strings.Builder
	reg := s.reg()
	fmt.Fprintf(&b, "%p;", reg)
	now := s.cfg.Ledger.Time()
	for _, t := range reg.Tools() {
		r := s.rolloutRecord(t.ID)
		def, _ := rollout.Default(t, r, s.deprecations(), now)
		fmt.Fprintf(&b, "%s=", t.ID)
		if def != nil {
			b.WriteString(def.Version)
		}
		if r != nil && r.Mode == ledger.RolloutCanary {
			fmt.Fprintf(&b, "+%s@%d%v", r.Candidate, r.CanaryBasisPoints, r.CanaryPrincipals)
		}
		b.WriteByte(';')
	}
	return b.String()
}

// noticeChange compares what serves with the last tick's and calls
// Config.OnChange when it differs.
func (s *Service) noticeChange() {
	s.ch.mu.Lock()
	listened := len(s.ch.fns) > 0
	s.ch.mu.Unlock()
	if !listened {
		return
	}
	sig := s.servingSignature()
	if old := s.ro.sig.Swap(&sig); old != nil && *old != sig {
		s.changed()
	}
}

// record returns a tool's rollout record as last read, or nil.
func (s *Service) rolloutRecord(toolID string) *ledger.Rollout {
	if !s.ro.loaded.Load() {
		s.loadRollouts()
	}
	return (*s.ro.records.Load())[toolID]
}

// loadRollouts reads the records for a first call that comes before the
// first tick; a store that does not answer is asked again a second later.
func (s *Service) loadRollouts() {
	s.ro.mu.Lock()
	wait := time.Now().Before(s.ro.nextLoad)
	s.ro.nextLoad = time.Now().Add(time.Second)
	s.ro.mu.Unlock()
	if wait {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := s.refreshRollouts(ctx); err != nil {
		s.log().Warn("read the rollout records; the registry's defaults serve until they are read", "component", "rollouts", "error", err.Error())
	}
}

func (s *Service) refreshRollouts(ctx context.Context) error {
	rs, err := s.cfg.Ledger.Store.ListRollouts(ctx)
	if err != nil {
		return err
	}
	m := make(map[string]*ledger.Rollout, len(rs))
	for _, r := range rs {
		m[r.ToolID] = r
	}
	s.ro.records.Store(&m)
	s.ro.loaded.Store(true)
	return nil
}

// remember puts a record this replica just wrote into its view at once.
func (s *Service) remember(r *ledger.Rollout) {
	for {
		old := s.ro.records.Load()
		if cur := (*old)[r.ToolID]; cur != nil && cur.Rev >= r.Rev {
			return
		}
		m := make(map[string]*ledger.Rollout, len(*old)+1)
		for k, v := range *old {
			m[k] = v
		}
		cp := *r
		m[r.ToolID] = &cp
		if s.ro.records.CompareAndSwap(old, &m) {
			s.changed()
			return
		}
	}
}

// RolloutRecords returns the rollout records as this replica last read them.
func (s *Service) RolloutRecords() []ledger.Rollout {
	m := *s.ro.records.Load()
	out := make([]ledger.Rollout, 0, len(m))
	for _, t := range s.reg().Tools() {
		if r := m[t.ID]; r != nil {
			out = append(out, *r)
		}
	}
	return out
}

// RolloutDefault is the version that serves a tool's new calls naming none,
// as this replica last read its rollout; "" for an unknown tool.
func (s *Service) RolloutDefault(toolID string) string {
	t := s.reg().Tool(toolID)
	if t == nil {
		return ""
	}
	if v := s.defaultVersion(t); v != nil {
		return v.Version
	}
	return ""
}

func (s *Service) deprecations() rollout.Deprecations {
	t := s.tools.Load()
	return rollout.Deprecations{Locked: t.DeprecatedAt, Seen: s.seen, Released: t.Released, Release: t.Release}
}

// Serving is the version that serves p's next new action of tool t naming
// no version, as this replica last read the rollout: the canary's candidate
// for a caller the canary takes, else the default (rollout.Serving). The
// doors that hand an agent a definition (export, MCP tools/list) describe
// this version.
func (s *Service) Serving(p *Principal, t *contract.Tool) *contract.Version {
	return s.choose(t, p).serving
}

// choice is what serves one caller's call of a tool, as this replica last
// read the tool's rollout: chosen once per call (call.choice) from one
// reading of the record, the deprecations and the clock.
type choice struct {
	r   *ledger.Rollout
	dep rollout.Deprecations
	now time.Time
	// def is the default: what serves a new call naming no version.
	def *contract.Version
	// serving is what serves this caller's new call naming no version: the
	// default, or a canary's candidate (role "candidate"); canary says a
	// canary routed it (rollout.Serving).
	serving *contract.Version
	role    string
	canary  bool
}

// choose reads what serves p's calls of t (p may be nil: no canary routes).
func (s *Service) choose(t *contract.Tool, p *Principal) *choice {
	ch := new(choice)
	s.chooseInto(ch, t, p)
	return ch
}

func (s *Service) chooseInto(ch *choice, t *contract.Tool, p *Principal) {
	if s.onChoose != nil {
		s.onChoose()
	}
	*ch = choice{r: s.rolloutRecord(t.ID), dep: s.deprecations(), now: s.cfg.Ledger.Time()}
	ch.def, _ = rollout.Default(t, ch.r, ch.dep, ch.now)
	ch.serving, ch.role = ch.def, "default"
	if p != nil {
		ch.serving, ch.role, ch.canary = rollout.Route(ch.def, t, ch.r, ch.dep, ch.now, p.Tenant, p.Name)
	}
}

// choice is what serves the call's tool for its caller, read on first use.
func (c *call) choice() *choice {
	if !c.chosenOnce {
		c.chosenOnce = true
		c.s.chooseInto(&c.ch, c.tool, c.p)
	}
	return &c.ch
}

// chosen is the version the call runs under: the one it names, else the
// tool's default. A new action that names none may go to a canary's
// candidate instead (admit, route); an existing action keeps the version
// its first call bound, whatever this returns (existing, bind).
func (c *call) chosen() *contract.Version {
	if c.version != nil {
		return c.version
	}
	return c.choice().def
}

// seenDeprecation dates a deprecation no record stamps yet by when this
// process first saw it (until the next tick stores a stamp).
func (s *Service) seenDeprecation(toolID, version string) (time.Time, bool) {
	k := [2]string{toolID, version}
	s.ro.mu.Lock()
	defer s.ro.mu.Unlock()
	at, ok := s.ro.seen[k]
	if !ok {
		at = s.cfg.Ledger.Time()
		s.ro.seen[k] = at
	}
	return at, true
}

// defaultVersion is the version that serves a new call naming none.
func (s *Service) defaultVersion(t *contract.Tool) *contract.Version {
	v, _ := rollout.Default(t, s.rolloutRecord(t.ID), s.deprecations(), s.cfg.Ledger.Time())
	return v
}

// routed is a new action a canary routed.
type routed struct {
	version *contract.Version
	role    string
	epoch   int64
}

// shadowed is a call validated against a candidate too.
type shadowed struct {
	candidate string
	epoch     int64
	kinds     []rollout.ErrorKind
}

// route is the version a new action that names none binds: the canary's
// candidate for the actions it takes, else the default.
func (c *call) route() *contract.Version {
	ch := c.choice()
	if ch.canary {
		c.routed = &routed{version: ch.serving, role: ch.role, epoch: ch.r.Epoch}
	}
	return ch.serving
}

// retired is the 410 for a new action on v when v is past its deprecation
// window, else nil.
func (c *call) retired(v *contract.Version) *Problem {
	ch := c.choice()
	return retiredProblem(c.tool, v, ch.dep.Of(c.tool, ch.r, v.Version), ch.now, ch.def)
}

func (s *Service) retired(t *contract.Tool, v *contract.Version) *Problem {
	ch := s.choose(t, nil)
	return retiredProblem(t, v, ch.dep.Of(t, ch.r, v.Version), ch.now, ch.def)
}

// retiredProblem is the 410 for a new action of t on v when its deprecation
// dep is past its window at now (def: the default to call instead), else nil.
func retiredProblem(t *contract.Tool, v *contract.Version, dep rollout.Deprecation, now time.Time, def *contract.Version) *Problem {
	if !dep.RetiredAt(now) {
		return nil
	}
	p := Errorf(CodeVersionRetired, "%s %s was retired at %s, %s after its deprecation on %s; call the default version %s (or omit version)",
		t.ID, v.Version, dep.Sunset().UTC().Format(time.RFC3339), fmt.Sprintf("%d %s", int(dep.Window/rollout.Day), plural(int(dep.Window/rollout.Day), "day", "days")), dep.Since.UTC().Format(time.RFC3339), def.Version)
	p.DefaultVersion = def.Version
	return p
}

// shadow validates the arguments of a new call that the default v accepted
// against the rollout's candidate as well, enforcing nothing.
func (c *call) shadow(v *contract.Version) {
	ch := c.choice()
	r := ch.r
	cand := rollout.Candidate(c.tool, r)
	if cand == nil || cand == v || c.routed != nil && c.routed.role == "candidate" {
		return
	}
	if c.version != nil && c.version != v || ch.def != v {
		return // a call for another version than the default: promotion does not move it
	}
	c.shadowed = &shadowed{candidate: cand.Version, epoch: r.Epoch, kinds: rollout.Kinds(cand, v, cand.Validate(c.args).Errors)}
}

// afterCall counts what a call did for the rollout and marks the answer of a
// deprecated version. Shadow and canary counts are only for calls that made
// or bound a new action (a retry of an existing one is not a new sample).
func (s *Service) afterCall(c *call, err error) {
	f := c.facts()
	fresh := f.StateBefore == "" || f.StateBefore == ledger.Prepared
	if fresh && c.shadowed != nil {
		kinds := s.capKinds(c.tool.ID, c.shadowed.epoch, c.shadowed.kinds)
		s.count(rollout.ShadowCounts(c.tool.ID, c.shadowed.epoch, c.shadowed.candidate, c.p.Tenant, c.p.Name, kinds))
		if o := s.cfg.RolloutObserver; o != nil {
			o.ShadowValidated(c.tool.ID, c.shadowed.candidate, kinds)
		}
	}
	if fresh && c.routed != nil {
		out := outcomeOf(c, err)
		s.count(out.Counts(c.tool.ID, c.routed.epoch, c.routed.version.Version))
		if o := s.cfg.RolloutObserver; o != nil {
			o.CanaryRouted(c.tool.ID, c.routed.version.Version, c.routed.role, out)
		}
	}
	if c.tool == nil || f.Version == "" {
		return
	}
	ch := c.choice()
	dep := ch.dep.Of(c.tool, ch.r, f.Version)
	if !dep.Dated() {
		return
	}
	c.ans.Deprecation = &Deprecation{Version: f.Version, Since: dep.Since, Sunset: dep.Sunset()}
	if o := s.cfg.RolloutObserver; o != nil {
		o.DeprecatedServed(c.tool.ID, f.Version, c.p.Name)
	}
}

// outcomeOf classifies a routed new action's answer for the canary.
func outcomeOf(c *call, err error) rollout.Outcome {
	f := c.facts()
	o := rollout.Outcome{Executed: f.Downstream > 0, LatencyMS: f.Downstream.Milliseconds()}
	var p *Problem
	switch {
	case errors.As(err, &p):
		switch p.Code {
		case CodeInvalidArguments:
			o.Invalid = true
		case CodeOutcomeUnknown:
			o.Unknown = true
		case CodeDownstreamUnreachable:
			o.Downstream5xx = true
		}
	case err == nil && c.ans.Status >= 500:
		o.Downstream5xx = true
	case err == nil && c.ans.Status >= 400:
		o.Downstream4xx = true
	}
	return o
}

// capKinds replaces the error kinds past rollout.MaxShadowKinds of a tool's
// epoch by rollout.OtherKind.
func (s *Service) capKinds(toolID string, epoch int64, kinds []rollout.ErrorKind) []rollout.ErrorKind {
	if len(kinds) == 0 {
		return nil
	}
	s.ro.mu.Lock()
	defer s.ro.mu.Unlock()
	set := s.ro.kinds[toolID]
	if set == nil || set.epoch != epoch {
		set = &kindSet{epoch: epoch, kinds: map[rollout.ErrorKind]bool{}}
		s.ro.kinds[toolID] = set
	}
	out := make([]rollout.ErrorKind, 0, len(kinds))
	other := false
	for _, k := range kinds {
		if !set.kinds[k] {
			if len(set.kinds) >= rollout.MaxShadowKinds {
				if !other {
					out, other = append(out, rollout.ErrorKind{Pointer: rollout.OtherKind, Code: rollout.OtherKind}), true
				}
				continue
			}
			set.kinds[k] = true
		}
		out = append(out, k)
	}
	return out
}

// count keeps counters until the next flush.
func (s *Service) count(cs []ledger.RolloutCount) {
	s.ro.mu.Lock()
	defer s.ro.mu.Unlock()
	s.ro.pending = append(s.ro.pending, cs...)
	if len(s.ro.pending) > maxPending {
		s.ro.pending = ledger.MergeRolloutCounts(s.ro.pending)
	}
}

// flushCounts adds the counters kept since the last flush to the
// database's; when the store does not answer they are kept for the next.
func (s *Service) flushCounts(ctx context.Context) error {
	s.ro.mu.Lock()
	cs := s.ro.pending
	s.ro.pending = nil
	s.ro.mu.Unlock()
	if len(cs) == 0 {
		return nil
	}
	if err := s.cfg.Ledger.Store.AddRolloutCounts(ctx, cs); err != nil {
		s.ro.mu.Lock()
		s.ro.pending = ledger.MergeRolloutCounts(append(s.ro.pending, cs...))
		s.ro.mu.Unlock()
		return fmt.Errorf("add rollout counts: %w", err)
	}
	return nil
}

// RolloutTick is the rollouts' share of a reconciler pass: add this
// replica's counters to the database's, read every rollout record again,
// stamp the start of deprecation windows the lock does not date, and halt
// a canary whose outcomes trip its margin. Every replica runs it; the
// compare-and-set writes make one of them win each change.
func (s *Service) RolloutTick(ctx context.Context) error {
	errs := []error{s.flushCounts(ctx)}
	if err := s.refreshRollouts(ctx); err != nil {
		return errors.Join(append(errs, fmt.Errorf("read rollouts: %w", err))...)
	}
	defer s.noticeChange()
	now := s.cfg.Ledger.Time()
	for _, t := range s.reg().Tools() {
		r := (*s.ro.records.Load())[t.ID]
		if vs := s.deprecations().Unstamped(t, r); len(vs) > 0 {
			cur := ledger.Rollout{ToolID: t.ID}
			if r != nil {
				cur = *r
			}
			next, ev := rollout.Stamp(t, cur, vs, now)
			switch err := s.putRollout(ctx, &next, ev); {
			case err == nil:
				r = &next
			case !errors.Is(err, ledger.ErrStale): // stale: another replica stamped it first
				errs = append(errs, err)
			}
		}
		if r != nil && r.Mode == ledger.RolloutCanary {
			errs = append(errs, s.checkHalt(ctx, t, r, now))
		}
	}
	return errors.Join(errs...)
}

// checkHalt halts r's canary when its counters trip the margin.
func (s *Service) checkHalt(ctx context.Context, t *contract.Tool, r *ledger.Rollout, now time.Time) error {
	counts, err := s.cfg.Ledger.Store.RolloutCounts(ctx, t.ID, r.Epoch)
	if err != nil {
		return fmt.Errorf("rollout counts of %s: %w", t.ID, err)
	}
	def := s.defaultVersion(t)
	if def == nil {
		return nil
	}
	why := rollout.Trip(r, rollout.Outcomes(counts, def.Version, "default"), rollout.Outcomes(counts, r.Candidate, "candidate"))
	if why == "" {
		return nil
	}
	next, ev, err := rollout.Apply(t, *r, rollout.Change{Action: rollout.ActAutoHalt, By: rollout.ByGateway, Detail: "halted automatically: " + why, Now: now}, s.deprecations())
	if err != nil {
		return nil // no longer a canary
	}
	if err := s.putRollout(ctx, &next, ev); err != nil {
		if errors.Is(err, ledger.ErrStale) {
			return nil // another replica moved it first
		}
		return err
	}
	s.log().Warn("canary halted automatically", "component", "rollouts", "tool_id", t.ID, "version", r.Candidate, "detail", ev.Detail)
	if o := s.cfg.RolloutObserver; o != nil {
		o.AutoHalted(t.ID, r.Candidate, why)
	}
	return nil
}

// putRollout writes a record over the revision it was read at and puts it
// into this replica's view.
func (s *Service) putRollout(ctx context.Context, r *ledger.Rollout, ev ledger.RolloutEvent) error {
	if err := s.cfg.Ledger.Store.PutRollout(ctx, r, ev); err != nil {
		return fmt.Errorf("write the rollout of %s: %w", r.ToolID, err)
	}
	s.remember(r)
	return nil
}
