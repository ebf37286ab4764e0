package gateway_test

import (
	"fmt"
	"strings"
	"testing"
)

// Provider evidence is bounded: an action keeps its first 20 provider calls
// and counts the rest, and every evidence field keeps at most 255 bytes.
func TestProviderEvidenceIsBounded(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t)
	g := newRig(t, withLimitTools(t, rec))
	const replays = 60
	for i := range replays + 1 {
		id := fmt.Sprintf("call_%03d_%s", i, strings.Repeat("x", 100<<10))
		body := `{"arguments":{"account":"acc-1"},"provider":{"name":"openai","route":"` + strings.Repeat("r", 300) + `","call_id":"` + id + `"}}`
		if r := g.do("POST", "/v1/tools/"+transferTool+"/calls", body, "Idempotency-Key", "evidence-key-01"); r.status != 200 {
			t.Fatalf("call %d: %d %s", i, r.status, r.body)
		}
	}
	r := g.do("GET", "/v1/actions/evidence-key-01", "")
	a := r.json(t)
	calls := a["provider_calls"].([]any)
	if len(calls) != 20 || a["provider_calls_omitted"] != float64(replays+1-20) {
		t.Fatalf("%d provider calls kept, %v omitted", len(calls), a["provider_calls_omitted"])
	}
	for i, c := range calls {
		m := c.(map[string]any)
		id, route := m["call_id"].(string), m["route"].(string)
		if len(id) != 255 || !strings.HasPrefix(id, fmt.Sprintf("call_%03d_", i)) || len(route) != 255 {
			t.Fatalf("call %d kept with call_id of %d bytes, route of %d", i, len(id), len(route))
		}
	}
	if len(r.body) > 64<<10 {
		t.Fatalf("the action record is %d bytes", len(r.body))
	}
	if n := len(rec.calls()); n != 1 {
		t.Fatalf("%d downstream calls", n)
	}
}
