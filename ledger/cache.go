package ledger

import (
	"container/list"
	"context"
	"sync"
)

// terminalCache keeps recently seen terminal actions in memory, least
// recently used first out, so that replays need no store read. A terminal
// action's result never changes; what can change is only its provider
// evidence (appended through a compare-and-set that re-reads on a stale
// revision) and its existence (retention, which the gateway judges by age
// before it replays). That makes a cached copy safe to replay from.
//
// It also remembers which actions this process claimed and has not yet seen
// end (live): a hint, not a record, that a call for such a key is a
// duplicate and should read the ledger first.
type terminalCache struct {
	mu    sync.Mutex
	max   int
	ll    *list.List // of *cacheEntry, most recent at the front
	items map[string]*list.Element
	live  map[string]struct{}
}

type cacheEntry struct {
	key string
	a   Action
}

func newTerminalCache(max int) *terminalCache {
	return &terminalCache{max: max, ll: list.New(), items: map[string]*list.Element{}, live: map[string]struct{}{}}
}

func (c *terminalCache) get(tenant, id string) (*Action, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[waitKey(tenant, id)]
	if !ok {
		return nil, false
	}
	c.ll.MoveToFront(el)
	a := el.Value.(*cacheEntry).a // a copy: callers may change their action freely
	return &a, true
}

// note records a's state after a read or a write: a terminal action is kept,
// any other is dropped.
func (c *terminalCache) note(a *Action) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := waitKey(a.Tenant, a.ID)
	el, ok := c.items[k]
	if !a.State.Terminal() {
		if ok {
			c.ll.Remove(el)
			delete(c.items, k)
		}
		if len(c.live) >= c.max {
			clear(c.live) // only a hint: forgetting it costs a ledger read or a no-op insert
		}
		c.live[k] = struct{}{}
		return
	}
	delete(c.live, k)
	if ok {
		el.Value.(*cacheEntry).a = *a
		c.ll.MoveToFront(el)
		return
	}
	c.items[k] = c.ll.PushFront(&cacheEntry{key: k, a: *a})
	for c.ll.Len() > c.max {
		old := c.ll.Back()
		c.ll.Remove(old)
		delete(c.items, old.Value.(*cacheEntry).key)
	}
}

func (c *terminalCache) forget(tenant, id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := waitKey(tenant, id)
	if el, ok := c.items[k]; ok {
		c.ll.Remove(el)
		delete(c.items, k)
	}
	delete(c.live, k)
}

// seen returns a cached terminal action, or reports whether the action is
// live in this process.
func (c *terminalCache) seen(tenant, id string) (*Action, bool) {
	if a, ok := c.get(tenant, id); ok {
		return a, true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	_, live := c.live[waitKey(tenant, id)]
	return nil, live
}

func (s *Service) cache() *terminalCache {
	if s.CacheSize < 0 {
		return nil
	}
	s.cacheOnce.Do(func() {
		n := s.CacheSize
		if n == 0 {
			n = 10_000
		}
		s.terminal = newTerminalCache(n)
	})
	return s.terminal
}

// GetForCall is Get for the call path: a terminal action this process has
// seen recently comes from memory, so a replay reads nothing from the store.
// Its provider evidence may lack what other replicas appended since; read
// records for people with Get.
func (s *Service) GetForCall(ctx context.Context, tenant, id string) (*Action, error) {
	c := s.cache()
	if c != nil {
		if a, ok := c.get(tenant, id); ok {
			return a, nil
		}
	}
	a, err := s.Store.Get(ctx, tenant, id)
	if err == nil && c != nil && a.State.Terminal() {
		c.note(a)
	}
	return a, err
}

// Recent answers from memory only: a terminal action this process has seen
// recently (as GetForCall would return it), or known when this process
// claimed the action and has not seen it end. Neither means the key is most
// likely new to the ledger, so the call path can validate and try to insert
// at once (Start finds an existing action anyway) instead of reading first.
// With the cache off, every key is reported known, so callers read first.
func (s *Service) Recent(tenant, id string) (a *Action, known bool) {
	c := s.cache()
	if c == nil {
		return nil, true
	}
	return c.seen(tenant, id)
}

// Delete removes an action at its current revision (a compare-and-set).
func (s *Service) Delete(ctx context.Context, a *Action) error {
	if c := s.cache(); c != nil {
		c.forget(a.Tenant, a.ID)
	}
	return s.Store.Delete(ctx, a.Tenant, a.ID, a.Rev)
}
