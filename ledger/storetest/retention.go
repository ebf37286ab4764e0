package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/toolgate/toolgate/ledger"
)

// withPayload gives a a result, arguments and provider evidence to purge.
func withPayload(a *ledger.Action) *ledger.Action {
	a.ArgsDigest = "sha256:00"
	a.Arguments = []byte(`{"amount_minor":1}`)
	a.Result = &ledger.Result{StatusCode: 201, ContentType: "application/json", Body: []byte(`{"refund_id":"re_1"}`)}
	a.ProviderCalls = []ledger.ProviderCall{{Name: "openai", CallID: "call_1", At: a.CreatedAt}}
	a.History = []ledger.Transition{{To: a.State, Reason: "test", By: "gateway", At: a.CreatedAt}}
	return a
}

// testPurge: terminal actions created before the cutoff lose their payloads and
// keep the rest; others are untouched; a second purge finds nothing new.
func testPurge(t *testing.T, s ledger.Store) {
	old := []*ledger.Action{
		insert(t, s, withPayload(newAction("t1", "old-succeeded", ledger.Succeeded, 0))),
		insert(t, s, withPayload(newAction("t2", "old-rejected", ledger.Rejected, time.Second))),
	}
	keep := []*ledger.Action{
		insert(t, s, withPayload(newAction("t1", "new-succeeded", ledger.Succeeded, time.Hour))),
		insert(t, s, withPayload(newAction("t1", "old-unknown", ledger.Unknown, 0))),
		insert(t, s, withPayload(newAction("t1", "old-pending", ledger.Pending, 0))),
	}
	n, err := s.Purge(t.Context(), at(time.Minute), 10)
	if err != nil || n != 2 {
		t.Fatalf("Purge = %d, %v; want 2", n, err)
	}
	for _, a := range old {
		got := get(t, s, a.Tenant, a.ID)
		if got.Arguments != nil || len(got.ProviderCalls) != 0 || got.Result == nil || len(got.Result.Body) != 0 {
			t.Errorf("%s: payload kept after purge: args %q, calls %v, result %+v", a.ID, got.Arguments, got.ProviderCalls, got.Result)
		}
		if got.Result != nil && got.Result.StatusCode != 201 || got.State != a.State || got.ArgsDigest != a.ArgsDigest || len(got.History) != 1 {
			t.Errorf("%s: tombstone lost its key data: %+v", a.ID, got)
		}
		if got.Rev != a.Rev+1 {
			t.Errorf("%s: rev %d after purge, want %d", a.ID, got.Rev, a.Rev+1)
		}
	}
	for _, a := range keep {
		mustEqual(t, a.ID, a, get(t, s, a.Tenant, a.ID))
	}
	if n, err := s.Purge(t.Context(), at(time.Minute), 10); err != nil || n != 0 {
		t.Fatalf("second Purge = %d, %v; want 0", n, err)
	}
}

// testPurgeBatches: the limit bounds each call.
func testPurgeBatches(t *testing.T, s ledger.Store) {
	for i := 0; i < 7; i++ {
		insert(t, s, withPayload(newAction("t1", "a"+string(rune('0'+i)), ledger.Succeeded, time.Duration(i)*time.Second)))
	}
	total := 0
	for calls := 0; calls < 10; calls++ {
		n, err := s.Purge(t.Context(), at(time.Hour), 3)
		if err != nil || n > 3 {
			t.Fatalf("Purge = %d, %v", n, err)
		}
		if n == 0 {
			break
		}
		total += n
	}
	if total != 7 {
		t.Fatalf("purged %d in batches, want 7", total)
	}
}

// testForget: terminal actions created before the cutoff are deleted, in batches.
func testForget(t *testing.T, s ledger.Store) {
	insert(t, s, withPayload(newAction("t1", "old-1", ledger.Succeeded, 0)))
	insert(t, s, withPayload(newAction("t2", "old-2", ledger.Rejected, 0)))
	insert(t, s, withPayload(newAction("t1", "old-3", ledger.Succeeded, 0)))
	insert(t, s, withPayload(newAction("t1", "old-unknown", ledger.Unknown, 0)))
	insert(t, s, withPayload(newAction("t1", "new-1", ledger.Succeeded, time.Hour)))
	if n, err := s.Forget(t.Context(), at(time.Minute), 2); err != nil || n != 2 {
		t.Fatalf("Forget = %d, %v; want 2", n, err)
	}
	if n, err := s.Forget(t.Context(), at(time.Minute), 2); err != nil || n != 1 {
		t.Fatalf("second Forget = %d, %v; want 1", n, err)
	}
	for _, id := range []string{"old-1", "old-3"} {
		if _, err := s.Get(t.Context(), "t1", id); !errors.Is(err, ledger.ErrNotFound) {
			t.Errorf("%s still there: %v", id, err)
		}
	}
	get(t, s, "t1", "old-unknown")
	get(t, s, "t1", "new-1")
}

// testDelete: a compare-and-set delete.
func testDelete(t *testing.T, s ledger.Store) {
	a := insert(t, s, newAction("t1", "del-1", ledger.Succeeded, 0))
	wantErr(t, "Delete stale", s.Delete(t.Context(), "t1", "del-1", a.Rev+1), ledger.ErrStale)
	if err := s.Delete(t.Context(), "t1", "del-1", a.Rev); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	wantErr(t, "Delete gone", s.Delete(t.Context(), "t1", "del-1", a.Rev), ledger.ErrNotFound)
	if _, err := s.Get(t.Context(), "t1", "del-1"); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("Get after Delete: %v", err)
	}
	// The id is free again.
	insert(t, s, newAction("t1", "del-1", ledger.Pending, time.Second))
}
