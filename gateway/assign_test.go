package gateway_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/gateway/gatewaytest"
	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/internal/testrig"
	"github.com/toolgate/toolgate/invoke"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/ledger/postgres"
)

// withOperators adds a second operator key (acme-oncall2) beside withKeys'.
func withOperators(c *gatewaytest.Config) {
	withKeys(c)
	c.Keys = append(c.Keys, gateway.Key{Name: "acme-oncall2", SHA256Hex: config.HashKey("key-acme-oncall2"),
		Tenant: "acme", Role: "operator", Tools: []string{"*"}})
}

// unknownAction makes the refund under key unknown: the sandbox answers an
// ambiguous 500.
func (g *rig) unknownAction(key string, hdr ...string) {
	g.t.Helper()
	g.fault(sandboxFault500())
	g.refund(key, okArgs, hdr...).wantProblem(g.t, 504, "outcome_unknown")
}

// lastEntry is the newest history entry of an action record.
func lastEntry(t *testing.T, a map[string]any) map[string]any {
	t.Helper()
	h, _ := a["history"].([]any)
	if len(h) == 0 {
		t.Fatalf("no history: %v", a)
	}
	return h[len(h)-1].(map[string]any)
}

func TestAssignAnUnknownAction(t *testing.T) {
	t.Parallel()
	g := newRig(t, withOperators)
	alice, bob := bearer("key-acme-oncall"), bearer("key-acme-oncall2")
	g.unknownAction("assign-key-0001", bearer("key-acme-agent")...)
	path := "/v1/actions/assign-key-0001"

	before := g.do("GET", path, "", alice...).json(t)
	if before["owner"] != "payment-platform" || before["assignee"] != nil || before["assigned_at"] != nil {
		t.Fatalf("before: owner %v assignee %v assigned_at %v, want payment-platform and none", before["owner"], before["assignee"], before["assigned_at"])
	}
	n := len(before["history"].([]any))

	// Take it (the assignee defaults to the key's name).
	a := g.do("POST", path+"/assign", `{"note":"looking at the PSP"}`, alice...).json(t)
	if a["assignee"] != "acme-oncall" || a["assigned_at"] == nil || a["state"] != "unknown" || a["action_id"] != "assign-key-0001" {
		t.Fatalf("after assign: %v", a)
	}
	e := lastEntry(t, a)
	as, _ := e["assignment"].(map[string]any)
	if e["by"] != "operator:acme-oncall" || e["from"] != "unknown" || e["to"] != "unknown" || as["assignee"] != "acme-oncall" ||
		as["note"] != "looking at the PSP" || e["at"] != a["assigned_at"] || len(a["history"].([]any)) != n+1 {
		t.Fatalf("assignment entry %v (%d entries, want %d)", e, len(a["history"].([]any)), n+1)
	}
	if a["args_digest"] != before["args_digest"] || a["attempts"] != before["attempts"] || a["needs_operator"] != before["needs_operator"] {
		t.Fatalf("the assignment changed the action: %v, was %v", a, before)
	}
	// Again, the same: nothing new.
	if again := g.do("POST", path+"/assign", `{}`, alice...).json(t); len(again["history"].([]any)) != n+1 {
		t.Fatalf("assigning the assignee again added an entry: %v", again["history"])
	}

	// A second operator is refused unless they take it over.
	p := g.do("POST", path+"/assign", `{"note":"mine"}`, bob...).wantProblem(t, 409, "action_assigned")
	if d, _ := p["detail"].(string); !strings.Contains(d, "acme-oncall") || p["state"] != "unknown" {
		t.Fatalf("action_assigned problem %v does not name the assignee", p)
	}
	g.do("POST", path+"/unassign", `{}`, bob...).wantProblem(t, 409, "action_assigned")
	b := g.do("POST", path+"/assign", `{"assignee":"bob","note":"paged","take_over":true}`, bob...).json(t)
	e = lastEntry(t, b)
	as, _ = e["assignment"].(map[string]any)
	if b["assignee"] != "bob" || as["previous"] != "acme-oncall" || as["take_over"] != true || e["by"] != "operator:acme-oncall2" {
		t.Fatalf("take over: assignee %v entry %v", b["assignee"], e)
	}

	// The list shows the owner and the assignee too.
	list := g.do("GET", "/v1/actions?state=unknown", "", alice...).json(t)
	row := list["actions"].([]any)[0].(map[string]any)
	if row["owner"] != "payment-platform" || row["assignee"] != "bob" || row["assigned_at"] != b["assigned_at"] {
		t.Fatalf("list row: %v", row)
	}

	// Bounded texts, clear errors.
	long := `{"note":"` + strings.Repeat("x", ledger.MaxAssignmentNoteBytes+1) + `","take_over":true}`
	g.do("POST", path+"/assign", long, alice...).wantProblem(t, 400, "malformed_request")
	g.do("POST", path+"/assign", `{"assignee":"a\u0007b","take_over":true}`, alice...).wantProblem(t, 422, "invalid_arguments")
	g.do("POST", path+"/assign", `{"assignee":7}`, alice...).wantProblem(t, 400, "malformed_request")
	g.do("POST", "/v1/actions/assign-key-none/assign", `{}`, alice...).wantProblem(t, 404, "action_not_found")

	// An assignment is not a lock: anyone resolves; the action is then not
	// assignable, and its record still says who worked it.
	r := g.do("POST", path+"/resolve", `{"outcome":"succeeded","note":"PSP shows it"}`, alice...)
	if r.status != 200 || r.json(t)["state"] != "succeeded" || r.json(t)["assignee"] != "bob" {
		t.Fatalf("resolve while assigned to another: %d %s", r.status, r.body)
	}
	g.do("POST", path+"/assign", `{"take_over":true}`, alice...).wantProblem(t, 409, "action_not_assignable")
	g.do("POST", path+"/unassign", `{"take_over":true}`, bob...).wantProblem(t, 409, "action_not_assignable")
}

func TestAssignReleaseAndApproval(t *testing.T) {
	t.Parallel()
	g := newRig(t, withOperators)
	alice, bob := bearer("key-acme-oncall"), bearer("key-acme-oncall2")
	// A refund over the review threshold waits for approval.
	r := g.refund("assign-key-0002", `{"order_id":"ord_12345678","amount_minor":50000000,"currency":"EUR","reason":"customer_request"}`, bearer("key-acme-agent")...)
	if r.status != 202 {
		t.Fatalf("the example tool did not hold the refund for approval: %d %s", r.status, r.body)
	}
	path := "/v1/actions/assign-key-0002"
	g.do("POST", path+"/assign", `{}`, alice...)
	// Releasing one's own needs no take-over; releasing nobody's changes nothing.
	a := g.do("POST", path+"/unassign", `{"note":"off shift"}`, alice...).json(t)
	e := lastEntry(t, a)
	as, _ := e["assignment"].(map[string]any)
	if a["assignee"] != nil || as["assignee"] != "" || as["previous"] != "acme-oncall" || as["note"] != "off shift" || a["state"] != "awaiting_approval" {
		t.Fatalf("release: %v entry %v", a, e)
	}
	if again := g.do("POST", path+"/unassign", `{}`, bob...).json(t); len(again["history"].([]any)) != len(a["history"].([]any)) {
		t.Fatal("releasing an unassigned action added an entry")
	}
	// Assigned to alice, approved by bob: not blocked.
	g.do("POST", path+"/assign", `{}`, alice...)
	if r := g.do("POST", path+"/deny", `{"note":"too large"}`, bob...); r.status != 200 || r.json(t)["state"] != "rejected" {
		t.Fatalf("deny while assigned to another: %d %s", r.status, r.body)
	}
}

// Two operators race to take one action, many times: exactly one wins each
// race, the other is told who did.
func TestAssignRaceOverHTTP(t *testing.T) {
	t.Parallel()
	g := newRig(t, withOperators)
	for i := range 5 {
		key := fmt.Sprintf("assign-race-%04d", i)
		g.unknownAction(key, bearer("key-acme-agent")...)
		raceAssign(t, key, []string{g.url, g.url}, []string{"key-acme-oncall", "key-acme-oncall2"})
	}
}

// raceAssign sends one assign per operator at once (operator i to urls[i])
// and checks that exactly one won and the record agrees on every gateway.
func raceAssign(t *testing.T, key string, urls, tokens []string) {
	t.Helper()
	var wg sync.WaitGroup
	replies := make([]reply, len(tokens))
	start := make(chan struct{})
	for i, tok := range tokens {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g := &rig{t: t, url: urls[i]}
			<-start
			replies[i] = g.do("POST", "/v1/actions/"+key+"/assign", fmt.Sprintf(`{"assignee":"op-%d"}`, i), bearer(tok)...)
		}()
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, r := range replies {
		switch r.status {
		case 200:
			if winner >= 0 {
				t.Fatalf("%s: operators %d and %d both took the action", key, winner, i)
			}
			winner = i
		default:
			r.wantProblem(t, 409, "action_assigned")
		}
	}
	if winner < 0 {
		t.Fatalf("%s: nobody took the action", key)
	}
	for _, u := range urls {
		a := (&rig{t: t, url: u}).do("GET", "/v1/actions/"+key, "", bearer(tokens[0])...).json(t)
		if a["assignee"] != fmt.Sprintf("op-%d", winner) {
			t.Fatalf("%s on %s: assignee %v, want op-%d", key, u, a["assignee"], winner)
		}
		n := 0
		for _, h := range a["history"].([]any) {
			if h.(map[string]any)["assignment"] != nil {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("%s: %d assignment entries, want 1", key, n)
		}
	}
}

// A note that repeats a sensitive argument is scrubbed like every other
// operator text, and the assignment leaves the masking of the record as it was.
func TestAssignNotesAreScrubbed(t *testing.T) {
	t.Parallel()
	g := newRig(t, withOperators)
	alice := bearer("key-acme-oncall")
	const email = "jane.secret@example.com"
	args := `{"order_id":"ord_12345678","amount_minor":1500,"currency":"EUR","reason":"customer_request","customer_email":"` + email + `"}`
	g.fault(sandboxFault500())
	g.refund("assign-key-0003", args, bearer("key-acme-agent")...).wantProblem(t, 504, "outcome_unknown")
	before := g.do("GET", "/v1/actions/assign-key-0003", "", alice...)
	r := g.do("POST", "/v1/actions/assign-key-0003/assign", `{"assignee":"alice","note":"called `+email+` back"}`, alice...)
	if r.status != 200 {
		t.Fatalf("assign: %d %s", r.status, r.body)
	}
	after := g.do("GET", "/v1/actions/assign-key-0003", "", alice...)
	list := g.do("GET", "/v1/actions", "", alice...)
	for name, body := range map[string][]byte{"assign answer": r.body, "get": after.body, "list": list.body} {
		if strings.Contains(string(body), email) {
			t.Fatalf("%s shows the sensitive value: %s", name, body)
		}
	}
	if !strings.Contains(string(after.body), "called ") || !strings.Contains(string(after.body), " back") {
		t.Fatalf("the note is gone rather than scrubbed: %s", after.body)
	}
	// Everything but the new entry and the assignee reads as before.
	b, a := before.json(t), after.json(t)
	for _, k := range []string{"args_digest", "state", "result", "provider_calls", "needs_operator"} {
		if fmt.Sprint(b[k]) != fmt.Sprint(a[k]) {
			t.Fatalf("%s changed: %v -> %v", k, b[k], a[k])
		}
	}
}

// Two gateways on one PostgreSQL ledger: operators on different replicas
// race to take an action; one wins, both replicas show the winner, and the
// other is told who holds it.
func TestAssignAcrossReplicasOnPostgres(t *testing.T) {
	t.Parallel()
	dsn, _ := pgtest.Schema(t)
	sb, sbURL := testrig.Sandbox(t)
	keys := []gateway.Key{
		{Name: "agent", SHA256Hex: config.HashKey("key-agent"), Tenant: "acme", Role: "agent", Tools: []string{"*"}},
		{Name: "alice", SHA256Hex: config.HashKey("key-alice"), Tenant: "acme", Role: "operator", Tools: []string{"*"}},
		{Name: "bob", SHA256Hex: config.HashKey("key-bob"), Tenant: "acme", Role: "operator", Tools: []string{"*"}},
	}
	var urls []string
	for i := range 2 {
		st, err := postgres.Open(context.Background(), postgres.Config{DSN: dsn, MaxConns: 4})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		srv, err := gatewaytest.New(gatewaytest.Config{
			Registry: testrig.Registry(t), Ledger: &ledger.Service{Store: st, Owner: fmt.Sprintf("replica-%d", i)},
			Invoker: &invoke.Client{}, Bindings: testrig.Bindings(sbURL), JoinTimeout: 5 * time.Second,
			Keys: keys, Logger: testrig.Logger(t),
		})
		if err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(contractChecked(t, srv))
		t.Cleanup(ts.Close)
		urls = append(urls, ts.URL)
	}
	g := &rig{t: t, url: urls[0], sb: sb}
	for i := range 5 {
		key := fmt.Sprintf("assign-pg-%04d", i)
		g.unknownAction(key, bearer("key-agent")...)
		raceAssign(t, key, urls, []string{"key-alice", "key-bob"})
	}
	// A take-over on one replica is seen on the other.
	other := &rig{t: t, url: urls[1]}
	other.do("POST", "/v1/actions/assign-pg-0000/assign", `{"assignee":"carol","take_over":true}`, bearer("key-bob")...)
	if a := g.do("GET", "/v1/actions/assign-pg-0000", "", bearer("key-alice")...).json(t); a["assignee"] != "carol" {
		t.Fatalf("replica 0 shows assignee %v after a take-over on replica 1", a["assignee"])
	}
}

// labelOf is the value of a series' label name ("" when it has none).
func labelOf(m *dto.Metric, name string) string {
	for _, lp := range m.GetLabel() {
		if lp.GetName() == name {
			return lp.GetValue()
		}
	}
	return ""
}

// series is the one series of name whose labels include labels; it fails
// when there is none, so a check of its value cannot pass on nothing.
func (g *rig) series(name string, labels map[string]string) float64 {
	g.t.Helper()
	fam := g.families()[name]
	var found []*dto.Metric
	for _, m := range fam.GetMetric() {
		ok := true
		for k, v := range labels {
			ok = ok && labelOf(m, k) == v
		}
		if ok {
			found = append(found, m)
		}
	}
	if len(found) != 1 {
		g.t.Fatalf("%s%v: %d series, want 1 (family %v)", name, labels, len(found), fam)
	}
	return found[0].GetGauge().GetValue()
}

// The per-tool gauges behind the unknown and operator alerts carry the
// tool's owner from owner.yaml, and the unassigned-unknown age follows
// assignments: 0 while someone holds the action, counted from the release
// after one.
func TestMetricsCarryOwnerAndUnassignedAge(t *testing.T) {
	t.Parallel()
	// The ledger and the gauges read one hand-moved clock: each age is
	// what the test moved it by.
	clk := &testClock{t: time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)}
	g := newRig(t, func(c *gatewaytest.Config) {
		c.Ledger.Now, c.Now = clk.Now, clk.Now
		refund := c.Bindings["payments.issue_refund"]
		refund.LookupURL = ""
		c.Bindings["payments.issue_refund"] = refund
	})
	refund := map[string]string{"tool_id": "payments.issue_refund", "owner": "payment-platform"}
	for _, name := range []string{"toolgate_hold_after_seconds", "toolgate_actions_needs_operator", "toolgate_oldest_unknown_age_seconds",
		"toolgate_oldest_unassigned_unknown_age_seconds", "toolgate_oldest_approval_age_seconds"} {
		for _, m := range g.families()[name].GetMetric() {
			if tool, owner := labelOf(m, "tool_id"), labelOf(m, "owner"); owner == "" {
				t.Errorf("%s{tool_id=%q} has no owner label", name, tool)
			}
		}
		g.series(name, refund)
	}
	if got := g.series("toolgate_oldest_unassigned_unknown_age_seconds", refund); got != 0 {
		t.Fatalf("unassigned age %v with no action", got)
	}
	g.unknownAction("assign-metric-01")
	clk.Add(20 * time.Second)
	if got := g.series("toolgate_oldest_unassigned_unknown_age_seconds", refund); got != 20 {
		t.Fatalf("unassigned age %v, want 20s", got)
	}
	g.do("POST", "/v1/actions/assign-metric-01/assign", `{"assignee":"alice"}`)
	clk.Add(5 * time.Second)
	if got := g.series("toolgate_oldest_unassigned_unknown_age_seconds", refund); got != 0 {
		t.Fatalf("unassigned age %v while alice holds the action", got)
	}
	if got := g.series("toolgate_oldest_unknown_age_seconds", refund); got != 25 {
		t.Fatalf("oldest unknown age %v, want 25s: an assignment must not reset it", got)
	}
	g.do("POST", "/v1/actions/assign-metric-01/unassign", `{"take_over":true}`)
	clk.Add(3 * time.Second)
	if got, old := g.series("toolgate_oldest_unassigned_unknown_age_seconds", refund), g.series("toolgate_oldest_unknown_age_seconds", refund); got != 3 || old != 28 {
		t.Fatalf("after the release the unassigned age is %v, want 3s (from the release), and the unknown age %v, want 28s", got, old)
	}
}
