package ledger_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/toolgate/toolgate/ledger"
)

// finishWith starts an action and finishes it with a result body of n bytes.
func finishWith(t *testing.T, s *ledger.Service, id string, n int) *ledger.Action {
	t.Helper()
	a := start(t, s, id, false)
	if err := s.Finish(ctx, a, ledger.Answered, &ledger.Result{StatusCode: 200, Body: bytes.Repeat([]byte("x"), n)}, "ok"); err != nil {
		t.Fatal(err)
	}
	return a
}

// cached reports whether GetForCall answers id from memory: the store's copy
// is changed behind the service's back first, so only a cached copy lacks it.
func cached(t *testing.T, s *ledger.Service, id string) bool {
	t.Helper()
	x, err := s.Store.Get(ctx, "acme", id)
	if err != nil {
		t.Fatal(err)
	}
	x.ProviderCalls = append(x.ProviderCalls, ledger.ProviderCall{CallID: "behind-the-back-" + fmt.Sprint(x.Rev)})
	if err := s.Store.Update(ctx, x); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetForCall(ctx, "acme", id)
	if err != nil {
		t.Fatal(err)
	}
	return len(got.ProviderCalls) < len(x.ProviderCalls)
}

// The replay cache is bounded in bytes as well as entries, and an action
// too large for it is served from the store.
func TestCacheIsBoundedInBytes(t *testing.T) {
	t.Parallel()
	s, _ := setup(t)
	s.CacheBytes, s.CacheEntryBytes = 100<<10, 40<<10
	big := finishWith(t, s, "bytes-big-0001", 50<<10) // over the entry bound
	if cached(t, s, big.ID) {
		t.Fatal("an action over CacheEntryBytes was cached")
	}
	var ids []string
	for i := range 4 { // 4 × 30 KiB > 100 KiB: the oldest falls out
		ids = append(ids, finishWith(t, s, fmt.Sprintf("bytes-%04d", i), 30<<10).ID)
	}
	if cached(t, s, ids[0]) {
		t.Fatal("the cache holds more bytes than CacheBytes")
	}
	if !cached(t, s, ids[3]) {
		t.Fatal("the newest action is not cached")
	}
	if n := s.CachedBytes(); n > 100<<10 || n < 60<<10 {
		t.Fatalf("the cache holds %d bytes", n)
	}
}
