package decisionlog

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// typicalMasker is a refund tool's masker: two sensitive arguments, one
// sensitive result field, the result's pointers reused for the state probe.
func typicalMasker(tb testing.TB) *Masker {
	tb.Helper()
	m, err := NewMasker(MaskerConfig{
		Arguments: append(MaskRules("/customer_email"), EraseRules("/payment/card_number")...),
		Result:    MaskRules("/customer_email"),
		State:     MaskRules("/customer_email"),
	})
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

const secret = "alice.secret@example.com"

func typicalRecord(i int) Record {
	rec := Record{
		Timestamp:         time.Date(2026, 11, 30, 1, 2, 3, 456789000, time.UTC),
		DecisionID:        fmt.Sprintf("dec-%06d", i),
		CorrelationID:     "corr-1",
		TraceID:           "4bf92f3577b34da6a3ce929d0e0e4736",
		SpanID:            "00f067aa0ba902b7",
		Tenant:            "acme",
		Principal:         "cs-agent",
		ActionID:          "refund-0001",
		ToolID:            "refund.create_request",
		ToolVersion:       "2.1.0",
		IdempotencyKey:    "refund-0001",
		InputHash:         "sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae",
		Outcome:           OutcomeExecuted,
		StatusCode:        201,
		ActionStateBefore: "pending",
		ActionStateAfter:  "succeeded",
		Attempt:           1,
		Provider:          &Provider{Name: "openai", Route: "primary", CallID: "call_abc"},
		StateBefore:       json.RawMessage(`{"order_id":"ord_12345678","status":"paid","customer_email":"` + secret + `"}`),
		StateAfter:        json.RawMessage(`{"order_id":"ord_12345678","status":"refund_pending","customer_email":"` + secret + `"}`),
		Arguments: json.RawMessage(`{"order_id":"ord_12345678","reason_code":"customer_request","amount_minor":1999,` +
			`"customer_email":"` + secret + `","payment":{"card_number":"4111111111111111","brand":"visa"}}`),
		Result: json.RawMessage(`{"refund_id":"rf_1","status":"pending_review","customer_email":"` + secret + `"}`),
	}
	rec.SetDuration(12345 * time.Microsecond)
	return rec
}

func TestEncodeGolden(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		mode ArgumentsMode
	}{
		{name: "masked", mode: ModeMasked},
		{name: "digest", mode: ModeDigest},
		{name: "full", mode: ModeFull},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			line, err := Encode(typicalRecord(1), typicalMasker(t), tt.mode)
			if err != nil {
				t.Fatal(err)
			}
			var indented bytes.Buffer
			if err := json.Indent(&indented, line, "", "  "); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "record_"+tt.name+".golden")
			if *update {
				if err := os.WriteFile(golden, indented.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update)", err)
			}
			if !bytes.Equal(indented.Bytes(), want) {
				t.Errorf("record differs from %s:\n%s", golden, indented.Bytes())
			}
			if bytes.Count(line, []byte("\n")) != 1 || line[len(line)-1] != '\n' {
				t.Errorf("not one line: %q", line)
			}
			if tt.mode != ModeFull && bytes.Contains(line, []byte(secret)) {
				t.Errorf("secret in %s line: %s", tt.name, line)
			}
		})
	}
}

func TestEncodeWritesEverySpecField(t *testing.T) {
	t.Parallel()
	line, err := Encode(Record{}, nil, ModeMasked)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]json.RawMessage
	if err := json.Unmarshal(line, &got); err != nil {
		t.Fatal(err)
	}
	for _, f := range strings.Split("record_version timestamp decision_id correlation_id trace_id span_id "+
		"action_id tool_id tool_version idempotency_key input_hash outcome status_code state_before "+
		"state_after action_state_before action_state_after attempt duration_ms provider principal "+
		"error_class arguments erased masked", " ") {
		if _, ok := got[f]; !ok {
			t.Errorf("field %s missing from %s", f, line)
		}
	}
	if string(got["erased"]) != "[]" || string(got["masked"]) != "[]" || string(got["state_before"]) != "null" {
		t.Errorf("empty lists and absent bodies: %s", line)
	}
}

// readLines reads a decision log file and decodes every line.
func readLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%s: line %q: %v", path, sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

func TestSensitiveValueNeverReachesTheFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "decisions.jsonl")
	sink, err := OpenFile(FileConfig{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	var drops atomic.Int64
	w := NewWriter(sink, Config{OnDrop: func(DropReason) { drops.Add(1) }})
	m := typicalMasker(t)
	for i := range 10 {
		w.Log(typicalRecord(i), m)
	}
	bad := typicalRecord(99) // arguments cut short: cannot be masked, must not be written raw
	bad.Arguments = json.RawMessage(`{"customer_email":"` + secret + `"`)
	w.Log(bad, m)
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, leak := range []string{secret, "4111111111111111"} {
		if bytes.Contains(b, []byte(leak)) {
			t.Fatalf("%q reached the file:\n%s", leak, b)
		}
	}
	lines := readLines(t, path)
	if len(lines) != 10 {
		t.Fatalf("%d lines, want 10", len(lines))
	}
	if got := fmt.Sprint(lines[0]["masked"], lines[0]["erased"]); got !=
		"[/arguments/customer_email /result/customer_email /state_after/customer_email /state_before/customer_email] [/arguments/payment/card_number]" {
		t.Errorf("masked, erased = %s", got)
	}
	st := w.Stats()
	if st.Written != 10 || st.DroppedUnmasked != 1 || w.Dropped() != 1 || drops.Load() != 1 {
		t.Errorf("stats %+v, OnDrop called %d times; want 10 written, 1 unmaskable", st, drops.Load())
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode %v, want 0600", fi.Mode().Perm())
	}
}

// gateSink blocks every WriteLine until release is closed.
type gateSink struct {
	release chan struct{}
	mu      sync.Mutex
	lines   int
}

func (s *gateSink) WriteLine([]byte) error {
	<-s.release
	s.mu.Lock()
	s.lines++
	s.mu.Unlock()
	return nil
}
func (s *gateSink) Flush() error { return nil }
func (s *gateSink) Close() error { return nil }

func TestFullBufferDropsAndCounts(t *testing.T) {
	t.Parallel()
	sink := &gateSink{release: make(chan struct{})}
	var hook atomic.Int64
	w := NewWriter(sink, Config{BufferSize: 4, OnDrop: func(r DropReason) {
		if r == DropBufferFull {
			hook.Add(1)
		}
	}})
	const n = 100
	refused := 0
	start := time.Now()
	for i := range n {
		if !w.Log(typicalRecord(i), nil) {
			refused++
		}
	}
	if time.Since(start) > 5*time.Second { // a generous sanity bound, not a timing assertion
		t.Fatalf("Log blocked")
	}
	// At most BufferSize records wait in the channel and one is in the blocked sink.
	if refused < n-5 {
		t.Fatalf("%d of %d refused, want at least %d", refused, n, n-5)
	}
	if got := w.Stats().DroppedFull; got != uint64(refused) || hook.Load() != int64(refused) || w.Dropped() != uint64(refused) {
		t.Fatalf("DroppedFull %d, hook %d, Dropped %d; want %d", got, hook.Load(), w.Dropped(), refused)
	}
	close(sink.release)
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := w.Stats()
	if st.Written+st.Dropped() != n || int(st.Written) != sink.lines {
		t.Errorf("stats %+v, sink got %d lines: written + dropped must be %d", st, sink.lines, n)
	}
}

func TestCloseAfterContextEndsCountsTheRest(t *testing.T) {
	t.Parallel()
	sink := &gateSink{release: make(chan struct{})}
	w := NewWriter(sink, Config{BufferSize: 64})
	for i := range 10 {
		w.Log(typicalRecord(i), nil)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	go func() { // let the blocked sink go only once Close has given up
		for !w.stopped() {
			runtime.Gosched()
		}
		close(sink.release)
	}()
	if err := w.Close(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Close = %v, want context.Canceled", err)
	}
	st := w.Stats()
	if st.Written+st.Dropped() != 10 || st.DroppedClosed == 0 {
		t.Errorf("stats %+v: want 10 accounted for, some dropped as closed", st)
	}
	if w.Log(typicalRecord(11), nil) {
		t.Error("Log after Close accepted a record")
	}
	if w.Stats().DroppedClosed != st.DroppedClosed+1 {
		t.Error("Log after Close not counted")
	}
	if err := w.Close(context.Background()); err != nil {
		t.Errorf("second Close = %v", err)
	}
}

// failSink fails every Flush.
type failSink struct{}

func (failSink) WriteLine([]byte) error { return nil }
func (failSink) Flush() error           { return errors.New("disk full") }
func (failSink) Close() error           { return nil }

func TestWriteFailuresAreCounted(t *testing.T) {
	t.Parallel()
	var reported atomic.Int64
	w := NewWriter(failSink{}, Config{OnError: func(error) { reported.Add(1) }})
	for i := range 5 {
		w.Log(typicalRecord(i), nil)
	}
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := w.Stats(); st.DroppedWrite != 5 || st.Written != 0 || reported.Load() == 0 {
		t.Errorf("stats %+v, %d errors reported; want 5 write drops", st, reported.Load())
	}
}

func TestWriterSink(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	w := NewWriter(WriterSink(&buf), Config{Mode: ModeDigest, Now: func() time.Time { return time.Unix(0, 0) }})
	rec := typicalRecord(1)
	rec.Timestamp, rec.DecisionID = time.Time{}, ""
	w.Log(rec, typicalMasker(t))
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	var got Record
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if !got.Timestamp.Equal(time.Unix(0, 0)) || len(got.DecisionID) != 36 || string(got.Arguments) != "null" || got.RecordVersion != 1 {
		t.Errorf("got %+v: want the injected clock, a generated decision_id, no arguments", got)
	}
}
