package rollout_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/rollout"
)

var now = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// tool has versions 1.0.0 (deprecated by the policy, window 30 days), 2.1.0
// and 2.2.0.
func tool() *contract.Tool {
	t := &contract.Tool{ID: "refund.create_request", Policy: contract.ReleasePolicy{DeprecatedVersions: []string{"1.x"}, DeprecationWindowDays: 30}}
	for _, v := range []string{"1.0.0", "2.1.0", "2.2.0"} {
		t.Versions = append(t.Versions, &contract.Version{ToolID: t.ID, Version: v})
	}
	return t
}

func f(v float64) *float64 { return &v }
func n(v int64) *int64     { return &v }

func apply(t *testing.T, tl *contract.Tool, cur ledger.Rollout, ch rollout.Change) ledger.Rollout {
	t.Helper()
	ch.Now, ch.By = now, "oncall"
	next, ev, err := rollout.Apply(tl, cur, ch, rollout.Deprecations{})
	if err != nil {
		t.Fatalf("%s: %v", ch.Action, err)
	}
	if ev.Action != ch.Action || ev.By != "oncall" || !ev.At.Equal(now) || ev.Candidate != next.Candidate || ev.Mode != next.Mode {
		t.Fatalf("%s: audit entry %+v does not describe the change to %+v", ch.Action, ev, next)
	}
	return next
}

// TestLifecycle walks a candidate from shadow through canary to promotion
// and back by rollback, checking the record at each step.
func TestLifecycle(t *testing.T) {
	t.Parallel()
	tl := tool()
	r := ledger.Rollout{ToolID: tl.ID}
	if v, rec := rollout.Default(tl, &r, rollout.Deprecations{}, now); v.Version != "2.2.0" || rec {
		t.Fatalf("default without a record = %s (from record %v), want the registry's 2.2.0", v.Version, rec)
	}
	pinned := apply(t, tl, r, rollout.Change{Action: rollout.ActPromote, Version: "2.2.0"}) // pin the current default
	if pinned.Default != "2.2.0" || pinned.Previous != "" || pinned.Mode != ledger.RolloutStable {
		t.Fatalf("pinning the current default: %+v", pinned)
	}
	r = apply(t, tl, r, rollout.Change{Action: rollout.ActPromote, Version: "2.1.0"}) // pin the older one first
	if r.Default != "2.1.0" || r.Previous != "2.2.0" || r.Mode != ledger.RolloutStable {
		t.Fatalf("after promote 2.1.0: %+v", r)
	}
	r = apply(t, tl, r, rollout.Change{Action: rollout.ActShadow, Version: "v2.2.0"})
	if r.Candidate != "2.2.0" || r.Mode != ledger.RolloutShadow || r.Epoch != 1 {
		t.Fatalf("after shadow: %+v", r)
	}
	r = apply(t, tl, r, rollout.Change{Action: rollout.ActCanary, Percent: f(20)})
	if r.Mode != ledger.RolloutCanary || r.CanaryBasisPoints != 2000 || r.Epoch != 1 ||
		r.HaltMargin != rollout.DefaultHaltMargin || r.HaltMinSample != rollout.DefaultHaltMinSample {
		t.Fatalf("after canary from shadow (same epoch, default halt): %+v", r)
	}
	r = apply(t, tl, r, rollout.Change{Action: rollout.ActCanary, Percent: f(12.5), Principals: []string{" cs-agent ", "cs-agent", ""}, HaltMinSample: n(10)})
	if r.CanaryBasisPoints != 1250 || r.Epoch != 1 || len(r.CanaryPrincipals) != 1 || r.CanaryPrincipals[0] != "cs-agent" || r.HaltMinSample != 10 {
		t.Fatalf("after changing the canary: %+v", r)
	}
	r = apply(t, tl, r, rollout.Change{Action: rollout.ActCanary, HaltMargin: f(0)})
	r = apply(t, tl, r, rollout.Change{Action: rollout.ActCanary, Percent: f(15)})
	if r.HaltMargin != 0 || r.CanaryBasisPoints != 1500 || r.HaltMinSample != 10 {
		t.Fatalf("an explicit halt_margin 0 is kept by a later change that omits it: %+v", r)
	}
	r = apply(t, tl, r, rollout.Change{Action: rollout.ActHalt, Version: "2.2.0"})
	if r.Mode != ledger.RolloutHalted || r.Candidate != "2.2.0" {
		t.Fatalf("after halt: %+v", r)
	}
	r = apply(t, tl, r, rollout.Change{Action: rollout.ActCanary, Percent: f(5)})
	if r.Mode != ledger.RolloutCanary || r.Epoch != 2 || r.CanaryBasisPoints != 500 || len(r.CanaryPrincipals) != 0 {
		t.Fatalf("a canary restarted after a halt starts a new epoch with fresh settings: %+v", r)
	}
	r = apply(t, tl, r, rollout.Change{Action: rollout.ActPromote, Approver: "jane.doe"})
	if r.Default != "2.2.0" || r.Previous != "2.1.0" || r.Candidate != "" || r.Mode != ledger.RolloutStable || r.CanaryBasisPoints != 0 {
		t.Fatalf("after promote: %+v", r)
	}
	r = apply(t, tl, r, rollout.Change{Action: rollout.ActRollback, Version: "2.1.0"})
	if r.Default != "2.1.0" || r.Previous != "2.2.0" {
		t.Fatalf("after rollback: %+v", r)
	}
	if r.Move == nil || r.Move.Action != rollout.ActRollback || r.Move.From != "2.2.0" || r.Move.To != "2.1.0" || r.Move.By != "oncall" {
		t.Fatalf("the rollback is not recorded as the last move: %+v", r.Move)
	}
	// A second rollback does not undo the first: it names it; a promote
	// goes forward again.
	_, _, err := rollout.Apply(tl, r, rollout.Change{Action: rollout.ActRollback, By: "second-oncall", Now: now}, rollout.Deprecations{})
	if !errors.Is(err, rollout.ErrConflict) || !strings.Contains(err.Error(), "oncall rolled refund.create_request back from 2.2.0 to 2.1.0") {
		t.Fatalf("a second rollback: %v", err)
	}
	_, _, err = rollout.Apply(tl, r, rollout.Change{Action: rollout.ActRollback, From: "2.2.0", By: "second-oncall", Now: now}, rollout.Deprecations{})
	if !errors.Is(err, rollout.ErrChanged) || !strings.Contains(err.Error(), "is 2.1.0 now, not 2.2.0") || !strings.Contains(err.Error(), "oncall rolled") {
		t.Fatalf("a rollback from a default that is no longer one: %v", err)
	}
	r = apply(t, tl, r, rollout.Change{Action: rollout.ActPromote, Version: "2.2.0"})
	if r.Default != "2.2.0" || r.Previous != "2.1.0" {
		t.Fatalf("a promote after a rollback: %+v", r)
	}
}

// TestRollbackToTheReleaseTheLockReplaced: with no rollout record, a
// rollback of a default the lock made (a release) restores the version
// that release replaced, with no approval asked; a held version is never
// the default by itself.
func TestRollbackToTheReleaseTheLockReplaced(t *testing.T) {
	t.Parallel()
	tl := tool()
	rel := func(held string) rollout.Deprecations {
		return rollout.Deprecations{Released: func(_, _ string) bool { return true }, Release: func(_, v string) (string, string) {
			if v == "2.2.0" {
				return held, "2.1.0"
			}
			return "", ""
		}}
	}
	if v, _ := rollout.Default(tl, nil, rollout.Deprecations{Released: func(_, v string) bool { return v != "2.2.0" }}, now); v.Version != "2.1.0" {
		t.Fatalf("a held version is the default: %s", v.Version)
	}
	r := ledger.Rollout{ToolID: tl.ID}
	if got := rollout.RollbackTarget(tl, &r, rel(""), now); got != "2.1.0" {
		t.Fatalf("rollback target = %q", got)
	}
	next, _, err := rollout.Apply(tl, r, rollout.Change{Action: rollout.ActRollback, From: "2.2.0", By: "oncall", Now: now}, rel(""))
	if err != nil || next.Default != "2.1.0" || next.Previous != "2.2.0" {
		t.Fatalf("rollback with no record: %v %+v", err, next)
	}
}

// TestRefusals: every transition that does not apply says why, with the
// kind the API maps to a status, and leaves the record as it was.
func TestRefusals(t *testing.T) {
	t.Parallel()
	tl := tool()
	stable := ledger.Rollout{ToolID: tl.ID}
	canary := ledger.Rollout{ToolID: tl.ID, Default: "2.1.0", Candidate: "2.2.0", Mode: ledger.RolloutCanary, CanaryBasisPoints: 100, Epoch: 4}
	halted := canary
	halted.Mode = ledger.RolloutHalted
	locked := rollout.Deprecations{Locked: func(_, v string) (time.Time, bool) { return now.Add(-31 * rollout.Day), v == "1.0.0" }}
	for _, tc := range []struct {
		name string
		cur  ledger.Rollout
		ch   rollout.Change
		dep  rollout.Deprecations
		kind error
		want string
	}{
		{"shadow names nothing", stable, rollout.Change{Action: rollout.ActShadow}, rollout.Deprecations{}, rollout.ErrInvalid, "name the candidate"},
		{"shadow of an unknown version", stable, rollout.Change{Action: rollout.ActShadow, Version: "2.3.0"}, rollout.Deprecations{}, rollout.ErrUnknownVersion, "2.3.0"},
		{"shadow of the default", stable, rollout.Change{Action: rollout.ActShadow, Version: "2.2.0"}, rollout.Deprecations{}, rollout.ErrConflict, "already the default"},
		{"shadow of a retired version", stable, rollout.Change{Action: rollout.ActShadow, Version: "1.0.0"}, locked, rollout.ErrRetired, "deprecation window"},
		{"canary without a share", stable, rollout.Change{Action: rollout.ActCanary, Version: "2.1.0"}, rollout.Deprecations{}, rollout.ErrInvalid, "percent above 0 or principals"},
		{"canary over 100%", stable, rollout.Change{Action: rollout.ActCanary, Version: "2.1.0", Percent: f(101)}, rollout.Deprecations{}, rollout.ErrInvalid, "0 to 100"},
		{"canary of 100%", stable, rollout.Change{Action: rollout.ActCanary, Version: "2.1.0", Percent: f(100)}, rollout.Deprecations{}, rollout.ErrInvalid, "could never halt"},
		{"canary of 99.999%", stable, rollout.Change{Action: rollout.ActCanary, Version: "2.1.0", Percent: f(99.999)}, rollout.Deprecations{}, rollout.ErrInvalid, "promote 2.1.0"},
		{"canary NaN", stable, rollout.Change{Action: rollout.ActCanary, Version: "2.1.0", Percent: f(math.NaN())}, rollout.Deprecations{}, rollout.ErrInvalid, "0 to 100"},
		{"canary margin over 1", stable, rollout.Change{Action: rollout.ActCanary, Version: "2.1.0", Percent: f(1), HaltMargin: f(5)}, rollout.Deprecations{}, rollout.ErrInvalid, "fraction"},
		{"canary min sample 0", stable, rollout.Change{Action: rollout.ActCanary, Version: "2.1.0", Percent: f(1), HaltMinSample: n(0)}, rollout.Deprecations{}, rollout.ErrInvalid, "at least 1"},
		{"canary with no candidate named", stable, rollout.Change{Action: rollout.ActCanary, Percent: f(1)}, rollout.Deprecations{}, rollout.ErrInvalid, "name the candidate"},
		{"promote without candidate", stable, rollout.Change{Action: rollout.ActPromote}, rollout.Deprecations{}, rollout.ErrConflict, "no candidate"},
		{"promote another version than the candidate", canary, rollout.Change{Action: rollout.ActPromote, Version: "1.0.0"}, rollout.Deprecations{}, rollout.ErrConflict, "halt it first"},
		{"promote a halted candidate unnamed", halted, rollout.Change{Action: rollout.ActPromote}, rollout.Deprecations{}, rollout.ErrConflict, "was halted"},
		{"promote the pinned default", ledger.Rollout{ToolID: tl.ID, Default: "2.2.0"}, rollout.Change{Action: rollout.ActPromote, Version: "2.2.0"}, rollout.Deprecations{}, rollout.ErrConflict, "already the default"},
		{"rollback to another version than meant", ledger.Rollout{ToolID: tl.ID, Default: "2.2.0", Previous: "2.1.0"}, rollout.Change{Action: rollout.ActRollback, Version: "1.0.0"}, rollout.Deprecations{}, rollout.ErrConflict, "restores 2.1.0 now, not 1.0.0"},
		{"halt another candidate than meant", canary, rollout.Change{Action: rollout.ActHalt, Version: "2.1.0"}, rollout.Deprecations{}, rollout.ErrConflict, "is 2.2.0 now"},
		{"too many principals", stable, rollout.Change{Action: rollout.ActCanary, Version: "2.1.0", Principals: make([]string, rollout.MaxPrincipals+1)}, rollout.Deprecations{}, rollout.ErrTooLarge, "at most 100 principals"},
		{"a long principal", stable, rollout.Change{Action: rollout.ActCanary, Version: "2.1.0", Principals: []string{strings.Repeat("p", 129)}}, rollout.Deprecations{}, rollout.ErrTooLarge, "at most 128 bytes"},
		{"a long note", stable, rollout.Change{Action: rollout.ActHalt, Note: strings.Repeat("n", rollout.MaxNoteBytes+1)}, rollout.Deprecations{}, rollout.ErrTooLarge, "a note is at most"},
		{"a long approver", stable, rollout.Change{Action: rollout.ActPromote, Approver: strings.Repeat("a", 129)}, rollout.Deprecations{}, rollout.ErrTooLarge, "approver"},
		{"rollback without previous", stable, rollout.Change{Action: rollout.ActRollback}, rollout.Deprecations{}, rollout.ErrConflict, "no previous default"},
		{"rollback to a retired version", ledger.Rollout{ToolID: tl.ID, Default: "2.2.0", Previous: "1.0.0"}, rollout.Change{Action: rollout.ActRollback}, locked, rollout.ErrRetired, "sunset"},
		{"halt without candidate", stable, rollout.Change{Action: rollout.ActHalt}, rollout.Deprecations{}, rollout.ErrConflict, "to halt"},
		{"halt twice", halted, rollout.Change{Action: rollout.ActHalt}, rollout.Deprecations{}, rollout.ErrConflict, "to halt"},
		{"auto halt of a shadow", ledger.Rollout{ToolID: tl.ID, Candidate: "2.1.0", Mode: ledger.RolloutShadow}, rollout.Change{Action: rollout.ActAutoHalt}, rollout.Deprecations{}, rollout.ErrConflict, "to halt"},
		{"unknown action", stable, rollout.Change{Action: "pause"}, rollout.Deprecations{}, rollout.ErrInvalid, "unknown rollout action"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.ch.Now = now
			got, _, err := rollout.Apply(tl, tc.cur, tc.ch, tc.dep)
			if !errors.Is(err, tc.kind) || !strings.Contains(rollout.Detail(err), tc.want) {
				t.Fatalf("err = %v, want %v mentioning %q", err, tc.kind, tc.want)
			}
			if got.Rev != tc.cur.Rev || got.Mode != tc.cur.Mode || got.Default != tc.cur.Default || got.Epoch != tc.cur.Epoch {
				t.Fatalf("a refused change returned %+v, not the record as it was", got)
			}
		})
	}
}

// TestBucketIsUniform: over many principals the canary's share is what it
// says (a binomial bound: 20% of 20,000 within 4 standard deviations), and
// the same caller always lands in the same bucket: what a door advertises to
// a caller is what serves it.
func TestBucketIsUniform(t *testing.T) {
	t.Parallel()
	const total = 20000
	r := &ledger.Rollout{ToolID: "refund.create", Mode: ledger.RolloutCanary, CanaryBasisPoints: 2000}
	in := 0
	for i := range total {
		who := fmt.Sprintf("agent-%06d", i)
		to := rollout.ToCandidate(r, "acme", who)
		if to != rollout.ToCandidate(r, "acme", who) {
			t.Fatalf("%s routed two ways", who)
		}
		if to {
			in++
		}
	}
	mean, sd := total*0.2, math.Sqrt(total*0.2*0.8)
	if math.Abs(float64(in)-mean) > 4*sd {
		t.Fatalf("%d of %d principals routed to the candidate, want %v ± %.0f", in, total, mean, 4*sd)
	}
	if rollout.Bucket("t", "acme", "k") == rollout.Bucket("t", "acme2", "k") && rollout.Bucket("t", "a", "cme:k") == rollout.Bucket("t", "acme", "k") {
		t.Fatal("tenant and principal are not kept apart in the hash")
	}
	named := &ledger.Rollout{Mode: ledger.RolloutCanary, CanaryPrincipals: []string{"beta-agent"}}
	if !rollout.ToCandidate(named, "acme", "beta-agent") || rollout.ToCandidate(named, "acme", "cs-agent") {
		t.Fatal("a named principal's actions all go to the candidate, others' by share only")
	}
	if rollout.ToCandidate(&ledger.Rollout{Mode: ledger.RolloutHalted, CanaryBasisPoints: 10000}, "acme", "p") {
		t.Fatal("a halted canary routes nothing")
	}
}

func outcomes(version string, calls, invalid, unknown int64) api.VersionOutcomes {
	var cs []ledger.RolloutCount
	for i := range calls {
		o := rollout.Outcome{Invalid: i < invalid, Unknown: i >= invalid && i < invalid+unknown, Executed: i >= invalid, LatencyMS: 10}
		cs = append(cs, o.Counts("t", 1, version)...)
	}
	return rollout.Outcomes(ledger.MergeRolloutCounts(cs), version, "")
}

func TestTrip(t *testing.T) {
	t.Parallel()
	r := &ledger.Rollout{HaltMargin: 0.05, HaltMinSample: 50}
	def := outcomes("2.1.0", 200, 4, 0) // 2% invalid
	if o := outcomes("2.2.0", 100, 7, 0); rollout.Trip(r, def, o) != "" {
		t.Fatalf("7%% against 2%% is within the 5-point margin: %+v", o)
	}
	o := outcomes("2.2.0", 100, 8, 0)
	if why := rollout.Trip(r, def, o); !strings.Contains(why, "422 rate is 8%") || !strings.Contains(why, "2%") {
		t.Fatalf("8%% against 2%% trips the margin; reason %q", why)
	}
	if rollout.Trip(r, def, outcomes("2.2.0", 49, 49, 0)) != "" {
		t.Fatal("a candidate below the minimum sample never trips")
	}
	if why := rollout.Trip(r, def, outcomes("2.2.0", 60, 0, 10)); !strings.Contains(why, "unknown rate") {
		t.Fatalf("unknown rate 16%% trips; reason %q", why)
	}
	if o.MeanLatencyMS != 10 || o.Calls != 100 || o.Invalid != 8 {
		t.Fatalf("outcomes summed wrong: %+v", o)
	}
}

func TestDeprecation(t *testing.T) {
	t.Parallel()
	tl := tool()
	since := now.Add(-30*rollout.Day + time.Minute)
	rec := &ledger.Rollout{ToolID: tl.ID, Deprecated: map[string]time.Time{"1.0.0": since}}
	d := rollout.Deprecations{}
	dep := d.Of(tl, rec, "1.0.0")
	if !dep.Deprecated || dep.Source != rollout.SinceRollout || !dep.Sunset().Equal(since.Add(30*rollout.Day)) {
		t.Fatalf("deprecation from the record: %+v", dep)
	}
	if dep.RetiredAt(now) || !dep.RetiredAt(now.Add(time.Minute)) {
		t.Fatal("the version retires exactly at its sunset")
	}
	if d.Of(tl, rec, "2.1.0").Deprecated {
		t.Fatal("2.1.0 is not deprecated by the policy")
	}
	locked := rollout.Deprecations{Locked: func(_, v string) (time.Time, bool) { return now.Add(-40 * rollout.Day), v == "1.0.0" }}
	if dep := locked.Of(tl, rec, "1.0.0"); dep.Source != rollout.SinceLock || !dep.RetiredAt(now) {
		t.Fatalf("the lock's deprecated_at wins over the record's stamp: %+v", dep)
	}
	seen := rollout.Deprecations{Seen: func(_, _ string) (time.Time, bool) { return now.Add(-90 * rollout.Day), true }}
	if dep := seen.Of(tl, nil, "1.0.0"); !dep.Dated() || dep.RetiredAt(now) {
		t.Fatalf("a process's own first sighting dates the headers but never retires: %+v", dep)
	}
	if got := d.Unstamped(tl, nil); len(got) != 1 || got[0] != "1.0.0" {
		t.Fatalf("Unstamped = %v", got)
	}
	if got := d.Unstamped(tl, rec); len(got) != 0 {
		t.Fatalf("Unstamped with a stamp = %v", got)
	}
	next, ev := rollout.Stamp(tl, ledger.Rollout{ToolID: tl.ID, Rev: 3}, []string{"1.0.0"}, now)
	if !next.Deprecated["1.0.0"].Equal(now) || next.Rev != 3 || ev.Action != rollout.ActDeprecated || !strings.Contains(ev.Detail, "30 days") {
		t.Fatalf("Stamp = %+v, %+v", next, ev)
	}
	// A record's default that retired gives way to the registry's.
	pinned := &ledger.Rollout{ToolID: tl.ID, Default: "1.0.0"}
	if v, rec := rollout.Default(tl, pinned, locked, now); v.Version != "2.2.0" || rec {
		t.Fatalf("a retired pinned default serves: %s", v.Version)
	}
}

func TestShadowReport(t *testing.T) {
	t.Parallel()
	var cs []ledger.RolloutCount
	add := func(who string, times int, errs ...contract.FieldError) {
		for range times {
			cs = append(cs, rollout.ShadowCounts("t", 1, "2.2.0", "acme", who, rollout.Kinds(nil, nil, errs))...)
		}
	}
	missing := contract.FieldError{Pointer: "/approval_channel", Code: "required", Detail: "secret-value-not-kept"}
	add("customer_service_agent", 60, missing, missing)
	add("ops_agent", 12, missing)
	add("ops_agent", 3, contract.FieldError{Pointer: "/x\x00y", Code: "additionalProperties"})
	add("ops_agent", 25)
	rep := rollout.ShadowReport(ledger.MergeRolloutCounts(cs), "2.2.0", "acme")
	if rep.Calls != 100 || rep.WouldFail != 75 || len(rep.Failures) != 2 {
		t.Fatalf("report = %+v", rep)
	}
	top := rep.Failures[0]
	if top.Cause != "Missing approval_channel" || top.Calls != 72 || top.Principals[0] != (api.PrincipalCount{Principal: "customer_service_agent", Calls: 60}) {
		t.Fatalf("top failure = %+v", top)
	}
	if rep.Failures[1].Pointer != "/*" || rep.Failures[1].Cause != "Unknown argument" {
		t.Fatalf("second failure = %+v", rep.Failures[1])
	}
	if s := fmt.Sprint(rep); strings.Contains(s, "secret-value") {
		t.Fatal("an error's detail reached the report")
	}
	long := rollout.CleanPointer("/" + strings.Repeat("é", 200))
	if len(long) > rollout.MaxPointerBytes+len("…") || !strings.HasSuffix(long, "…") {
		t.Fatalf("a long pointer is not cut: %d bytes", len(long))
	}
}

// TestBaseDefault: with no record, the default is the newest version the
// lock releases that the policy does not deprecate; a version the lock does
// not release never is, until a promote; a tool the lock releases nothing of
// falls back to the registry's default.
func TestBaseDefault(t *testing.T) {
	t.Parallel()
	tl := tool() // 1.0.0 (deprecated), 2.1.0, 2.2.0
	released := func(vs ...string) rollout.Deprecations {
		return rollout.Deprecations{Released: func(_, v string) bool {
			for _, x := range vs {
				if x == v {
					return true
				}
			}
			return false
		}}
	}
	for _, tc := range []struct {
		name string
		d    rollout.Deprecations
		want string
	}{
		{"no lock", rollout.Deprecations{}, "2.2.0"},
		{"2.2.0 unreleased", released("1.0.0", "2.1.0"), "2.1.0"},
		{"only a deprecated version released", released("1.0.0"), "1.0.0"},
		{"nothing released", released(), "2.2.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if v, rec := rollout.Default(tl, nil, tc.d, now); v.Version != tc.want || rec {
				t.Fatalf("default = %s (record %v), want %s", v.Version, rec, tc.want)
			}
		})
	}
	d := released("1.0.0", "2.1.0")
	r := ledger.Rollout{ToolID: tl.ID}
	next, _, err := rollout.Apply(tl, r, rollout.Change{Action: rollout.ActShadow, Version: "2.2.0", Now: now}, d)
	if err != nil || next.Candidate != "2.2.0" {
		t.Fatalf("shadow of an unreleased version: %+v, %v", next, err)
	}
	next, _, err = rollout.Apply(tl, next, rollout.Change{Action: rollout.ActPromote, Now: now}, d)
	if err != nil || next.Default != "2.2.0" || next.Previous != "2.1.0" {
		t.Fatalf("promote of an unreleased version: %+v, %v", next, err)
	}
}
