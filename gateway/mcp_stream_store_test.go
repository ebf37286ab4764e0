package gateway_test

import (
	"bufio"
	"context"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/gateway/gatewaytest"
	"github.com/toolgate/toolgate/ledger"
)

// mcpSSECall posts one tools/call asking for server-sent events and returns
// the stream as the client read it, and the stream id of its priming event
// ("" when it had none).
func (g *rig) mcpSSECall(bearerKey, tool, args, idemKey string) (stream, sid string) {
	g.t.Helper()
	meta := ""
	if idemKey != "" {
		meta = `,"_meta":{"toolgate/idempotency_key":"` + idemKey + `"}`
	}
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + meta + `}}`
	req, _ := http.NewRequest("POST", g.url+"/mcp", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+bearerKey)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		g.t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<16), 8<<20)
	for sc.Scan() {
		b.WriteString(sc.Text() + "\n")
	}
	if m := regexp.MustCompile(`(?m)^id: (\S+)_0$`).FindStringSubmatch(b.String()); m != nil {
		sid = m[1]
	}
	return b.String(), sid
}

// mcpResume resumes a stream after its priming event.
func (g *rig) mcpResume(bearerKey, sid string) (int, string) {
	g.t.Helper()
	req, _ := http.NewRequest("GET", g.url+"/mcp", nil)
	req.Header.Set("Authorization", "Bearer "+bearerKey)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Last-Event-ID", sid+"_0")
	c := &http.Client{Timeout: 40 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		g.t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<16), 8<<20)
	for sc.Scan() {
		b.WriteString(sc.Text() + "\n")
	}
	return resp.StatusCode, b.String()
}

// Only an admitted tools/call has its stream kept: calls refused for their
// tool, their key or their arguments (big ones among them) are answered on
// their stream but nothing of them is stored, so resuming one is 404 and the
// ledger holds no byte of them; an admitted call's stream resumes.
func TestMCPStreamKeepsOnlyAdmittedCalls(t *testing.T) {
	t.Parallel()
	g := newRig(t, frontKeys)
	big := `{"order_id":"` + strings.Repeat("A", 900<<10) + `","amount_minor":1500,"currency":"EUR","reason":"customer_request"}`
	for _, tc := range []struct {
		name, key, tool, args, idem, want string
	}{
		{"a tool the key may not call", "key-refund-agent", "orders.get_order", `{"order_id":"ord_12345678"}`, "", `"error"`},
		{"no such tool", "key-all-agent", "payments.nope", `{}`, "", `"error"`},
		{"no idempotency key", "key-all-agent", "payments.issue_refund", okArgs, "", `"isError":true`},
		{"invalid arguments, big", "key-all-agent", "payments.issue_refund", big, "stored-refused-0001", `"isError":true`},
		{"arguments not an object", "key-all-agent", "payments.issue_refund", `[1,2]`, "stored-refused-0002", `"isError":true`},
	} {
		stream, sid := g.mcpSSECall(tc.key, tc.tool, tc.args, tc.idem)
		if sid == "" || !strings.Contains(stream, tc.want) || !strings.Contains(stream, "_1\nevent: message\n") {
			t.Errorf("%s: the stream does not carry the refusal:\n%.500s", tc.name, stream)
			continue
		}
		if status, body := g.mcpResume(tc.key, sid); status != 404 || !strings.Contains(body, `"code":"not_found"`) {
			t.Errorf("%s: resuming a refused call's stream: %d %.300s, want 404 (nothing stored)", tc.name, status, body)
		}
	}
	u, err := g.svc.Store.(ledger.StreamStore).StreamUsage(context.Background(), "acme", "all-agent", time.Now().Add(-time.Hour))
	if err != nil || u.Streams != 0 || u.Bytes != 0 {
		t.Errorf("after refused calls only the ledger keeps %+v, %v; want nothing", u, err)
	}
	stream, sid := g.mcpSSECall("key-all-agent", "payments.issue_refund", okArgs, "stored-admitted-0001")
	if status, body := g.mcpResume("key-all-agent", sid); status != 200 || !strings.Contains(body, `"id":7`) || !strings.Contains(stream, body) {
		t.Errorf("resuming an admitted call's stream: %d\n%s\nwant the answer of\n%s", status, body, stream)
	}
	g.wantEffects(1)
}

// The stored streams are bounded per key and in all, in count and bytes:
// past a bound a call still runs and answers, as a stream with no event ids
// (nothing to resume), and the metric counts it; another key is not held
// back by a key's own bound.
func TestMCPStoredStreamsAreBounded(t *testing.T) {
	t.Parallel()
	t.Run("per key", func(t *testing.T) {
		t.Parallel()
		g := newRig(t, frontKeys, func(c *gatewaytest.Config) { c.MaxMCPStoredStreamsPerKey = 2 })
		for i, key := range []string{"bound-key-0001", "bound-key-0002", "bound-key-0003"} {
			stream, sid := g.mcpSSECall("key-all-agent", "payments.issue_refund", okArgs, key)
			if !strings.Contains(stream, `"toolgate/action_state":"succeeded"`) {
				t.Fatalf("call %d did not run: %s", i, stream)
			}
			if stored := sid != ""; stored != (i < 2) {
				t.Errorf("call %d: stored %v; want the first two only:\n%s", i, stored, stream)
			}
			if i == 2 && strings.Contains(stream, "id: ") {
				t.Errorf("an unstored stream names event ids:\n%s", stream)
			}
		}
		if _, sid := g.mcpSSECall("key-refund-agent", "payments.issue_refund", okArgs, "bound-key-0004"); sid == "" {
			t.Error("another key's stream was not kept")
		}
		if m := g.do("GET", "/metrics", "", bearer("key-oncall")...); !strings.Contains(string(m.body), `toolgate_mcp_streams_unstored_total{limit="mcp_stored_streams_per_key"} 1`+"\n") {
			t.Errorf("unstored per key, want 1:\n%s", m.body)
		}
		g.wantEffects(4)
	})
	t.Run("bytes in all", func(t *testing.T) {
		t.Parallel()
		g := newRig(t, frontKeys, func(c *gatewaytest.Config) { c.MaxMCPStoredBytes = 1 })
		if _, sid := g.mcpSSECall("key-all-agent", "payments.issue_refund", okArgs, "bytes-key-0001"); sid == "" {
			t.Fatal("the first stream was not kept")
		}
		for _, key := range []string{"key-all-agent", "key-refund-agent"} {
			if stream, sid := g.mcpSSECall(key, "payments.issue_refund", okArgs, "bytes-key-"+key); sid != "" || !strings.Contains(stream, `"toolgate/action_state":"succeeded"`) {
				t.Errorf("%s: past the total bytes: kept %q:\n%s", key, sid, stream)
			}
		}
		if m := g.do("GET", "/metrics", "", bearer("key-oncall")...); !strings.Contains(string(m.body), `toolgate_mcp_streams_unstored_total{limit="mcp_stored_bytes"} 2`+"\n") {
			t.Errorf("unstored for bytes, want 2:\n%s", m.body)
		}
	})
}

// A stream older than the retention is not resumed, whether or not a sweep
// deleted it yet (the one the issue found was resumed 18.5 minutes after its
// call), and the periodic sweep deletes it without any new call; a younger
// one resumes. The clock is the gateway's (Config.Now), moved by the test.
func TestMCPStreamRetentionIsEnforced(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{t: time.Now()}
	g := newRig(t, frontKeys, func(c *gatewaytest.Config) { c.Now = clock.Now })
	_, sid := g.mcpSSECall("key-all-agent", "payments.issue_refund", okArgs, "retain-key-0001")
	if sid == "" {
		t.Fatal("no stream")
	}
	clock.Add(14 * time.Minute)
	if status, body := g.mcpResume("key-all-agent", sid); status != 200 || !strings.Contains(body, `"id":7`) {
		t.Fatalf("a 14-minute-old stream: %d %s", status, body)
	}
	clock.Add(4*time.Minute + 30*time.Second)
	if status, body := g.mcpResume("key-all-agent", sid); status != 404 || !strings.Contains(body, "expired") {
		t.Errorf("an 18.5-minute-old stream: %d %s, want 404", status, body)
	}
	ss := g.svc.Store.(ledger.StreamStore)
	if _, _, err := ss.StreamEvents(context.Background(), sid, 0); err != nil {
		t.Fatalf("the expired stream is gone before any sweep: %v", err)
	}
	cl := &ledger.StreamCleaner{Store: ss, Now: clock.Now}
	if n, err := cl.RunOnce(context.Background()); err != nil || n != 1 {
		t.Fatalf("sweep: %d, %v; want 1", n, err)
	}
	if _, _, err := ss.StreamEvents(context.Background(), sid, 0); err == nil {
		t.Error("the sweep left the expired stream")
	}
}

// An old stream in the ledger (as a gateway that stored it 18.5 minutes ago
// left it, no sweep since) is not resumed: its stored answer is not given
// out.
func TestMCPStreamResumeRefusesAnOldStoredStream(t *testing.T) {
	t.Parallel()
	g := newRig(t, frontKeys)
	ss := g.svc.Store.(ledger.StreamStore)
	ctx := context.Background()
	if err := ss.OpenStream(ctx, ledger.StreamInfo{ID: "OLDSTREAM", Tenant: "acme", Principal: "all-agent", Created: time.Now().Add(-18*time.Minute - 30*time.Second)}); err != nil {
		t.Fatal(err)
	}
	if err := ss.AppendStreamEvent(ctx, "OLDSTREAM", 1, []byte(`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"old answer"}]}}`)); err != nil {
		t.Fatal(err)
	}
	if err := ss.CloseStream(ctx, "OLDSTREAM"); err != nil {
		t.Fatal(err)
	}
	if status, body := g.mcpResume("key-all-agent", "OLDSTREAM"); status != 404 || strings.Contains(body, "old answer") {
		t.Errorf("an 18.5-minute-old stream: %d %s, want 404", status, body)
	}
}

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}
