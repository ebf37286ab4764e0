package storetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/toolgate/toolgate/ledger"
)

// Narrow writes: a store that writes only what changed (ledger.ChangeUpdater)
// must store exactly what a full Update would. These tests apply random
// changes to a few actions and compare every read (Get, List, Expired,
// DueChecks) with a model of what was written, so a store that drops a
// changed field, appends history where it had to rewrite it, or trusts a
// prev of another revision fails. A store without UpdateChanged is checked
// through Update, the same way.

// narrowSteps is how many writes one run makes (fewer with -short).
func narrowSteps(long int) int {
	if testing.Short() {
		return long / 4
	}
	return long
}

// testNarrowWritesRandom writes random changes with UpdateChanged (or
// Update) and compares every read with the model.
func testNarrowWritesRandom(t *testing.T, s ledger.Store) {
	for seed := uint64(1); seed <= 3; seed++ {
		if err := NarrowRandom(t.Context(), s, seed, narrowSteps(120)); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}

// testNarrowWritesService drives random Service operations (each a write
// through UpdateChanged when the store has it) and compares every read with
// the action as the Service holds it after the write.
func testNarrowWritesService(t *testing.T, s ledger.Store) {
	for seed := uint64(1); seed <= 3; seed++ {
		if err := NarrowService(t.Context(), s, seed, narrowSteps(120)); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}

// narrowModel is what the store should hold: every action written, as last
// written, with its earlier versions.
type narrowModel struct {
	s       ledger.Store
	tenant  string
	actions map[string]*ledger.Action
	older   map[string][]*ledger.Action // earlier versions, oldest first
	order   []string
}

func (m *narrowModel) check(ctx context.Context, what string, id string) error {
	got, err := m.s.Get(ctx, m.tenant, id)
	if err != nil {
		return fmt.Errorf("%s: Get(%s): %w", what, id, err)
	}
	if d := diff(m.actions[id], got); len(d) > 0 {
		return fmt.Errorf("%s: Get(%s) differs from what was written:\n%s", what, id, joinLines(d))
	}
	return nil
}

// checkAll compares List, Expired and DueChecks with the model.
func (m *narrowModel) checkAll(ctx context.Context, what string) error {
	page, err := m.s.List(ctx, ledger.Filter{Tenant: m.tenant, Limit: ledger.MaxListLimit})
	if err != nil {
		return fmt.Errorf("%s: List: %w", what, err)
	}
	if len(page.Actions) != len(m.actions) {
		return fmt.Errorf("%s: List returned %d actions, want %d", what, len(page.Actions), len(m.actions))
	}
	reads := page.Actions
	far := at(1000 * time.Hour)
	exp, err := m.s.Expired(ctx, far, 1000)
	if err != nil {
		return fmt.Errorf("%s: Expired: %w", what, err)
	}
	due, err := m.s.DueChecks(ctx, far, 1000)
	if err != nil {
		return fmt.Errorf("%s: DueChecks: %w", what, err)
	}
	for _, a := range append(exp, due...) {
		if a.Tenant == m.tenant {
			reads = append(reads, a)
		}
	}
	for _, got := range reads {
		want, ok := m.actions[got.ID]
		if !ok {
			return fmt.Errorf("%s: a read returned %s, which was never written", what, got.ID)
		}
		if d := diff(want, got); len(d) > 0 {
			return fmt.Errorf("%s: a list read of %s differs from what was written:\n%s", what, got.ID, joinLines(d))
		}
	}
	return nil
}

func (m *narrowModel) wrote(a *ledger.Action) {
	if old, ok := m.actions[a.ID]; ok {
		m.older[a.ID] = append(m.older[a.ID], old)
	} else {
		m.order = append(m.order, a.ID)
	}
	m.actions[a.ID] = copyAction(a)
}

// update writes b over prev: with UpdateChanged when the store has it.
func update(ctx context.Context, s ledger.Store, prev, b *ledger.Action) error {
	if cu, ok := s.(ledger.ChangeUpdater); ok {
		return cu.UpdateChanged(ctx, prev, b)
	}
	return s.Update(ctx, b)
}

// NarrowRandom inserts a few actions of a tenant of its own into s and makes
// steps random writes to them (ledger.ChangeUpdater when s has it, else
// Update): random changes to every field group, history appended or
// rewritten, a prev of an older revision, stale writes. After every write it
// compares the stored action with what was written, and now and then every
// list read; it returns the first difference. Exercise runs it; it is
// exported so that a test can prove it fails on a store that drops a change.
func NarrowRandom(ctx context.Context, s ledger.Store, seed uint64, steps int) error {
	r := rand.New(rand.NewPCG(seed, 0x6e6172726f77))
	m := &narrowModel{s: s, tenant: fmt.Sprintf("narrow-random-%d", seed),
		actions: map[string]*ledger.Action{}, older: map[string][]*ledger.Action{}}
	for i := range 4 {
		a := randomAction(r, m.tenant, fmt.Sprintf("a%d", i), time.Duration(i)*time.Second)
		if err := s.Insert(ctx, a); err != nil {
			return fmt.Errorf("Insert: %w", err)
		}
		m.wrote(a)
	}
	for step := range steps {
		id := m.order[r.IntN(len(m.order))]
		cur := m.actions[id]
		what := fmt.Sprintf("step %d (%s at rev %d)", step, id, cur.Rev)
		b := copyAction(cur)
		var prev *ledger.Action
		switch k := r.IntN(20); {
		case k < 13: // the usual: prev is the stored action
			prev = copyAction(cur)
			if r.IntN(3) == 0 {
				fresh, err := s.Get(ctx, m.tenant, id)
				if err != nil {
					return fmt.Errorf("%s: Get: %w", what, err)
				}
				prev = fresh
			}
			mutate(r, b, cur.Rev)
		case k < 17 && len(m.older[id]) > 0: // prev of an older revision: everything is written
			old := m.older[id][r.IntN(len(m.older[id]))]
			prev = copyAction(old)
			mix(r, b, old)
			mutate(r, b, cur.Rev)
			what += fmt.Sprintf(", prev of rev %d", old.Rev)
		default: // a stale write changes nothing
			if cur.Rev < 2 {
				continue
			}
			b.Rev = cur.Rev - 1 - r.Int64N(cur.Rev-1)
			prev = copyAction(b)
			mutate(r, b, b.Rev)
			if err := update(ctx, s, prev, b); !errors.Is(err, ledger.ErrStale) {
				return fmt.Errorf("%s: a write at rev %d returned %v, want ErrStale", what, b.Rev, err)
			}
			if err := m.check(ctx, what+" after a stale write", id); err != nil {
				return err
			}
			continue
		}
		if err := update(ctx, s, prev, b); err != nil {
			return fmt.Errorf("%s: write: %w", what, err)
		}
		if b.Rev != cur.Rev+1 {
			return fmt.Errorf("%s: after the write Rev = %d, want %d", what, b.Rev, cur.Rev+1)
		}
		m.wrote(b)
		if err := m.check(ctx, what, id); err != nil {
			return err
		}
		if step%10 == 9 {
			if err := m.checkAll(ctx, what); err != nil {
				return err
			}
		}
	}
	return m.checkAll(ctx, "at the end")
}

// copyAction copies a deeply: nothing of the copy shares memory with a.
func copyAction(a *ledger.Action) *ledger.Action {
	b := *a
	b.Arguments = cloneBytes(a.Arguments)
	if a.Result != nil {
		r := *a.Result
		r.Body = cloneBytes(a.Result.Body)
		b.Result = &r
	}
	b.ProviderCalls = append([]ledger.ProviderCall(nil), a.ProviderCalls...)
	b.History = make([]ledger.Transition, len(a.History))
	for i, h := range a.History {
		if h.Provider != nil {
			p := *h.Provider
			h.Provider = &p
		}
		if h.Assignment != nil {
			c := *h.Assignment
			h.Assignment = &c
		}
		b.History[i] = h
	}
	if a.History == nil {
		b.History = nil
	}
	return &b
}

func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

// The random values: valid UTF-8 without NUL (every store keeps such text),
// times with nanoseconds in several zones, or zero.
var (
	narrowTexts = []string{"", "a", "gateway-7", "café \"quoted\" <b>", "日本語", "line\nbreak", "tab\tand\\backslash", "🦆"}
	narrowZones = []*time.Location{time.UTC, time.FixedZone("UTC+05:30", 5*3600+30*60), time.FixedZone("UTC-08", -8*3600)}
)

func randText(r *rand.Rand) string { return narrowTexts[r.IntN(len(narrowTexts))] }

func randTime(r *rand.Rand) time.Time {
	if r.IntN(4) == 0 {
		return time.Time{}
	}
	return randInstant(r)
}

func randInstant(r *rand.Rand) time.Time {
	return at(time.Duration(r.Int64N(int64(48*time.Hour))) - 24*time.Hour).In(narrowZones[r.IntN(len(narrowZones))])
}

func randState(r *rand.Rand) ledger.State { return ledger.States[r.IntN(len(ledger.States))] }

func randBody(r *rand.Rand) []byte {
	switch r.IntN(4) {
	case 0:
		return nil
	case 1:
		return []byte{}
	}
	b := make([]byte, r.IntN(300))
	for i := range b {
		b[i] = byte(r.UintN(256))
	}
	return b
}

func randTransition(r *rand.Rand) ledger.Transition {
	h := ledger.Transition{From: randState(r), To: randState(r), Reason: randText(r), By: randText(r), At: randInstant(r)}
	switch r.IntN(4) {
	case 0:
		h.Provider = &ledger.ProviderTransition{From: ledger.ProviderRoute{Name: randText(r)},
			To: ledger.ProviderRoute{Name: randText(r), Route: randText(r)}, State: h.From, Reason: randText(r)}
		h.To = h.From
	case 1:
		h.Assignment = &ledger.AssignmentChange{Assignee: randText(r), Previous: randText(r), TakeOver: r.IntN(2) == 0, Note: randText(r)}
		h.To = h.From
	}
	return h
}

func randomAction(r *rand.Rand, tenant, id string, created time.Duration) *ledger.Action {
	a := newAction(tenant, id, randState(r), created)
	for range 3 {
		mutate(r, a, 0)
	}
	return a
}

// mutate changes random field groups of a (each with probability 1/3, and
// at least one), keeping its key, tool, creation time and Rev (set to rev).
func mutate(r *rand.Rand, a *ledger.Action, rev int64) {
	for changed := false; !changed; {
		for g := range 9 {
			if r.IntN(3) != 0 {
				continue
			}
			changed = true
			switch g {
			case 0:
				a.State, a.NeedsOperator = randState(r), r.IntN(2) == 0
			case 1:
				a.Attempts, a.LeaseOwner, a.LeaseUntil, a.LastSentAt = r.IntN(5), randText(r), randTime(r), randTime(r)
				if r.IntN(2) == 0 {
					a.SendUntil = randTime(r)
				}
			case 2:
				a.UnknownSince, a.NextCheckAt, a.Checks = randTime(r), randTime(r), r.IntN(9)
			case 3:
				a.Version, a.ArgsDigest = randText(r), randText(r)
				switch r.IntN(3) {
				case 0:
					a.Arguments = nil
				case 1:
					a.Arguments = []byte{}
				default:
					a.Arguments = fmt.Appendf(nil, `{"amount":%d,"note":%q}`, r.IntN(1e6), randText(r))
				}
			case 4:
				if r.IntN(4) == 0 {
					a.Result = nil
				} else {
					a.Result = &ledger.Result{StatusCode: 100 + r.IntN(500), ContentType: randText(r), Body: randBody(r)}
				}
			case 5:
				switch r.IntN(4) {
				case 0:
					a.ProviderCalls = nil
				case 1:
					a.ProviderCallsOmitted = r.IntN(4)
				default:
					a.ProviderCalls = append(a.ProviderCalls, ledger.ProviderCall{Name: randText(r), Route: randText(r), CallID: randText(r), At: randInstant(r)})
				}
			case 6:
				a.CorrelationID, a.Scope, a.PolicyVersion = randText(r), randText(r), randText(r)
			case 7:
				a.UpdatedAt = randTime(r)
			case 8:
				switch k := r.IntN(10); {
				case k < 6: // appended, the usual
					for range 1 + r.IntN(3) {
						a.History = append(a.History, randTransition(r))
					}
				case k < 7 && len(a.History) > 0: // an entry changed
					a.History[r.IntN(len(a.History))] = randTransition(r)
				case k < 8 && len(a.History) > 0: // an entry changed and more appended
					a.History[r.IntN(len(a.History))].Reason += " (amended)"
					a.History = append(a.History, randTransition(r))
				case k < 9: // cut
					a.History = a.History[:r.IntN(len(a.History)+1)]
				default:
					a.History = nil
				}
			}
		}
	}
	a.Rev = rev
}

// mix sets random field groups of a to old's values, so that a prev of an
// older revision agrees with a where the stored action does not.
func mix(r *rand.Rand, a, old *ledger.Action) {
	o := copyAction(old)
	if r.IntN(2) == 0 {
		a.State, a.NeedsOperator = o.State, o.NeedsOperator
	}
	if r.IntN(2) == 0 {
		a.Attempts, a.LeaseOwner, a.LeaseUntil, a.LastSentAt, a.SendUntil = o.Attempts, o.LeaseOwner, o.LeaseUntil, o.LastSentAt, o.SendUntil
	}
	if r.IntN(2) == 0 {
		a.UnknownSince, a.NextCheckAt, a.Checks = o.UnknownSince, o.NextCheckAt, o.Checks
	}
	if r.IntN(2) == 0 {
		a.Version, a.ArgsDigest, a.Arguments = o.Version, o.ArgsDigest, o.Arguments
	}
	if r.IntN(2) == 0 {
		a.Result = o.Result
	}
	if r.IntN(2) == 0 {
		a.ProviderCalls, a.ProviderCallsOmitted = o.ProviderCalls, o.ProviderCallsOmitted
	}
	if r.IntN(2) == 0 {
		a.CorrelationID, a.Scope, a.PolicyVersion = o.CorrelationID, o.Scope, o.PolicyVersion
	}
	if r.IntN(2) == 0 {
		a.UpdatedAt = o.UpdatedAt
	}
	if r.IntN(2) == 0 {
		a.History = o.History
	}
}

// NarrowService drives steps random Service operations (Start, Prepare, Bind,
// Claim, Renew, Finish, AddProviderCall, NoteProviderTransition, Assign,
// Resolve, Approve, Deny, ApplyLookup) on a tenant of its own in s and,
// after each write, compares the stored action with the action as the
// Service holds it; now and then every list read too. It returns the first
// difference. Exercise runs it; it is exported so that a test can prove it
// fails on a store that drops a change.
func NarrowService(ctx context.Context, s ledger.Store, seed uint64, steps int) error {
	r := rand.New(rand.NewPCG(seed, 0x73657276696365))
	clock := at(0)
	svc := &ledger.Service{Store: s, CacheSize: -1, Owner: "narrow-test",
		Now: func() time.Time { clock = clock.Add(time.Duration(1 + r.Int64N(int64(3*time.Second)))); return clock }}
	m := &narrowModel{s: s, tenant: fmt.Sprintf("narrow-service-%d", seed),
		actions: map[string]*ledger.Action{}, older: map[string][]*ledger.Action{}}
	pc := func() ledger.ProviderCall {
		return ledger.ProviderCall{Name: []string{"openai", "anthropic", ""}[r.IntN(3)], Route: randText(r), CallID: fmt.Sprintf("call_%d", r.IntN(30)), At: clock}
	}
	policy := ledger.ReconcilePolicy{SettleAfter: time.Duration(r.Int64N(int64(10 * time.Second))), HoldAfter: 5 * time.Second}
	for step := range steps {
		var a *ledger.Action
		var op string
		var err error
		if len(m.order) < 3 || r.IntN(8) == 0 {
			id := fmt.Sprintf("s%d", len(m.order))
			if r.IntN(3) == 0 {
				op = "Prepare"
				a, _, err = svc.Prepare(ctx, m.tenant, id, ledger.PrepareSpec{ToolID: "refunds.create", Version: "1.0.0", Scope: randText(r), CorrelationID: randText(r)})
			} else {
				op = "Start"
				p := pc()
				a, _, err = svc.Start(ctx, m.tenant, id, ledger.StartSpec{ToolID: "refunds.create", Version: "1.0.0", ArgsDigest: "sha256:01",
					Arguments: []byte(`{"amount":1}`), CorrelationID: randText(r), PolicyVersion: randText(r), Provider: &p,
					Hold: r.IntN(4) == 0, Reason: "review rule"})
			}
			if err != nil {
				return fmt.Errorf("step %d: %s: %w", step, op, err)
			}
			m.wrote(a)
			if err := m.check(ctx, fmt.Sprintf("step %d: %s", step, op), id); err != nil {
				return err
			}
			continue
		}
		id := m.order[r.IntN(len(m.order))]
		a = copyAction(m.actions[id])
		rev := a.Rev
		state := a.State
		if r.IntN(4) == 0 {
			state = "" // provider evidence, which comes in any state
		}
		switch state {
		case ledger.Prepared:
			op = "Bind"
			var p *ledger.ProviderCall
			if r.IntN(2) == 0 {
				c := pc()
				p = &c
			}
			err = svc.Bind(ctx, a, ledger.BindSpec{Version: []string{"", "1.1.0"}[r.IntN(2)], ArgsDigest: "sha256:02",
				Arguments: []byte(`{"amount":2}`), Provider: p, Hold: r.IntN(3) == 0, Reason: "require_approval"})
		case ledger.Pending:
			switch r.IntN(3) {
			case 0:
				op = "Resolve"
				err = svc.Resolve(ctx, a, ledger.Resolution{Outcome: []string{"succeeded", "rejected", "not_started"}[r.IntN(3)], Principal: "oncall", Note: randText(r)}, 3)
			default:
				op = "Claim"
				err = svc.Claim(ctx, a)
			}
		case ledger.Running:
			switch r.IntN(4) {
			case 0:
				op = "Renew"
				err = svc.Renew(ctx, a)
			default:
				op = "Finish"
				o := []ledger.Outcome{ledger.Answered, ledger.NotStarted, ledger.Lost}[r.IntN(3)]
				var res *ledger.Result
				if o == ledger.Answered {
					res = &ledger.Result{StatusCode: []int{201, 409}[r.IntN(2)], ContentType: "application/json", Body: randBody(r)}
				}
				err = svc.Finish(ctx, a, o, res, randText(r))
			}
		case ledger.Unknown:
			switch r.IntN(4) {
			case 0:
				op = "Assign"
				_, err = svc.Assign(ctx, a, ledger.AssignRequest{Assignee: []string{"", "ann", "bob"}[r.IntN(3)], Principal: "ann", TakeOver: true})
			case 1:
				op = "Resolve"
				err = svc.Resolve(ctx, a, ledger.Resolution{Outcome: []string{"succeeded", "rejected", "not_started"}[r.IntN(3)], Principal: "oncall"}, 3)
			default:
				op = "ApplyLookup"
				ans := []ledger.LookupAnswer{{Found: true, Result: &ledger.Result{StatusCode: 200, Body: []byte(`{}`)}},
					{NotFound: true}, {Err: errors.New("lookup unreachable")}}[r.IntN(3)]
				_, err = svc.ApplyLookup(ctx, a, ans, policy, ledger.ByReconciler, "")
			}
		case ledger.AwaitingApproval:
			switch r.IntN(3) {
			case 0:
				op = "Assign"
				_, err = svc.Assign(ctx, a, ledger.AssignRequest{Assignee: []string{"", "ann"}[r.IntN(2)], Principal: "ann", Note: randText(r)})
			case 1:
				op = "Approve"
				err = svc.Approve(ctx, a, "oncall", randText(r))
			default:
				op = "Deny"
				err = svc.Deny(ctx, a, "oncall", randText(r), &ledger.Result{StatusCode: 403, ContentType: "application/problem+json", Body: []byte(`{"title":"denied"}`)})
			}
		}
		if op == "" {
			p := pc()
			if r.IntN(2) == 0 {
				op = "NoteProviderTransition"
				_, err = svc.NoteProviderTransition(ctx, a, p, randText(r))
			} else {
				op = "AddProviderCall"
				err = svc.AddProviderCall(ctx, a, p)
			}
		}
		what := fmt.Sprintf("step %d: %s of %s at rev %d", step, op, id, rev)
		var te *ledger.TransitionError
		switch {
		case errors.As(err, &te), errors.Is(err, ledger.ErrNotAssignable), errors.Is(err, ledger.ErrAssignmentLimit),
			errors.Is(err, ledger.ErrNotResolvable), errors.As(err, new(*ledger.AssignedError)):
			continue // a move the state machine forbids: nothing written
		case err != nil:
			return fmt.Errorf("%s: %w", what, err)
		}
		if a.Rev == rev {
			continue // nothing to record (a known provider call, the same assignee)
		}
		m.wrote(a)
		if err := m.check(ctx, what, id); err != nil {
			return err
		}
		if step%10 == 9 {
			if err := m.checkAll(ctx, what); err != nil {
				return err
			}
		}
	}
	if len(m.older) == 0 {
		return errors.New("no action was written twice: the run checked nothing")
	}
	return m.checkAll(ctx, "at the end")
}

// testNarrowWritesReference runs one random sequence of Service operations,
// reconciler passes included, on the store under test and on a second
// store of the same kind written only with full Updates, and compares the
// two stores' reads after every step.
func testNarrowWritesReference(t *testing.T, newDB NewDatabase) {
	s, ref := newDB(t)(t), newDB(t)(t)
	for seed := uint64(1); seed <= 2; seed++ {
		if err := NarrowReference(t.Context(), s, FullUpdates(ref), seed, narrowSteps(120)); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}

// FullUpdates returns st without its optional methods: every write of a
// Service on it is a full Update.
func FullUpdates(st ledger.Store) ledger.Store { return fullUpdates{st} }

type fullUpdates struct{ ledger.Store }

// NarrowReference drives steps random Service operations and reconciler
// passes (lease expiry, check holds, lookups) in lockstep on s and on ref,
// both Services on one clock, and compares every read of s (Get after each
// step; List, Expired and DueChecks now and then) with the same read of
// ref. It returns the first difference, in outcomes or in reads. Exercise
// runs it with ref a fresh store of the same kind behind FullUpdates.
func NarrowReference(ctx context.Context, s, ref ledger.Store, seed uint64, steps int) error {
	r := rand.New(rand.NewPCG(seed, 0x726566))
	clock := at(0)
	now := func() time.Time { return clock }
	tenant := fmt.Sprintf("narrow-reference-%d", seed)
	stores := [2]ledger.Store{s, ref}
	var svcs [2]*ledger.Service
	var recs [2]*ledger.Reconciler
	for i, st := range stores {
		svcs[i] = &ledger.Service{Store: st, Now: now, CacheSize: -1, Owner: "narrow-reference"}
		recs[i] = &ledger.Reconciler{Service: svcs[i], Batch: 50,
			Lookup: func(_ context.Context, a *ledger.Action) ledger.LookupAnswer {
				switch (len(a.History) + a.Checks) % 3 {
				case 0:
					return ledger.LookupAnswer{Found: true, Result: &ledger.Result{StatusCode: 200, ContentType: "application/json", Body: []byte(`{"found":true}`)}}
				case 1:
					return ledger.LookupAnswer{NotFound: true}
				}
				return ledger.LookupAnswer{Err: errors.New("lookup unreachable")}
			},
			Policy: func(*ledger.Action) ledger.ReconcilePolicy {
				return ledger.ReconcilePolicy{SettleAfter: 10 * time.Second, HoldAfter: 40 * time.Second}
			}}
	}
	var ids []string
	compare := func(what, id string) error {
		var got [2]*ledger.Action
		for i, st := range stores {
			a, err := st.Get(ctx, tenant, id)
			if err != nil {
				return fmt.Errorf("%s: Get(%s) on store %d: %w", what, id, i, err)
			}
			got[i] = a
		}
		if d := diff(got[1], got[0]); len(d) > 0 {
			return fmt.Errorf("%s: %s differs from the store written with full Updates:\n%s", what, id, joinLines(d))
		}
		return nil
	}
	compareAll := func(what string) error {
		far := at(1000 * time.Hour)
		var reads [2][]*ledger.Action
		for i, st := range stores {
			page, err := st.List(ctx, ledger.Filter{Tenant: tenant, Limit: ledger.MaxListLimit})
			if err != nil {
				return fmt.Errorf("%s: List on store %d: %w", what, i, err)
			}
			exp, err := st.Expired(ctx, far, 1000)
			if err != nil {
				return fmt.Errorf("%s: Expired on store %d: %w", what, i, err)
			}
			due, err := st.DueChecks(ctx, far, 1000)
			if err != nil {
				return fmt.Errorf("%s: DueChecks on store %d: %w", what, i, err)
			}
			reads[i] = append(append(page.Actions, exp...), due...)
		}
		if len(reads[0]) != len(reads[1]) {
			return fmt.Errorf("%s: the list reads return %d actions, %d on the store written with full Updates", what, len(reads[0]), len(reads[1]))
		}
		for j := range reads[0] {
			if d := diff(reads[1][j], reads[0][j]); len(d) > 0 {
				return fmt.Errorf("%s: list read %d (%s) differs from the store written with full Updates:\n%s", what, j, reads[1][j].ID, joinLines(d))
			}
		}
		return nil
	}
	for step := range steps {
		clock = clock.Add(time.Duration(1 + r.Int64N(int64(15*time.Second))))
		k := r.IntN(12)
		if len(ids) < 3 || k == 0 {
			id := fmt.Sprintf("r%d", len(ids))
			ids = append(ids, id)
			prepare, hold := r.IntN(3) == 0, r.IntN(4) == 0
			p := ledger.ProviderCall{Name: "openai", Route: randText(r), CallID: "call_0", At: clock}
			for i, svc := range svcs {
				var err error
				if prepare {
					_, _, err = svc.Prepare(ctx, tenant, id, ledger.PrepareSpec{ToolID: "refunds.create", Version: "1.0.0", Scope: "s"})
				} else {
					_, _, err = svc.Start(ctx, tenant, id, ledger.StartSpec{ToolID: "refunds.create", Version: "1.0.0", ArgsDigest: "sha256:01",
						Arguments: []byte(`{"amount":1}`), Provider: &p, Hold: hold, Reason: "review rule"})
				}
				if err != nil {
					return fmt.Errorf("step %d: creating %s on store %d: %w", step, id, i, err)
				}
			}
			if err := compare(fmt.Sprintf("step %d: create", step), id); err != nil {
				return err
			}
			continue
		}
		if k == 1 {
			var moved [2]int
			for i, rec := range recs {
				n, err := rec.RunOnce(ctx)
				if err != nil {
					return fmt.Errorf("step %d: reconciler pass on store %d: %w", step, i, err)
				}
				moved[i] = n
			}
			if moved[0] != moved[1] {
				return fmt.Errorf("step %d: the reconciler moved %d actions, %d on the store written with full Updates", step, moved[0], moved[1])
			}
			if err := compareAll(fmt.Sprintf("step %d: reconciler pass", step)); err != nil {
				return err
			}
			continue
		}
		id := ids[r.IntN(len(ids))]
		// One operation, its parameters drawn once and applied to both.
		pick, outcome, status, text := r.IntN(4), r.IntN(3), []int{201, 409}[r.IntN(2)], randText(r)
		p := ledger.ProviderCall{Name: []string{"openai", "anthropic"}[r.IntN(2)], Route: randText(r), CallID: fmt.Sprintf("call_%d", r.IntN(20)), At: clock}
		evidence := r.IntN(5) == 0
		op := func(svc *ledger.Service, a *ledger.Action) (string, error) {
			if evidence {
				if pick%2 == 0 {
					_, err := svc.NoteProviderTransition(ctx, a, p, text)
					return "NoteProviderTransition", err
				}
				return "AddProviderCall", svc.AddProviderCall(ctx, a, p)
			}
			switch a.State {
			case ledger.Prepared:
				return "Bind", svc.Bind(ctx, a, ledger.BindSpec{ArgsDigest: "sha256:02", Arguments: []byte(`{"amount":2}`), Provider: &p, Hold: pick == 0, Reason: text})
			case ledger.Pending:
				if pick == 0 {
					return "Resolve", svc.Resolve(ctx, a, ledger.Resolution{Outcome: "rejected", Principal: "oncall", Note: text}, 1)
				}
				return "Claim", svc.Claim(ctx, a)
			case ledger.Running:
				if pick == 0 {
					return "Renew", svc.Renew(ctx, a)
				}
				o := []ledger.Outcome{ledger.Answered, ledger.NotStarted, ledger.Lost}[outcome]
				var res *ledger.Result
				if o == ledger.Answered {
					res = &ledger.Result{StatusCode: status, ContentType: "application/json", Body: []byte(text)}
				}
				return "Finish", svc.Finish(ctx, a, o, res, text)
			case ledger.Unknown:
				switch pick {
				case 0:
					_, err := svc.Assign(ctx, a, ledger.AssignRequest{Assignee: []string{"", "ann", "bob"}[outcome], Principal: "ann", TakeOver: true})
					return "Assign", err
				case 1:
					return "Resolve", svc.Resolve(ctx, a, ledger.Resolution{Outcome: []string{"succeeded", "rejected", "not_started"}[outcome], Principal: "oncall"}, 3)
				}
				return "ApplyLookup", nil // left to the reconciler's passes
			case ledger.AwaitingApproval:
				switch pick {
				case 0:
					_, err := svc.Assign(ctx, a, ledger.AssignRequest{Assignee: "ann", Principal: "ann"})
					return "Assign", err
				case 1:
					return "Deny", svc.Deny(ctx, a, "oncall", text, nil)
				}
				return "Approve", svc.Approve(ctx, a, "oncall", text)
			}
			return "AddProviderCall", svc.AddProviderCall(ctx, a, p)
		}
		var names [2]string
		var errs [2]string
		for i, st := range stores {
			a, err := st.Get(ctx, tenant, id)
			if err != nil {
				return fmt.Errorf("step %d: Get(%s) on store %d: %w", step, id, i, err)
			}
			name, err := op(svcs[i], a)
			names[i], errs[i] = name, fmt.Sprint(err)
		}
		what := fmt.Sprintf("step %d: %s of %s", step, names[0], id)
		if names[0] != names[1] || errs[0] != errs[1] {
			return fmt.Errorf("%s: %s returned %s; on the store written with full Updates %s returned %s", what, names[0], errs[0], names[1], errs[1])
		}
		if err := compare(what, id); err != nil {
			return err
		}
		if step%10 == 9 {
			if err := compareAll(what); err != nil {
				return err
			}
		}
	}
	if err := compareAll("at the end"); err != nil {
		return err
	}
	page, err := s.List(ctx, ledger.Filter{Tenant: tenant, Limit: ledger.MaxListLimit})
	if err != nil {
		return fmt.Errorf("at the end: List: %w", err)
	}
	updates := 0
	for _, a := range page.Actions {
		updates += int(a.Rev - 1)
	}
	if updates < steps/4 {
		return fmt.Errorf("only %d updates in %d steps: the run checked too little", updates, steps)
	}
	return nil
}
