package decisionlog

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
)

// An over-large payload is logged by its digest: the line keeps result_hash
// (and input_hash) and lists the payload as erased.
func TestOverLargePayloadsAreLoggedByDigest(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	w := NewWriter(WriterSink(&out), Config{Mode: ModeFull})
	body := []byte(`{"blob":"` + strings.Repeat("x", 1<<20) + `"}`)
	args := json.RawMessage(`{"note":"` + strings.Repeat("y", 100<<10) + `"}`)
	rec := Record{ToolID: "t", Outcome: OutcomeExecuted, InputHash: "sha256:aa", Arguments: args, Result: body,
		StateBefore: body, StateAfter: json.RawMessage(`{"ok":true}`), Erased: make([]string, 0, 8)}
	if !w.Log(rec, nil) {
		t.Fatal("refused")
	}
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if out.Len() > 8<<10 {
		t.Fatalf("a %d-byte line", out.Len())
	}
	var line map[string]any
	if err := json.Unmarshal(out.Bytes(), &line); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(body)
	if line["result_hash"] != "sha256:"+hex.EncodeToString(sum[:]) || line["result"] != nil || line["arguments"] != nil ||
		line["state_before"] != nil || line["input_hash"] != "sha256:aa" {
		t.Fatalf("line %s", out.Bytes())
	}
	erased := strings.Join(toStrings(line["erased"]), ",")
	if erased != "/arguments,/result,/state_before" || line["state_after"] == nil {
		t.Fatalf("erased %q; line %s", erased, out.Bytes())
	}
	if len(rec.Erased) != 0 {
		t.Fatal("Log appended into the caller's array")
	}
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

// The queue is bounded in bytes, not only in records: records wait while the
// sink is slow only up to QueueBytes, the rest are dropped and counted.
func TestQueueIsBoundedInBytes(t *testing.T) {
	t.Parallel()
	sink := &gateSink{release: make(chan struct{})}
	w := NewWriter(sink, Config{Mode: ModeFull})
	result := []byte(`"` + strings.Repeat("z", 60<<10) + `"`) // under the payload bound
	accepted := 0
	const n = 1000 // 60 MB of results
	for range n {
		if w.Log(Record{ToolID: "t", Outcome: OutcomeExecuted, Result: result}, nil) {
			accepted++
		}
	}
	if max := int(DefaultQueueBytes/int64(len(result))) + 2; accepted > max {
		t.Fatalf("%d records of %d bytes queued, more than %d bytes hold", accepted, len(result), DefaultQueueBytes)
	}
	if st := w.Stats(); st.DroppedFull != uint64(n-accepted) || accepted == 0 {
		t.Fatalf("accepted %d, stats %+v", accepted, st)
	}
	close(sink.release)
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if w.QueuedBytes() != 0 {
		t.Fatalf("%d bytes still counted as queued", w.QueuedBytes())
	}
}
