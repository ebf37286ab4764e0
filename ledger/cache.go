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
type terminalCache struct {
	mu    sync.Mutex
	max   int
	ll    *list.List // of *cacheEntry, most recent at the front
	items map[string]*list.Element
}

type cacheEntry struct {
	key string
	a   Action
}

func newTerminalCache(max int) *terminalCache {
	return &terminalCache{max: max, ll: list.New(), items: map[string]*list.Element{}}
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
		return
	}
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

// Delete removes an action at its current revision (a compare-and-set).
func (s *Service) Delete(ctx context.Context, a *Action) error {
	if c := s.cache(); c != nil {
		c.forget(a.Tenant, a.ID)
	}
	return s.Store.Delete(ctx, a.Tenant, a.ID, a.Rev)
}
