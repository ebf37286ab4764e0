package storetest

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/toolgate/toolgate/ledger"
)

// testStreams: a stream's events come back in order after any index, with
// who opened it; closing marks it done; an unknown stream is ErrNotFound;
// pruning removes old streams and their events, and only those.
func testStreams(t *testing.T, s ledger.Store) {
	ss, ok := s.(ledger.StreamStore)
	if !ok {
		t.Fatalf("%T does not keep MCP streams (ledger.StreamStore)", s)
	}
	ctx := context.Background()
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	open := func(id string, at time.Time) {
		t.Helper()
		if err := ss.OpenStream(ctx, ledger.StreamInfo{ID: id, Tenant: "acme", Principal: "cs-agent", Created: at}); err != nil {
			t.Fatal(err)
		}
	}
	open("old-stream", t0)
	open("new-stream", t0.Add(time.Hour))
	msgs := [][]byte{[]byte(`{"jsonrpc":"2.0","method":"notifications/progress"}`), []byte(`{"jsonrpc":"2.0","id":7,"result":{"content":[]}}`)}
	for i, m := range msgs {
		for _, id := range []string{"old-stream", "new-stream"} {
			if err := ss.AppendStreamEvent(ctx, id, i+1, m); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := ss.AppendStreamEvent(ctx, "new-stream", 1, msgs[0]); err == nil {
		t.Error("an event index stored twice")
	}
	info, evs, err := ss.StreamEvents(ctx, "new-stream", 0)
	if err != nil {
		t.Fatal(err)
	}
	if info.Tenant != "acme" || info.Principal != "cs-agent" || !info.Created.Equal(t0.Add(time.Hour)) || info.Done {
		t.Errorf("stream record %+v", info)
	}
	if len(evs) != 2 || evs[0].Index != 1 || evs[1].Index != 2 || !bytes.Equal(evs[1].Data, msgs[1]) {
		t.Fatalf("events %+v", evs)
	}
	if _, evs, _ := ss.StreamEvents(ctx, "new-stream", 1); len(evs) != 1 || evs[0].Index != 2 {
		t.Errorf("events after 1: %+v", evs)
	}
	if _, evs, _ := ss.StreamEvents(ctx, "new-stream", 2); len(evs) != 0 {
		t.Errorf("events after the last: %+v", evs)
	}
	if err := ss.CloseStream(ctx, "new-stream"); err != nil {
		t.Fatal(err)
	}
	if info, _, _ := ss.StreamEvents(ctx, "new-stream", 2); !info.Done {
		t.Error("a closed stream is not done")
	}
	if _, _, err := ss.StreamEvents(ctx, "no-such-stream", 0); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("unknown stream: %v, want ErrNotFound", err)
	}
	// Usage counts the streams opened since a time and their events'
	// bytes, of one key and in all.
	open("other-key", t0.Add(time.Hour))
	if err := ss.AppendStreamEvent(ctx, "other-key", 1, []byte("12345")); err != nil {
		t.Fatal(err)
	}
	per := int64(len(msgs[0]) + len(msgs[1]))
	for _, tc := range []struct {
		name        string
		tenant, who string
		since       time.Time
		want        ledger.StreamUsage
	}{
		{"all", "acme", "cs-agent", t0, ledger.StreamUsage{KeyStreams: 3, Streams: 3, KeyBytes: 2*per + 5, Bytes: 2*per + 5}},
		{"recent", "acme", "cs-agent", t0.Add(time.Minute), ledger.StreamUsage{KeyStreams: 2, Streams: 2, KeyBytes: per + 5, Bytes: per + 5}},
		{"another key", "acme", "nobody", t0, ledger.StreamUsage{Streams: 3, Bytes: 2*per + 5}},
		{"another tenant", "globex", "cs-agent", t0, ledger.StreamUsage{Streams: 3, Bytes: 2*per + 5}},
		{"none recent", "acme", "cs-agent", t0.Add(2 * time.Hour), ledger.StreamUsage{}},
	} {
		u, err := ss.StreamUsage(ctx, tc.tenant, tc.who, tc.since)
		if err != nil || u != tc.want {
			t.Errorf("usage %s: %+v, %v; want %+v", tc.name, u, err, tc.want)
		}
	}
	if _, err := ss.PruneStreams(ctx, t0.Add(time.Hour).Add(time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	open("old-stream", t0)
	for i, m := range msgs {
		if err := ss.AppendStreamEvent(ctx, "old-stream", i+1, m); err != nil {
			t.Fatal(err)
		}
	}
	open("new-stream", t0.Add(time.Hour))
	for i, m := range msgs {
		if err := ss.AppendStreamEvent(ctx, "new-stream", i+1, m); err != nil {
			t.Fatal(err)
		}
	}
	n, err := ss.PruneStreams(ctx, t0.Add(30*time.Minute))
	if err != nil || n != 1 {
		t.Fatalf("prune: %d, %v; want 1", n, err)
	}
	if _, _, err := ss.StreamEvents(ctx, "old-stream", 0); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("a pruned stream: %v", err)
	}
	if _, evs, err := ss.StreamEvents(ctx, "new-stream", 0); err != nil || len(evs) != 2 {
		t.Errorf("the stream pruning kept: %d events, %v", len(evs), err)
	}
	// A pruned stream's events are gone too: its id can be used again.
	open("old-stream", t0.Add(2*time.Hour))
	if _, evs, err := ss.StreamEvents(ctx, "old-stream", 0); err != nil || len(evs) != 0 {
		t.Errorf("a re-opened pruned stream has %d events, %v", len(evs), err)
	}
}
