package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/ledger/postgres"
)

var c0 = time.Date(2026, 11, 30, 1, 2, 3, 456789012, time.UTC)

func changedAction(id string, st ledger.State) *ledger.Action {
	return &ledger.Action{Tenant: "default", ID: id, ToolID: "refunds.create", Version: "1.0.0", State: st, CreatedAt: c0, UpdatedAt: c0}
}

// mutate changes a random subset of a's updatable fields, as any write of
// ledger.Service might, including back to zero values.
func mutate(r *rand.Rand, a *ledger.Action, step int) {
	at := c0.Add(time.Duration(step) * time.Second)
	pick := func() bool { return r.IntN(3) == 0 }
	str := func(s string) string {
		if r.IntN(4) == 0 {
			return ""
		}
		return fmt.Sprintf("%s-%d", s, r.IntN(3))
	}
	tm := func() time.Time {
		if r.IntN(3) == 0 {
			return time.Time{}
		}
		return at.Add(time.Duration(r.IntN(5)) * time.Millisecond)
	}
	if pick() {
		a.Version = str("v")
	}
	if pick() {
		a.State = ledger.States[r.IntN(len(ledger.States))]
	}
	if pick() {
		a.NeedsOperator = !a.NeedsOperator
	}
	if pick() {
		a.ArgsDigest = str("sha256:")
	}
	if pick() {
		switch r.IntN(3) {
		case 0:
			a.Arguments = nil
		case 1:
			a.Arguments = fmt.Appendf(nil, `{"n":%d}`, r.IntN(3))
		default:
			if a.Arguments != nil {
				a.Arguments = slices.Clone(a.Arguments) // equal bytes, another slice
			}
		}
	}
	if pick() {
		a.Attempts = r.IntN(3)
	}
	if pick() {
		a.LeaseOwner = str("gw")
	}
	if pick() {
		a.LeaseUntil = tm()
	}
	if pick() {
		a.LastSentAt = tm()
	}
	if pick() {
		a.UnknownSince = tm()
	}
	if pick() {
		a.NextCheckAt = tm()
	}
	if pick() {
		a.Checks = r.IntN(3)
	}
	if pick() {
		switch r.IntN(4) {
		case 0:
			a.Result = nil
		case 1:
			a.Result = &ledger.Result{StatusCode: 200 + r.IntN(2), ContentType: str("application/json"), Body: fmt.Appendf(nil, `{"r":%d}`, r.IntN(2))}
		case 2:
			a.Result = &ledger.Result{StatusCode: 204, Body: []byte{}}
		default:
			if a.Result != nil {
				res := *a.Result // an equal result behind another pointer
				a.Result = &res
			}
		}
	}
	if pick() {
		if r.IntN(3) == 0 {
			a.ProviderCalls, a.ProviderCallsOmitted = nil, 0
		} else {
			a.AddProviderCall(ledger.ProviderCall{Name: str("p"), Route: str("r"), CallID: str("c"), At: at})
		}
	}
	if pick() {
		a.CorrelationID = str("corr")
	}
	if pick() {
		a.Scope = str("scope")
	}
	if pick() {
		a.PolicyVersion = str("pol")
	}
	if pick() {
		a.UpdatedAt = at
	}
	if pick() {
		if r.IntN(4) == 0 && len(a.History) > 0 {
			a.History[len(a.History)-1].Reason = str("edited") // a rewrite in place
		} else {
			a.History = append(a.History, ledger.Transition{From: a.State, To: a.State, Reason: str("why"), By: "gateway", At: at})
		}
	}
}

// rawRows returns every actions row of the schema at dsn as the server's
// JSON of the whole row (bytea as hex): the bytes stored, not as read back.
func rawRows(t *testing.T, dsn string) []string {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(t.Context(), `SELECT row_to_json(a)::text FROM actions a ORDER BY tenant, id`)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A write through UpdateChanged leaves the store exactly as Update does: the
// same action read back and the same raw row, after every one of many random
// changes, batched and alone, and with the simple protocol (parameters
// written into the statement text by pgx) as with prepared statements.
func TestUpdateChangedWritesWhatUpdateWrites(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		noBatch bool
		mode    string
	}{{false, ""}, {true, ""}, {false, "simple_protocol"}} {
		t.Run(fmt.Sprintf("nobatch=%v/mode=%s", tc.noBatch, tc.mode), func(t *testing.T) {
			t.Parallel()
			ndsn, _ := pgtest.Schema(t)
			fdsn, _ := pgtest.Schema(t)
			nopen, fopen := ndsn, fdsn
			if tc.mode != "" {
				nopen = pgtest.WithParam(ndsn, "default_query_exec_mode", tc.mode)
				fopen = pgtest.WithParam(fdsn, "default_query_exec_mode", tc.mode)
			}
			narrow := open(t, postgres.Config{DSN: nopen, NoBatch: tc.noBatch})
			full := open(t, postgres.Config{DSN: fopen, NoBatch: tc.noBatch})
			ctx := t.Context()
			r := rand.New(rand.NewPCG(23, 5))
			for n := range 12 {
				id := fmt.Sprintf("act-%d", n)
				a := changedAction(id, ledger.Running)
				a.Arguments, a.ArgsDigest, a.PolicyVersion = []byte(`{"n":0}`), "sha256:x", "pol-1"
				b := *a
				if err := narrow.Insert(ctx, a); err != nil {
					t.Fatal(err)
				}
				if err := full.Insert(ctx, &b); err != nil {
					t.Fatal(err)
				}
				for step := range 25 {
					prev, err := narrow.Get(ctx, a.Tenant, id)
					if err != nil {
						t.Fatal(err)
					}
					next, err := narrow.Get(ctx, a.Tenant, id)
					if err != nil {
						t.Fatal(err)
					}
					mutate(r, next, step)
					other := *next
					other.History = slices.Clone(next.History)
					if err := narrow.UpdateChanged(ctx, prev, next); err != nil {
						t.Fatalf("%s step %d: %v", id, step, err)
					}
					if err := full.Update(ctx, &other); err != nil {
						t.Fatalf("%s step %d: %v", id, step, err)
					}
					if next.Rev != other.Rev {
						t.Fatalf("%s step %d: rev %d, Update's %d", id, step, next.Rev, other.Rev)
					}
					got, err := narrow.Get(ctx, a.Tenant, id)
					if err != nil {
						t.Fatal(err)
					}
					want, err := full.Get(ctx, a.Tenant, id)
					if err != nil {
						t.Fatal(err)
					}
					if !reflect.DeepEqual(got, want) {
						t.Fatalf("%s step %d: UpdateChanged stored\n%+v\nUpdate stored\n%+v", id, step, got, want)
					}
				}
			}
			got, want := rawRows(t, ndsn), rawRows(t, fdsn)
			if len(want) != 12 {
				t.Fatalf("%d raw rows, want 12", len(want))
			}
			if !slices.Equal(got, want) {
				t.Fatalf("raw rows differ:\n%v\n%v", got, want)
			}
		})
	}
}

// UpdateChanged keeps Update's compare-and-set: a writer whose prev is not
// the stored revision is ErrStale and writes nothing; a gone action is
// ErrNotFound.
func TestUpdateChangedCompareAndSet(t *testing.T) {
	t.Parallel()
	dsn, _ := pgtest.Schema(t)
	s := open(t, postgres.Config{DSN: dsn})
	ctx := t.Context()
	a := changedAction("cas", ledger.Running)
	if err := s.Insert(ctx, a); err != nil {
		t.Fatal(err)
	}
	prev := *a
	x, y := *a, *a
	x.State, y.State = ledger.Succeeded, ledger.Rejected
	if err := s.UpdateChanged(ctx, &prev, &x); err != nil {
		t.Fatal(err)
	}
	if x.Rev != 2 {
		t.Fatalf("rev after the write %d, want 2", x.Rev)
	}
	if err := s.UpdateChanged(ctx, &prev, &y); !errors.Is(err, ledger.ErrStale) {
		t.Fatalf("second writer at rev 1: %v, want ErrStale", err)
	}
	got, err := s.Get(ctx, a.Tenant, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != ledger.Succeeded || got.Rev != 2 {
		t.Fatalf("stored %s rev %d, want succeeded rev 2", got.State, got.Rev)
	}
	gone := changedAction("gone", ledger.Running)
	gone.Rev = 1
	p := *gone
	gone.State = ledger.Succeeded
	if err := s.UpdateChanged(ctx, &p, gone); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("update of a missing action: %v, want ErrNotFound", err)
	}
}
