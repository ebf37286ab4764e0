package app

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// TestLifecycleStopsInReverse: the parts stop in the reverse order they
// started, every one even when one fails to stop, and a part that failed
// to start is not stopped (it left nothing running).
func TestLifecycleStopsInReverse(t *testing.T) {
	t.Parallel()
	var log []string
	part := func(name string, startErr, stopErr error) Service {
		return Hooks{
			OnStart: func(context.Context) error { log = append(log, "start "+name); return startErr },
			OnStop:  func(context.Context) error { log = append(log, "stop "+name); return stopErr },
		}
	}
	ctx := context.Background()
	var l lifecycle
	for _, p := range []struct {
		name      string
		start, st error
	}{{"a", nil, nil}, {"b", nil, errors.New("b is stuck")}, {"c", nil, nil}, {"d", errors.New("d cannot"), nil}} {
		if err := l.start(ctx, p.name, part(p.name, p.start, p.st)); err != nil && p.name != "d" {
			t.Fatal(err)
		}
	}
	if got := l.names(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("running %v", got)
	}
	err := l.stop(ctx)
	if err == nil || err.Error() != "stop b: b is stuck" {
		t.Fatalf("stop: %v", err)
	}
	want := []string{"start a", "start b", "start c", "start d", "stop c", "stop b", "stop a"}
	if !slices.Equal(log, want) {
		t.Fatalf("order %v, want %v", log, want)
	}
	if err := l.stop(ctx); err != nil || len(log) != len(want) {
		t.Fatalf("a second stop: %v, %v", err, log)
	}
}

// TestWorkerStops: Stop ends the loop's context and returns once the loop
// returned; a worker never started stops at once.
func TestWorkerStops(t *testing.T) {
	t.Parallel()
	if err := (&Worker{}).Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	returned := false
	w := &Worker{Run: func(ctx context.Context) { <-ctx.Done(); returned = true }}
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(context.Background()); err == nil {
		t.Fatal("started twice")
	}
	if err := w.Stop(context.Background()); err != nil || !returned {
		t.Fatalf("stop: %v, loop returned %v", err, returned)
	}
	// A loop that does not return in time: Stop says so when ctx ends.
	stuck := make(chan struct{})
	w = &Worker{Run: func(context.Context) { <-stuck }}
	w.Start(context.Background())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := w.Stop(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("stop of a stuck loop: %v", err)
	}
	close(stuck)
	if err := w.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}
