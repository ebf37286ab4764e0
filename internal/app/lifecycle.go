package app

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Service is the one shape of every part of a running gateway that has a
// lifetime: the store, the decision log, tracing, the upstream sessions,
// the call service, each background worker and the HTTP server. Start
// returns once the part runs (or, failing, with nothing of it left
// running); Stop returns once it and every goroutine it started are gone,
// or with an error when ctx ends first. The App starts its parts in order
// and stops them in reverse.
type Service interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
}

// Worker is a Service of a loop that runs until its context ends (the
// reconciler, the cleaners, the watchers): Start runs it on its own
// goroutine, Stop ends its context and waits for it to return.
type Worker struct {
	Run func(ctx context.Context)

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// Start runs w.Run on a goroutine of its own. The loop's context is not
// Start's: it ends at Stop.
func (w *Worker) Start(context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done != nil {
		return errors.New("app: worker started twice")
	}
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel, w.done = cancel, make(chan struct{})
	go func() {
		defer close(w.done)
		w.Run(ctx)
	}()
	return nil
}

// Stop ends the loop's context and waits until it returned or ctx ends.
func (w *Worker) Stop(ctx context.Context) error {
	w.mu.Lock()
	cancel, done := w.cancel, w.done
	w.mu.Unlock()
	if done == nil {
		return nil
	}
	cancel()
	select {
	case <-done:
		return nil
	default:
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Hooks is a Service of two functions; either may be nil.
type Hooks struct {
	OnStart func(ctx context.Context) error
	OnStop  func(ctx context.Context) error
}

func (h Hooks) Start(ctx context.Context) error {
	if h.OnStart == nil {
		return nil
	}
	return h.OnStart(ctx)
}

func (h Hooks) Stop(ctx context.Context) error {
	if h.OnStop == nil {
		return nil
	}
	return h.OnStop(ctx)
}

// step is a started Service and its name, for Stop's errors.
type step struct {
	name string
	svc  Service
}

// lifecycle is the Services started so far, in order.
type lifecycle struct {
	started []step
}

// start starts svc and, once it runs, adds it to what stop stops.
func (l *lifecycle) start(ctx context.Context, name string, svc Service) error {
	if err := svc.Start(ctx); err != nil {
		return err
	}
	l.started = append(l.started, step{name, svc})
	return nil
}

// stop stops every started Service in reverse order, each even when one
// before it failed, and returns what failed.
func (l *lifecycle) stop(ctx context.Context) error {
	var errs []error
	for i := len(l.started) - 1; i >= 0; i-- {
		s := l.started[i]
		if err := s.svc.Stop(ctx); err != nil {
			errs = append(errs, fmt.Errorf("stop %s: %w", s.name, err))
		}
	}
	l.started = nil
	return errors.Join(errs...)
}

// names are the started Services' names, in order.
func (l *lifecycle) names() []string {
	out := make([]string, len(l.started))
	for i, s := range l.started {
		out[i] = s.name
	}
	return out
}
