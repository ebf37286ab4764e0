package sqlite_test

import (
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/ledger/sqlite"
)

// oldStatements reads testdata/schema006_statements.sql: name -> statement.
func oldStatements(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "schema006_statements.sql"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	parts := strings.Split(string(b), "-- name: ")
	for _, p := range parts[1:] {
		name, body, _ := strings.Cut(p, "\n")
		out[strings.TrimSpace(name)] = strings.TrimSpace(body)
	}
	if len(out) < 7 {
		t.Fatalf("testdata holds %d old statements, want 7", len(out))
	}
	return out
}

// ledger006 creates a ledger at schema 006: migrations 001-006 as they are
// embedded, with their schema_migrations rows.
func ledger006(t *testing.T, path string) *sql.DB {
	t.Helper()
	db := rawDB(t, path)
	if _, err := db.Exec(`PRAGMA journal_mode=WAL; CREATE TABLE schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join("migration", "00[1-6]_*.up.sql"))
	if err != nil || len(files) != 6 {
		t.Fatalf("migrations 001-006: %v %v", files, err)
	}
	sort.Strings(files)
	for i, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(string(text)); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if _, err := db.Exec(`INSERT INTO schema_migrations VALUES (?, ?, 0)`, i+1, filepath.Base(f)); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

// oldValues is what a 006 gateway bound for a, in its insert's column order
// (its values function), with rev.
func oldValues(t *testing.T, a *ledger.Action) []any {
	t.Helper()
	ns := func(x time.Time) any {
		if x.IsZero() {
			return nil
		}
		return x.UnixNano()
	}
	var status, ctype, body any = nil, "", nil
	if a.Result != nil {
		status, ctype, body = a.Result.StatusCode, a.Result.ContentType, a.Result.Body
		if a.Result.Body == nil {
			body = []byte{}
		}
	}
	var calls, hist, args any
	if len(a.ProviderCalls) > 0 || a.ProviderCallsOmitted > 0 {
		calls = string(ledger.AppendEvidenceJSON(nil, a.ProviderCalls, a.ProviderCallsOmitted))
	}
	if len(a.History) > 0 {
		hist = string(ledger.AppendHistoryJSON(nil, a.History))
	}
	if a.Arguments != nil {
		args = a.Arguments
	}
	return []any{
		a.Tenant, a.ID, a.ToolID, a.Version, string(a.State), a.NeedsOperator, a.ArgsDigest, args,
		a.Attempts, a.LeaseOwner, ns(a.LeaseUntil), ns(a.LastSentAt), ns(a.UnknownSince), ns(a.NextCheckAt), a.Checks,
		status, ctype, body, calls,
		a.CorrelationID, a.Scope, a.PolicyVersion, ns(a.CreatedAt), ns(a.UpdatedAt), hist, a.Rev,
	}
}

// representative006 are actions of every shape a 006 ledger holds.
func representative006() []*ledger.Action {
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	binary := []byte{0, 1, 0xff, 0xfe, '\r', '\n', 0xc3, 0x28, '"', '\\'}
	mk := func(id string, st ledger.State, created int) *ledger.Action {
		a := action(id, st)
		a.CreatedAt, a.UpdatedAt, a.Rev = at(created), at(created+1), int64(created%5+1)
		return a
	}
	var out []*ledger.Action
	// Prepared: nothing bound yet.
	out = append(out, mk("prepared", ledger.Prepared, 1))
	out[0].Version = ""
	// Pending with arguments, a digest, evidence, policy and correlation.
	p := mk("pending", ledger.Pending, 2)
	p.Arguments = []byte(`{"amount":1250,"note":"<&> \u2028"}`)
	p.ArgsDigest = "sha256:0c2b"
	p.PolicyVersion, p.CorrelationID, p.Scope = "policy-9", "corr-1", "refunds:write"
	p.ProviderCalls = []ledger.ProviderCall{{Name: "openai", Route: "/v1/chat", CallID: "call_1", At: at(2)}}
	p.History = []ledger.Transition{{From: ledger.Prepared, To: ledger.Pending, Reason: "bound", By: "gateway", At: at(2)}}
	out = append(out, p)
	// Running with a lease, one attempt sent.
	r := mk("running", ledger.Running, 3)
	r.Attempts, r.LeaseOwner, r.LeaseUntil, r.LastSentAt = 1, "gw-1", at(33), at(3)
	r.History = []ledger.Transition{{From: ledger.Pending, To: ledger.Running, Reason: "claim", By: "gateway", At: at(3)}}
	out = append(out, r)
	// Succeeded with a binary result body and provider evidence past the bound.
	s := mk("succeeded", ledger.Succeeded, 4)
	s.Arguments = []byte(`{"a":1}`)
	s.Result = &ledger.Result{StatusCode: 201, ContentType: "application/octet-stream", Body: binary}
	for i := range 3 {
		s.ProviderCalls = append(s.ProviderCalls, ledger.ProviderCall{Name: "anthropic", CallID: "c" + string(rune('a'+i)), At: at(4 + i)})
	}
	s.ProviderCallsOmitted = 4
	s.History = []ledger.Transition{
		{From: ledger.Pending, To: ledger.Running, Reason: "claim", By: "gateway", At: at(4)},
		{From: ledger.Running, To: ledger.Running, Reason: "route changed", By: "gateway", At: at(5),
			Provider: &ledger.ProviderTransition{From: ledger.ProviderRoute{Name: "openai"}, To: ledger.ProviderRoute{Name: "anthropic", Route: "eu"}, State: ledger.Running, Reason: "timeout"}},
		{From: ledger.Running, To: ledger.Succeeded, Reason: "201", By: "gateway", At: at(6)},
	}
	out = append(out, s)
	// Succeeded with an empty body and no content type.
	e := mk("empty-body", ledger.Succeeded, 5)
	e.Result = &ledger.Result{StatusCode: 204, Body: []byte{}}
	out = append(out, e)
	// Rejected, purged: a result status without its body.
	g := mk("purged", ledger.Rejected, 6)
	g.Result = &ledger.Result{StatusCode: 422, ContentType: "application/json", Body: []byte{}}
	out = append(out, g)
	// Unknown, held for an operator, checks run, next check due.
	u := mk("unknown", ledger.Unknown, 7)
	u.NeedsOperator, u.Checks, u.UnknownSince, u.NextCheckAt = true, 3, at(8), at(60)
	u.Attempts, u.LastSentAt = 2, at(7)
	u.History = []ledger.Transition{{From: ledger.Running, To: ledger.Unknown, Reason: "timeout", By: "gateway", At: at(8).In(time.FixedZone("x", 3600))}}
	out = append(out, u)
	// Awaiting approval, another tenant and tool, an assignment in its history.
	w := mk("awaiting", ledger.AwaitingApproval, 8)
	w.Tenant, w.ToolID = "acme", "payments.send"
	w.History = []ledger.Transition{{From: ledger.Pending, To: ledger.AwaitingApproval, Reason: "needs approval", By: "gateway", At: at(9)}}
	out = append(out, w)
	return out
}

// TestMigration007KeepsEveryAction writes a ledger at schema 006 with the
// old version's own statement, opens it with this version (migration 007)
// and compares every read with what was written: each action by Get,
// result bodies byte for byte, and List, Expired, DueChecks and
// CountByState.
func TestMigration007KeepsEveryAction(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "ledger.db")
	db := ledger006(t, path)
	old := oldStatements(t)
	want := representative006()
	for _, a := range want {
		if _, err := db.Exec(old["insert"], oldValues(t, a)...); err != nil {
			t.Fatalf("old insert %s: %v", a.ID, err)
		}
	}
	db.Close()

	s := open(t, sqlite.Config{Path: path})
	if v, err := s.SchemaVersion(ctx); err != nil || v != 7 {
		t.Fatalf("schema version %d, %v; want 7", v, err)
	}
	byID := map[string]*ledger.Action{}
	for _, a := range want {
		got, err := s.Get(ctx, a.Tenant, a.ID)
		if err != nil {
			t.Fatalf("get %s: %v", a.ID, err)
		}
		norm := normalized(t, a)
		if !reflect.DeepEqual(got, norm) {
			t.Errorf("%s after migration:\n got %+v\nwant %+v", a.ID, got, norm)
		}
		if a.Result != nil && string(got.Result.Body) != string(a.Result.Body) {
			t.Errorf("%s: result body %q, want %q", a.ID, got.Result.Body, a.Result.Body)
		}
		byID[a.ID] = norm
	}
	// List: newest first, per tenant, by state, tool, policy and correlation.
	for _, c := range []struct {
		f   ledger.Filter
		ids []string
	}{
		{ledger.Filter{Tenant: "default"}, []string{"unknown", "purged", "empty-body", "succeeded", "running", "pending", "prepared"}},
		{ledger.Filter{Tenant: "default", State: ledger.Succeeded}, []string{"empty-body", "succeeded"}},
		{ledger.Filter{Tenant: "default", State: ledger.Running}, []string{"running"}},
		{ledger.Filter{Tenant: "acme", ToolID: "payments.send"}, []string{"awaiting"}},
		{ledger.Filter{Tenant: "default", PolicyVersion: "policy-9"}, []string{"pending"}},
		{ledger.Filter{Tenant: "default", CorrelationID: "corr-1"}, []string{"pending"}},
	} {
		p, err := s.List(ctx, c.f)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, a := range p.Actions {
			ids = append(ids, a.ID)
			if !reflect.DeepEqual(a, byID[a.ID]) {
				t.Errorf("List %+v: %s differs from Get", c.f, a.ID)
			}
		}
		if !reflect.DeepEqual(ids, c.ids) {
			t.Errorf("List %+v: %v, want %v", c.f, ids, c.ids)
		}
	}
	if ex, err := s.Expired(ctx, t0.Add(time.Hour), 0); err != nil || len(ex) != 1 || ex[0].ID != "running" {
		t.Errorf("Expired: %v, %v", ex, err)
	}
	if dc, err := s.DueChecks(ctx, t0.Add(time.Hour), 0); err != nil || len(dc) != 1 || dc[0].ID != "unknown" {
		t.Errorf("DueChecks: %v, %v", dc, err)
	}
	counts, err := s.CountByState(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantCounts := map[ledger.State]int64{}
	for _, st := range ledger.States {
		wantCounts[st] = 0
	}
	for _, a := range want {
		wantCounts[a.State]++
	}
	if !reflect.DeepEqual(counts, wantCounts) {
		t.Errorf("CountByState %v, want %v", counts, wantCounts)
	}
	// A migrated action goes on: its history appended, its rev compared.
	a, err := s.Get(ctx, "default", "running")
	if err != nil {
		t.Fatal(err)
	}
	prev := *a
	prev.History = append([]ledger.Transition(nil), a.History...)
	if err := a.Move(ledger.Succeeded, ledger.ByGateway, "", "201", t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	a.Result = &ledger.Result{StatusCode: 201, Body: []byte("{}")}
	if err := s.UpdateChanged(ctx, &prev, a); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(ctx, "default", "running"); err != nil || !reflect.DeepEqual(got, normalized(t, a)) {
		t.Errorf("after a write on a migrated action: %+v, %v", got, err)
	}
}

// normalized is a as a store gives it back: times in UTC, a result body
// never nil, and the history as its JSON reads back.
func normalized(t *testing.T, a *ledger.Action) *ledger.Action {
	t.Helper()
	c := *a
	utc := func(x time.Time) time.Time {
		if x.IsZero() {
			return time.Time{}
		}
		return time.Unix(0, x.UnixNano()).UTC()
	}
	c.LeaseUntil, c.LastSentAt, c.UnknownSince = utc(c.LeaseUntil), utc(c.LastSentAt), utc(c.UnknownSince)
	c.NextCheckAt, c.CreatedAt, c.UpdatedAt = utc(c.NextCheckAt), utc(c.CreatedAt), utc(c.UpdatedAt)
	if c.Result != nil {
		r := *c.Result
		if r.Body == nil {
			r.Body = []byte{}
		}
		c.Result = &r
	}
	if len(c.ProviderCalls) > 0 || c.ProviderCallsOmitted > 0 {
		var err error
		if c.ProviderCalls, c.ProviderCallsOmitted, err = ledger.DecodeEvidenceJSON(ledger.AppendEvidenceJSON(nil, c.ProviderCalls, c.ProviderCallsOmitted)); err != nil {
			t.Fatal(err)
		}
	}
	if len(c.History) > 0 {
		c.History = nil
		if err := json.Unmarshal(ledger.AppendHistoryJSON(nil, a.History), &c.History); err != nil {
			t.Fatal(err)
		}
	}
	return &c
}

// TestOldGatewayFailsClosedAfterMigration007 plays a gateway of the
// previous version that keeps running on the file while this version
// migrates it: its prepared statements (testdata, byte for byte the old
// ones) must all fail, and none may change what the new version reads. A
// rolling upgrade of one SQLite file therefore needs the old process
// stopped (docs/operations.md, "Upgrading"); what this proves is that one
// left running cannot write a row the new version would misread.
func TestOldGatewayFailsClosedAfterMigration007(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "ledger.db")
	db := ledger006(t, path)
	old := oldStatements(t)
	want := representative006()
	for _, a := range want {
		if _, err := db.Exec(old["insert"], oldValues(t, a)...); err != nil {
			t.Fatal(err)
		}
	}
	// The old gateway's statements, prepared while the file is at 006.
	db.SetMaxOpenConns(1)
	stmts := map[string]*sql.Stmt{}
	for name, q := range old {
		st, err := db.PrepareContext(ctx, q)
		if err != nil {
			t.Fatalf("prepare old %s: %v", name, err)
		}
		defer st.Close()
		stmts[name] = st
	}

	// They work at 006: the failures below are the migration's doing.
	var n int
	if rows, err := stmts["get"].QueryContext(ctx, "default", "running"); err != nil {
		t.Fatal(err)
	} else {
		for rows.Next() {
			n++
		}
		rows.Close()
	}
	if n != 1 {
		t.Fatalf("old get at 006 read %d rows, want 1", n)
	}

	s := open(t, sqlite.Config{Path: path}) // migrates to 007
	before := map[string]*ledger.Action{}
	for _, a := range want {
		got, err := s.Get(ctx, a.Tenant, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		before[a.ID] = got
	}

	fresh := action("written-by-old", ledger.Pending)
	fresh.Rev = 1
	run := map[string][]any{
		"insert":        oldValues(t, fresh),
		"update":        append(oldValues(t, want[2])[3:22:22], append(oldValues(t, want[2])[23:26], "default", "running", want[2].Rev)...),
		"narrow-update": {"succeeded", "", nil, 201, "", []byte("{}"), t0.UnixNano(), nil, want[2].Rev + 1, "default", "running", want[2].Rev},
		"purge":         {t0.Add(time.Hour).UnixNano(), 50},
		"forget":        {t0.Add(time.Hour).UnixNano(), 50},
		"delete":        {"default", "prepared", want[0].Rev},
		"get":           {"default", "running"},
	}
	for name, st := range stmts {
		args, ok := run[name]
		if !ok {
			t.Fatalf("no arguments for old %s", name)
		}
		var err error
		if name == "get" {
			var x []any
			rows, qerr := st.QueryContext(ctx, args...)
			if qerr == nil {
				for rows.Next() {
					x = append(x, 1)
				}
				qerr = rows.Err()
				rows.Close()
			}
			err = qerr
			if err == nil && len(x) > 0 {
				t.Errorf("old get read a row after the migration")
			}
		} else {
			_, err = st.ExecContext(ctx, args...)
		}
		if err == nil || !strings.Contains(err.Error(), "no such table: actions") {
			t.Errorf("old %s after migration 007: %v, want no such table: actions", name, err)
		}
	}
	for _, a := range want {
		got, err := s.Get(ctx, a.Tenant, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, before[a.ID]) {
			t.Errorf("%s changed under the old gateway's statements", a.ID)
		}
	}
	if _, err := s.Get(ctx, "default", "written-by-old"); err == nil {
		t.Errorf("the old gateway's insert is readable")
	}
}
