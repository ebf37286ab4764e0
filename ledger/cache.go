package ledger

import (
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
//
// It is bounded by entries (max) and by bytes (maxBytes, as actionBytes
// counts them); an action larger than maxEntry is not kept at all, so a
// replay of it reads the store.
type terminalCache struct {
	mu       sync.Mutex
	max      int
	maxBytes int64
	maxEntry int64
	bytes    int64 // actionBytes of the entries
	n        int   // entries
	// head is the most recently used entry, tail the least; the entries
	// are linked through their own fields, so keeping one is one
	// allocation.
	head, tail *cacheEntry
	items      map[actionKey]*cacheEntry
	live       map[actionKey]struct{}
}

type cacheEntry struct {
	key        actionKey
	a          Action
	size       int64
	prev, next *cacheEntry // towards head, towards tail
}

func newTerminalCache(max int, maxBytes, maxEntry int64) *terminalCache {
	return &terminalCache{max: max, maxBytes: maxBytes, maxEntry: min(maxEntry, maxBytes),
		items: map[actionKey]*cacheEntry{}, live: map[actionKey]struct{}{}}
}

// unlink takes e out of the recency list.
func (c *terminalCache) unlink(e *cacheEntry) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		c.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		c.tail = e.prev
	}
	e.prev, e.next = nil, nil
}

// pushFront makes e the most recently used entry.
func (c *terminalCache) pushFront(e *cacheEntry) {
	e.prev, e.next = nil, c.head
	if c.head != nil {
		c.head.prev = e
	} else {
		c.tail = e
	}
	c.head = e
}

// actionBytes estimates the memory a cached action holds: its payloads,
// its lists and a fixed share for the rest of the record.
func actionBytes(a *Action) int64 {
	n := int64(512 + len(a.Arguments) + len(a.ID) + len(a.Tenant) + len(a.ToolID) + len(a.ArgsDigest) +
		len(a.CorrelationID) + len(a.Scope) + len(a.PolicyVersion))
	if a.Result != nil {
		n += int64(len(a.Result.Body) + len(a.Result.ContentType))
	}
	for _, h := range a.History {
		n += int64(64 + len(h.Reason) + len(h.By))
		if ch := h.Assignment; ch != nil {
			n += int64(32 + len(ch.Assignee) + len(ch.Previous) + len(ch.Note))
		}
	}
	for _, pc := range a.ProviderCalls {
		n += int64(48 + len(pc.Name) + len(pc.Route) + len(pc.CallID))
	}
	return n
}

func (c *terminalCache) remove(e *cacheEntry) {
	c.unlink(e)
	delete(c.items, e.key)
	c.bytes -= e.size
	c.n--
}

func (c *terminalCache) get(tenant, id string) (*Action, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[actionKey{tenant, id}]
	if !ok {
		return nil, false
	}
	c.unlink(e)
	c.pushFront(e)
	a := e.a // a copy: callers may change their action freely
	return &a, true
}

// note records a's state after a read or a write: a terminal action is kept,
// any other is dropped.
func (c *terminalCache) note(a *Action) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := actionKey{a.Tenant, a.ID}
	e, ok := c.items[k]
	if !a.State.Terminal() {
		if ok {
			c.remove(e)
		}
		if len(c.live) >= c.max {
			clear(c.live) // only a hint: forgetting it costs a ledger read or a no-op insert
		}
		c.live[k] = struct{}{}
		return
	}
	delete(c.live, k)
	size := actionBytes(a)
	if ok {
		c.remove(e)
	}
	if size > c.maxEntry {
		return // too large to keep: its replays read the store
	}
	e = &cacheEntry{key: k, a: *a, size: size}
	c.pushFront(e)
	c.items[k] = e
	c.bytes += size
	c.n++
	for c.n > c.max || c.bytes > c.maxBytes {
		c.remove(c.tail)
	}
}

func (c *terminalCache) forget(tenant, id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := actionKey{tenant, id}
	if e, ok := c.items[k]; ok {
		c.remove(e)
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
	_, live := c.live[actionKey{tenant, id}]
	return nil, live
}

func (s *Service) cache() *terminalCache {
	if s.CacheSize < 0 {
		return nil
	}
	s.cacheOnce.Do(func() {
		n := s.CacheSize
		if n == 0 {
			n = DefaultCacheSize
		}
		b, e := s.CacheBytes, s.CacheEntryBytes
		if b <= 0 {
			b = DefaultCacheBytes
		}
		if e <= 0 {
			e = DefaultCacheEntryBytes
		}
		s.terminal = newTerminalCache(n, b, e)
	})
	return s.terminal
}

// CachedBytes is how many bytes the replay cache holds now (as it counts
// them against CacheBytes); 0 with the cache off.
func (s *Service) CachedBytes() int64 {
	c := s.cache()
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes
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
