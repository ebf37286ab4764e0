package ledger

import (
	"context"
	"errors"
)

// CompletionListener is a Store that hears, from every process on its
// database, that an action left running (PostgreSQL's LISTEN/NOTIFY).
type CompletionListener interface {
	// ListenCompletions calls fn for every action that leaves running, on
	// any process, until ctx ends; then it returns nil. An empty id means
	// wake-ups may have been missed (the listening connection was lost and
	// is back): every waiter should read its action again. It returns an
	// error only when it cannot listen at all (then waiters poll).
	ListenCompletions(ctx context.Context, fn func(tenant, id string)) error
}

// Wakeups is the background worker that wakes this process's joins (Wait)
// when the action they wait for leaves running on another process, so a
// join on one replica of an action another replica finished returns at
// once instead of at its next poll. A wake-up is a hint: Wait reads the
// action again and keeps polling, so lost wake-ups (the listening
// connection dropped) cost only the poll interval. A store that does not
// hear other processes (SQLite: one process per database) needs no worker:
// Run returns at once.
type Wakeups struct {
	Service *Service
	// Errorf, if set, hears why the store cannot listen (joins then poll).
	Errorf func(format string, args ...any)
}

// Run wakes joins until ctx ends.
func (w *Wakeups) Run(ctx context.Context) {
	l, ok := w.Service.Store.(CompletionListener)
	if !ok {
		return
	}
	err := l.ListenCompletions(ctx, func(tenant, id string) {
		if id == "" {
			w.Service.wakeAll()
			return
		}
		w.Service.wake(tenant, id)
	})
	if err != nil && !errors.Is(err, context.Canceled) && w.Errorf != nil {
		w.Errorf("ledger: joins hear of other replicas' completions by polling only: %v", err)
	}
}

// wakeAll wakes every waiter: wake-ups may have been missed.
func (s *Service) wakeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, e := range s.waiters {
		close(e.ch)
		delete(s.waiters, k)
	}
}
