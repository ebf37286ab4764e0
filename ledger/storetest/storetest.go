// Package storetest is the one conformance suite every ledger.Store must pass.
// A store's own test calls Exercise with a constructor for empty stores; when
// the behaviour the ledger needs changes, this suite changes first.
//
// The suite never sleeps: every time it stores is explicit, derived from a
// fixed base instant, and the reconciler queries (Expired, DueChecks) are
// asked about an injected "now".
package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/toolgate/toolgate/ledger"
)

// NewDatabase makes a new, empty database for one subtest and returns how to
// open a store on it. Every store it opens must be closed when its test ends
// (t.Cleanup); the suite also closes some itself first, so Close must be safe
// to call again.
type NewDatabase func(t *testing.T) (open func(t *testing.T) ledger.Store)

// Exercise runs every conformance test against stores on databases made by
// newDB: most open one store on a fresh database; Reopen opens a second store
// on the same database, which proves that the store's migrations are
// idempotent. Subtests run in parallel.
func Exercise(t *testing.T, newDB NewDatabase) {
	t.Helper()
	tests := []struct {
		name string
		run  func(t *testing.T, s ledger.Store)
	}{
		{"RoundTripEveryField", testRoundTripEveryField},
		{"RoundTripZeroFields", testRoundTripZeroFields},
		{"InsertExists", testInsertExists},
		{"GetNotFound", testGetNotFound},
		{"UpdateCompareAndSet", testUpdateCompareAndSet},
		{"UpdateNotFound", testUpdateNotFound},
		{"UpdateKeepsToolAndCreation", testUpdateKeepsToolAndCreation},
		{"UpdateClearsFields", testUpdateClearsFields},
		{"LargeBody", testLargeBody},
		{"OddIDs", testOddIDs},
		{"ClaimRace", testClaimRace},
		{"ConcurrentDistinctWrites", testConcurrentDistinctWrites},
		{"ConcurrentReadsAndWrites", testConcurrentReadsAndWrites},
		{"SameIDTwoTenants", testSameIDTwoTenants},
		{"ListNewestFirst", testListNewestFirst},
		{"ListTiesOrderIDsAsBytes", testListTiesOrderIDsAsBytes},
		{"ListFilters", testListFilters},
		{"ListByPolicyAndCorrelation", testListByPolicyAndCorrelation},
		{"ListPagination", testListPagination},
		{"ListPaginationStableUnderInserts", testListPaginationStableUnderInserts},
		{"ListLimits", testListLimits},
		{"ListTenantIsolation", testListTenantIsolation},
		{"Expired", testExpired},
		{"ExpiredLimit", testExpiredLimit},
		{"DueChecks", testDueChecks},
		{"CountByState", testCountByState},
		{"EveryAllowedTransitionPersisted", testEveryAllowedTransitionPersisted},
		{"Lifecycle", testLifecycle},
		{"Purge", testPurge},
		{"PurgeBatches", testPurgeBatches},
		{"Forget", testForget},
		{"Delete", testDelete},
		{"CloseTwice", testCloseTwice},
		{"ClosedStoreIsUnavailable", testClosedStoreIsUnavailable},
		{"CanceledContextIsTheCallers", testCanceledContextIsTheCallers},
		{"RolloutRoundTrip", testRolloutRoundTrip},
		{"RolloutCompareAndSet", testRolloutCompareAndSet},
		{"RolloutHistory", testRolloutHistory},
		{"RolloutHistoryKeep", testRolloutHistoryKeep},
		{"RolloutCounts", testRolloutCounts},
		{"VersionUse", testVersionUse},
		{"Streams", testStreams},
		{"AssignRoundTrip", testAssignRoundTrip},
		{"AssignRace", testAssignRace},
		{"NarrowWritesRandom", testNarrowWritesRandom},
		{"NarrowWritesService", testNarrowWritesService},
		{"SendWindow", testSendWindow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.run(t, newDB(t)(t))
		})
	}
	t.Run("Reopen", func(t *testing.T) {
		t.Parallel()
		testReopen(t, newDB(t))
	})
	t.Run("NarrowWritesReference", func(t *testing.T) {
		t.Parallel()
		testNarrowWritesReference(t, newDB)
	})
	t.Run("RolloutReopen", func(t *testing.T) {
		t.Parallel()
		testRolloutReopen(t, newDB(t))
	})
}

// base is the suite's fixed "now": not UTC-midnight, with nanoseconds, so
// precision loss shows.
var base = time.Date(2026, 3, 14, 15, 9, 26, 535897932, time.UTC)

// at returns base shifted by d.
func at(d time.Duration) time.Time { return base.Add(d) }

// newAction returns a minimal action of tenant and id in state st, created at
// base+created.
func newAction(tenant, id string, st ledger.State, created time.Duration) *ledger.Action {
	return &ledger.Action{
		Tenant:    tenant,
		ID:        id,
		ToolID:    "refunds.create",
		Version:   "1.0.0",
		State:     st,
		CreatedAt: at(created),
		UpdatedAt: at(created),
	}
}

// insert stores a and fails the test on error.
func insert(t *testing.T, s ledger.Store, a *ledger.Action) *ledger.Action {
	t.Helper()
	if err := s.Insert(t.Context(), a); err != nil {
		t.Fatalf("Insert(%s/%s): %v", a.Tenant, a.ID, err)
	}
	return a
}

// get reads an action and fails the test on error.
func get(t *testing.T, s ledger.Store, tenant, id string) *ledger.Action {
	t.Helper()
	a, err := s.Get(t.Context(), tenant, id)
	if err != nil {
		t.Fatalf("Get(%s/%s): %v", tenant, id, err)
	}
	return a
}

// mustEqual fails the test when got differs from want in any field (see diff).
func mustEqual(t *testing.T, what string, want, got *ledger.Action) {
	t.Helper()
	if d := diff(want, got); len(d) > 0 {
		t.Fatalf("%s: stored action differs:\n%s", what, joinLines(d))
	}
}

func joinLines(ss []string) string {
	var b bytes.Buffer
	for _, s := range ss {
		b.WriteString("  " + s + "\n")
	}
	return b.String()
}

// diff compares two actions field by field, reflectively so that a field added
// to ledger.Action is compared without touching the suite. Times compare as
// instants (time.Equal: location and monotonic reading are not stored); a nil
// and an empty slice are the same; everything else compares exactly.
func diff(want, got *ledger.Action) []string {
	var out []string
	compare("Action", reflect.ValueOf(want), reflect.ValueOf(got), &out)
	return out
}

var timeType = reflect.TypeOf(time.Time{})

func compare(path string, w, g reflect.Value, out *[]string) {
	if w.Type() == timeType {
		wt, gt := w.Interface().(time.Time), g.Interface().(time.Time)
		if !wt.Equal(gt) {
			*out = append(*out, fmt.Sprintf("%s: want %s, got %s", path, wt.Format(time.RFC3339Nano), gt.Format(time.RFC3339Nano)))
		}
		return
	}
	switch w.Kind() {
	case reflect.Pointer:
		if w.IsNil() || g.IsNil() {
			if w.IsNil() != g.IsNil() {
				*out = append(*out, fmt.Sprintf("%s: want nil=%v, got nil=%v", path, w.IsNil(), g.IsNil()))
			}
			return
		}
		compare(path, w.Elem(), g.Elem(), out)
	case reflect.Struct:
		for i := range w.NumField() {
			if !w.Type().Field(i).IsExported() {
				continue
			}
			compare(path+"."+w.Type().Field(i).Name, w.Field(i), g.Field(i), out)
		}
	case reflect.Map:
		if w.Len() != g.Len() {
			*out = append(*out, fmt.Sprintf("%s: want %d entries, got %d", path, w.Len(), g.Len()))
			return
		}
		for _, k := range w.MapKeys() {
			gv := g.MapIndex(k)
			if !gv.IsValid() {
				*out = append(*out, fmt.Sprintf("%s[%v]: missing", path, k))
				continue
			}
			compare(fmt.Sprintf("%s[%v]", path, k), w.MapIndex(k), gv, out)
		}
	case reflect.Slice:
		if w.Type().Elem().Kind() == reflect.Uint8 {
			if !bytes.Equal(w.Bytes(), g.Bytes()) {
				*out = append(*out, fmt.Sprintf("%s: want %q, got %q", path, w.Bytes(), g.Bytes()))
			}
			return
		}
		if w.Len() != g.Len() {
			*out = append(*out, fmt.Sprintf("%s: want %d entries, got %d", path, w.Len(), g.Len()))
			return
		}
		for i := range w.Len() {
			compare(fmt.Sprintf("%s[%d]", path, i), w.Index(i), g.Index(i), out)
		}
	default:
		if !reflect.DeepEqual(w.Interface(), g.Interface()) {
			*out = append(*out, fmt.Sprintf("%s: want %v, got %v", path, w.Interface(), g.Interface()))
		}
	}
}

// wantErr fails the test unless errors.Is(err, target).
func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: got error %v, want %v", what, err, target)
	}
}

// ids returns the ids of as, in order.
func ids(as []*ledger.Action) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.ID
	}
	return out
}

func sameIDs(t *testing.T, what string, got []*ledger.Action, want ...string) {
	t.Helper()
	g := ids(got)
	if len(want) == 0 && len(g) == 0 {
		return
	}
	if !reflect.DeepEqual(g, want) {
		t.Fatalf("%s: got ids %q, want %q", what, g, want)
	}
}
