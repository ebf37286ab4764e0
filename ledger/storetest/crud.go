package storetest

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/ledger"
)

// fullAction returns an action with every field set to a non-zero value, in a
// non-UTC zone, with a result body that is not text.
func fullAction(tenant, id string) *ledger.Action {
	zone := time.FixedZone("UTC+05:30", 5*3600+30*60)
	body := make([]byte, 0, 300)
	for i := range 256 {
		body = append(body, byte(i))
	}
	body = append(body, 0xff, 0xfe, 0x00, '\r', '\n', 0xc3, 0x28) // invalid UTF-8 too
	return &ledger.Action{
		Tenant:        tenant,
		ID:            id,
		ToolID:        "refunds.create",
		Version:       "1.2.3",
		State:         ledger.Unknown,
		NeedsOperator: true,
		ArgsDigest:    "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		Arguments:     []byte(`{"amount":1250,"currency":"EUR","note":"caf\u00e9 \"quoted\""}`),
		Attempts:      3,
		LeaseOwner:    "gateway-7",
		LeaseUntil:    base.Add(30 * time.Second).In(zone),
		LastSentAt:    base.Add(-2 * time.Second).In(zone),
		SendUntil:     base.Add(8*time.Second + 3).In(zone),
		UnknownSince:  base.Add(-time.Second),
		NextCheckAt:   base.Add(5*time.Second + 1),
		Checks:        4,
		Result: &ledger.Result{
			StatusCode:  201,
			ContentType: "application/json; charset=utf-8",
			Body:        body,
		},
		ProviderCalls: []ledger.ProviderCall{
			{Name: "openai", Route: "/v1/chat/completions", CallID: "call_abc", At: base.Add(-3 * time.Second).In(zone)},
			{Name: "anthropic", Route: "/v1/messages", CallID: "toolu_01", At: base.Add(-time.Nanosecond)},
		},
		CorrelationID: "corr-123",
		Scope:         "refunds:write",
		PolicyVersion: "policy-9",
		CreatedAt:     base.Add(-time.Minute + 7).In(zone),
		UpdatedAt:     base.Add(-999),
		History: []ledger.Transition{
			{From: ledger.Pending, To: ledger.Running, Reason: "claim", By: "gateway", At: base.Add(-2 * time.Second)},
			{From: ledger.Running, To: ledger.Unknown, Reason: "timeout", By: "gateway", At: base.Add(-time.Second).In(zone)},
			{From: ledger.Unknown, To: ledger.Unknown, Reason: "lookup unavailable past hold_after", By: "reconciler", At: base.Add(-1)},
		},
		ProviderCallsOmitted: 3,
	}
}

func testRoundTripEveryField(t *testing.T, s ledger.Store) {
	a := fullAction("t1", "act-1")
	a.Rev = 42 // Insert must set it to 1 whatever it was
	// The fixture must exercise every field, including ones added later.
	v := reflect.ValueOf(*a)
	for i := range v.NumField() {
		if name := v.Type().Field(i).Name; name != "Rev" && v.Field(i).IsZero() {
			t.Fatalf("fullAction leaves %s zero: the round trip would not test it", name)
		}
	}
	insert(t, s, a)
	if a.Rev != 1 {
		t.Fatalf("after Insert a.Rev = %d, want 1", a.Rev)
	}
	got := get(t, s, "t1", "act-1")
	mustEqual(t, "round trip", a, got)

	// What Get returns is the caller's own copy.
	got.Result.Body[0] = 'X'
	got.History[0].Reason = "changed"
	mustEqual(t, "re-read after changing a returned copy", a, get(t, s, "t1", "act-1"))
}

func testRoundTripZeroFields(t *testing.T, s ledger.Store) {
	bare := newAction("t1", "bare", ledger.Prepared, 0)
	bare.UpdatedAt = time.Time{}
	insert(t, s, bare)
	got := get(t, s, "t1", "bare")
	mustEqual(t, "bare action", bare, got)
	if got.Result != nil {
		t.Fatalf("Result: want nil, got %+v", got.Result)
	}
	for name, tm := range map[string]time.Time{
		"LeaseUntil": got.LeaseUntil, "LastSentAt": got.LastSentAt, "SendUntil": got.SendUntil, "UnknownSince": got.UnknownSince,
		"NextCheckAt": got.NextCheckAt, "UpdatedAt": got.UpdatedAt,
	} {
		if !tm.IsZero() {
			t.Errorf("%s: want the zero time, got %s", name, tm)
		}
	}

	// A stored answer with an empty body is still a stored answer.
	empty := newAction("t1", "empty-body", ledger.Succeeded, 0)
	empty.Result = &ledger.Result{StatusCode: 204}
	insert(t, s, empty)
	got = get(t, s, "t1", "empty-body")
	if got.Result == nil || got.Result.StatusCode != 204 || len(got.Result.Body) != 0 {
		t.Fatalf("empty-body result: got %+v, want status 204 with no body", got.Result)
	}
}

func testInsertExists(t *testing.T, s ledger.Store) {
	first := insert(t, s, newAction("t1", "dup", ledger.Pending, 0))
	second := newAction("t1", "dup", ledger.Running, time.Second)
	second.ToolID = "other.tool"
	wantErr(t, "second Insert", s.Insert(t.Context(), second), ledger.ErrExists)
	mustEqual(t, "after a refused Insert", first, get(t, s, "t1", "dup"))
}

func testGetNotFound(t *testing.T, s ledger.Store) {
	insert(t, s, newAction("t1", "here", ledger.Pending, 0))
	_, err := s.Get(t.Context(), "t1", "missing")
	wantErr(t, "Get missing id", err, ledger.ErrNotFound)
	_, err = s.Get(t.Context(), "t2", "here")
	wantErr(t, "Get another tenant's id", err, ledger.ErrNotFound)
}

func testUpdateCompareAndSet(t *testing.T, s ledger.Store) {
	insert(t, s, newAction("t1", "cas", ledger.Pending, 0))
	winner := get(t, s, "t1", "cas")
	loser := get(t, s, "t1", "cas")

	if err := winner.Move(ledger.Running, ledger.ByGateway, "", "claim", at(time.Second)); err != nil {
		t.Fatal(err)
	}
	winner.LeaseOwner, winner.LeaseUntil, winner.Attempts = "w", at(31*time.Second), 1
	if err := s.Update(t.Context(), winner); err != nil {
		t.Fatalf("first Update: %v", err)
	}
	if winner.Rev != 2 {
		t.Fatalf("after Update winner.Rev = %d, want 2", winner.Rev)
	}
	mustEqual(t, "after the winning Update", winner, get(t, s, "t1", "cas"))

	if err := loser.Move(ledger.AwaitingApproval, ledger.ByGateway, "", "review", at(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "Update at a stale revision", s.Update(t.Context(), loser), ledger.ErrStale)
	if loser.Rev != 1 {
		t.Fatalf("a refused Update changed a.Rev to %d", loser.Rev)
	}
	mustEqual(t, "after the stale Update", winner, get(t, s, "t1", "cas"))

	// A second write from the same, now current, copy succeeds.
	if err := winner.Move(ledger.Succeeded, ledger.ByGateway, "", "201", at(3*time.Second)); err != nil {
		t.Fatal(err)
	}
	winner.Result = &ledger.Result{StatusCode: 201, ContentType: "application/json", Body: []byte(`{"id":"r1"}`)}
	if err := s.Update(t.Context(), winner); err != nil {
		t.Fatalf("second Update: %v", err)
	}
	if winner.Rev != 3 {
		t.Fatalf("after two Updates Rev = %d, want 3", winner.Rev)
	}
	mustEqual(t, "after the second Update", winner, get(t, s, "t1", "cas"))
}

func testUpdateNotFound(t *testing.T, s ledger.Store) {
	a := newAction("t1", "ghost", ledger.Pending, 0)
	a.Rev = 1
	wantErr(t, "Update of an action never inserted", s.Update(t.Context(), a), ledger.ErrNotFound)
	insert(t, s, newAction("t2", "ghost", ledger.Pending, 0))
	wantErr(t, "Update in the wrong tenant", s.Update(t.Context(), a), ledger.ErrNotFound)
}

// testUpdateKeepsToolAndCreation: ToolID and CreatedAt are fixed at Insert
// (List filters and pages by them); an Update that carries other values
// writes everything else and leaves those two as stored.
func testUpdateKeepsToolAndCreation(t *testing.T, s ledger.Store) {
	first := insert(t, s, newAction("t1", "fixed", ledger.Pending, 0))
	a := get(t, s, "t1", "fixed")
	a.ToolID, a.CreatedAt = "other.tool", at(time.Hour)
	a.Version = "9.9.9"
	if err := s.Update(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	got := get(t, s, "t1", "fixed")
	if got.ToolID != first.ToolID || !got.CreatedAt.Equal(first.CreatedAt) || got.Version != "9.9.9" || got.Rev != 2 {
		t.Fatalf("after an Update with another tool and creation time: tool %q created %s version %q rev %d; want tool %q created %s version 9.9.9 rev 2",
			got.ToolID, got.CreatedAt, got.Version, got.Rev, first.ToolID, first.CreatedAt)
	}
}

func testSameIDTwoTenants(t *testing.T, s ledger.Store) {
	a := newAction("acme", "order-1", ledger.Pending, 0)
	b := newAction("globex", "order-1", ledger.Pending, time.Second)
	b.ToolID = "other.tool"
	insert(t, s, a)
	insert(t, s, b)

	ga := get(t, s, "acme", "order-1")
	if err := ga.Move(ledger.Running, ledger.ByGateway, "", "claim", at(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := s.Update(t.Context(), ga); err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "acme's action", ga, get(t, s, "acme", "order-1"))
	mustEqual(t, "globex's action, untouched", b, get(t, s, "globex", "order-1"))
}

// actors lists every ledger.Actor.
var actors = []ledger.Actor{ledger.ByGateway, ledger.ByReconciler, ledger.ByOperator}

// testEveryAllowedTransitionPersisted takes each edge of the state machine
// through the store and reads it back.
func testEveryAllowedTransitionPersisted(t *testing.T, s ledger.Store) {
	edges := 0
	for _, from := range ledger.States {
		for _, to := range ledger.States {
			for _, by := range actors {
				if !ledger.CanTransition(from, to, by) {
					continue
				}
				edges++
				id := fmt.Sprintf("%s-%s-%s", from, to, by)
				a := newAction("t1", id, from, 0)
				if from == ledger.Running {
					a.LeaseOwner, a.LeaseUntil, a.Attempts = "g1", at(30*time.Second), 1
				}
				if from == ledger.Unknown {
					a.UnknownSince, a.NextCheckAt, a.Checks, a.NeedsOperator = at(-time.Minute), at(time.Second), 2, true
				}
				insert(t, s, a)
				cur := get(t, s, "t1", id)
				if err := cur.Move(to, by, "p", "edge test", at(time.Minute)); err != nil {
					t.Fatalf("%s: %v", id, err)
				}
				if err := s.Update(t.Context(), cur); err != nil {
					t.Fatalf("%s: Update: %v", id, err)
				}
				got := get(t, s, "t1", id)
				mustEqual(t, id, cur, got)
				if got.State != to || len(got.History) != 1 || got.History[0].By != string(by)+":p" {
					t.Fatalf("%s: stored state %s history %+v", id, got.State, got.History)
				}
			}
		}
	}
	if edges == 0 {
		t.Fatal("the state machine allows no transition")
	}
}

// testLifecycle walks one action through a timeout and reconciliation,
// re-reading after every write.
func testLifecycle(t *testing.T, s ledger.Store) {
	a := insert(t, s, newAction("t1", "life", ledger.Prepared, 0))
	step := func(to ledger.State, by ledger.Actor, reason string, d time.Duration, edit func(*ledger.Action)) {
		t.Helper()
		if err := a.Move(to, by, "", reason, at(d)); err != nil {
			t.Fatal(err)
		}
		if edit != nil {
			edit(a)
		}
		if err := s.Update(t.Context(), a); err != nil {
			t.Fatalf("%s: %v", reason, err)
		}
		mustEqual(t, reason, a, get(t, s, "t1", "life"))
	}
	step(ledger.Pending, ledger.ByGateway, "bind arguments", time.Second, func(a *ledger.Action) {
		a.Arguments, a.ArgsDigest = []byte(`{"amount":5}`), "sha256:ab"
	})
	step(ledger.Running, ledger.ByGateway, "claim", 2*time.Second, func(a *ledger.Action) {
		a.Attempts, a.LeaseOwner, a.LeaseUntil, a.LastSentAt, a.SendUntil = 1, "g1", at(32*time.Second), at(2*time.Second), at(12*time.Second)
	})
	step(ledger.Unknown, ledger.ByGateway, "timeout", 12*time.Second, func(a *ledger.Action) { a.NextCheckAt = at(13 * time.Second) })
	if !a.LeaseUntil.IsZero() || a.LeaseOwner != "" {
		t.Fatal("Move to unknown kept the lease")
	}
	step(ledger.Unknown, ledger.ByReconciler, "hold_after passed", time.Hour, func(a *ledger.Action) {
		a.NeedsOperator, a.Checks, a.NextCheckAt = true, 9, at(2*time.Hour)
	})
	step(ledger.Pending, ledger.ByOperator, "resolved not_started", 2*time.Hour, nil)
	step(ledger.Running, ledger.ByGateway, "claim", 2*time.Hour+time.Second, func(a *ledger.Action) {
		a.Attempts, a.LeaseOwner, a.LeaseUntil = 2, "g2", at(2*time.Hour+31*time.Second)
	})
	step(ledger.Succeeded, ledger.ByGateway, "201", 2*time.Hour+2*time.Second, func(a *ledger.Action) {
		a.Result = &ledger.Result{StatusCode: 201, ContentType: "application/json", Body: []byte(`{"refund":"r-1"}`)}
	})
	if a.Rev != 8 || len(a.History) != 7 {
		t.Fatalf("after the walk: rev %d history %d, want 8 and 7", a.Rev, len(a.History))
	}
}

// testUpdateClearsFields writes zero values over set ones: a store must not
// keep an old lease, result or flag because the new value is empty.
func testUpdateClearsFields(t *testing.T, s ledger.Store) {
	a := insert(t, s, fullAction("t1", "clear"))
	cur := get(t, s, "t1", "clear")
	cur.NeedsOperator, cur.ArgsDigest, cur.Arguments = false, "", nil
	cur.Attempts, cur.LeaseOwner, cur.LeaseUntil, cur.LastSentAt, cur.SendUntil = 0, "", time.Time{}, time.Time{}, time.Time{}
	cur.UnknownSince, cur.NextCheckAt, cur.Checks = time.Time{}, time.Time{}, 0
	cur.Result, cur.ProviderCalls, cur.History = nil, nil, nil
	cur.CorrelationID, cur.Scope, cur.PolicyVersion, cur.UpdatedAt = "", "", "", time.Time{}
	if err := s.Update(t.Context(), cur); err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "after clearing", cur, get(t, s, "t1", "clear"))

	// And back again.
	a.Rev = cur.Rev
	if err := s.Update(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "after restoring", a, get(t, s, "t1", "clear"))
}

// testLargeBody stores a result body of a mebibyte, every byte kept.
func testLargeBody(t *testing.T, s ledger.Store) {
	body := make([]byte, 1<<20)
	x := uint32(2463534242)
	for i := range body {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		body[i] = byte(x)
	}
	a := newAction("t1", "big", ledger.Succeeded, 0)
	a.Result = &ledger.Result{StatusCode: 200, ContentType: "application/octet-stream", Body: body}
	insert(t, s, a)
	mustEqual(t, "large body", a, get(t, s, "t1", "big"))
}

// oddIDs are ids and tenants a store must keep as given: every visible ASCII
// character an Idempotency-Key may hold (docs/reference/http-api.md: 0x21-0x7E, up to 255),
// separators, quotes, SQL and cursor metacharacters, and some UTF-8 (valid
// UTF-8 without NUL is all a store may assume).
var oddIDs = []string{
	"a:b:c", "v1:123:x", "slash/and\\back", "quote'\"`", "semi;--", "percent%_*?", "<&>=#[]{}|^~!@$()+,",
	visibleASCII, strings.Repeat("k", 255), "with space", "tab\tnewline\n", "é", "日本語", "emoji🙂",
}

// visibleASCII is every character from 0x21 to 0x7E.
var visibleASCII = func() string {
	var b strings.Builder
	for c := byte(0x21); c <= 0x7e; c++ {
		b.WriteByte(c)
	}
	return b.String()
}()

func testOddIDs(t *testing.T, s ledger.Store) {
	for i, id := range oddIDs {
		a := newAction(id, id, ledger.Pending, time.Duration(i))
		insert(t, s, a)
		mustEqual(t, fmt.Sprintf("id %q", id), a, get(t, s, id, id))
	}
	// The same ids in one tenant, paged one at a time through cursors.
	for i, id := range oddIDs {
		insert(t, s, newAction("odd", id, ledger.Pending, time.Duration(i)))
	}
	got := listAll(t, s, ledger.Filter{Tenant: "odd", Limit: 1})
	if len(got) != len(oddIDs) {
		t.Fatalf("paged %d odd ids, want %d: %q", len(got), len(oddIDs), got)
	}
	for i, id := range got {
		if want := oddIDs[len(oddIDs)-1-i]; id != want {
			t.Fatalf("page %d: %q, want %q", i, id, want)
		}
	}
}

// testReopen opens a second store on a database another store has migrated
// and written, while the first is still open, then again after both closed:
// the migrations run on an up-to-date schema without error or loss, and every
// store sees the same actions.
func testReopen(t *testing.T, open func(t *testing.T) ledger.Store) {
	first := open(t)
	a := insert(t, first, fullAction("t1", "before-reopen"))
	second := open(t)
	mustEqual(t, "read by a second store on the same database", a, get(t, second, "t1", "before-reopen"))
	b := insert(t, second, newAction("t1", "by-second", ledger.Pending, time.Second))
	mustEqual(t, "written by the second store, read by the first", b, get(t, first, "t1", "by-second"))
	if err := second.Close(); err != nil {
		t.Fatalf("Close the second store: %v", err)
	}
	if err := first.Close(); err != nil {
		t.Fatalf("Close the first store: %v", err)
	}
	third := open(t)
	mustEqual(t, "after reopening", a, get(t, third, "t1", "before-reopen"))
	mustEqual(t, "after reopening", b, get(t, third, "t1", "by-second"))
	wantErr(t, "Insert an existing id after reopening", third.Insert(t.Context(), newAction("t1", "by-second", ledger.Pending, 0)), ledger.ErrExists)
}

// testCloseTwice closes a store twice: the second Close has nothing left to
// release and returns nil (the store's cleanup closes it a third time).
func testCloseTwice(t *testing.T, s ledger.Store) {
	insert(t, s, newAction("t1", "a1", ledger.Pending, 0))
	if err := s.Close(); err != nil {
		t.Fatalf("first Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}
