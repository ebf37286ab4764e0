package gateway_test

import (
	"bufio"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// A tools/call answered as server-sent events starts with a priming event
// (an id and retry) and gives every later event an id; GET /mcp with the
// priming event's id returns the stored answer again, to the same key only.
// A malformed Last-Event-ID is 400, an unknown stream or another key's 404.
func TestMCPStreamResumption(t *testing.T) {
	t.Parallel()
	g := newRig(t, frontKeys)
	post := func() (string, string) {
		t.Helper()
		body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"payments.issue_refund","arguments":` + okArgs + `,"_meta":{"toolgate/idempotency_key":"resume-key-0001"}}}`
		req, _ := http.NewRequest("POST", g.url+"/mcp", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer key-all-agent")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<16), 1<<20)
		for sc.Scan() {
			b.WriteString(sc.Text() + "\n")
		}
		return resp.Header.Get("Content-Type"), b.String()
	}
	ct, stream := post()
	m := regexp.MustCompile(`^id: (\S+)_0\nretry: 1000\ndata: \n\nid: (\S+)_1\nevent: message\ndata: (\{.*"id":7.*\})\n\n$`).FindStringSubmatch(stream)
	if ct != "text/event-stream" || m == nil || m[1] != m[2] {
		t.Fatalf("Content-Type %q, stream:\n%s", ct, stream)
	}
	sid, answer := m[1], m[3]

	get := func(key, eid string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", g.url+"/mcp", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Last-Event-ID", eid)
		c := &http.Client{Timeout: 10 * time.Second}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<16), 1<<20)
		for sc.Scan() {
			b.WriteString(sc.Text() + "\n")
		}
		return resp.StatusCode, b.String()
	}
	if status, body := get("key-all-agent", sid+"_0"); status != 200 || body != "id: "+sid+"_1\nevent: message\ndata: "+answer+"\n\n" {
		t.Fatalf("resumed after the priming event: %d\n%s", status, body)
	}
	if status, body := get("key-all-agent", sid+"_1"); status != 200 || body != "" {
		t.Errorf("resumed after the last event: %d %q", status, body)
	}
	for _, tc := range []struct {
		name, key, eid string
		status         int
		code           string
	}{
		{"malformed", "key-all-agent", "not-an-event-id", 400, "malformed_request"},
		{"leading zero", "key-all-agent", sid + "_01", 400, "malformed_request"},
		{"unknown stream", "key-all-agent", "NOSUCHSTREAM_0", 404, "not_found"},
		{"another key", "key-refund-agent", sid + "_0", 404, "not_found"},
		{"no key", "", sid + "_0", 401, "unauthenticated"},
	} {
		status, body := get(tc.key, tc.eid)
		if status != tc.status || !strings.Contains(body, `"code":"`+tc.code+`"`) {
			t.Errorf("%s: %d %s, want %d %s", tc.name, status, body, tc.status, tc.code)
		}
	}
	// Without Last-Event-ID a GET opens the key's notification stream
	// (mcp_notify.go); from 2026-07-28 on it is the SDK's 405.
	for _, tc := range []struct {
		version string
		status  int
	}{{"", http.StatusOK}, {"2025-11-25", http.StatusOK}, {"2026-07-28", http.StatusMethodNotAllowed}} {
		req, _ := http.NewRequest("GET", g.url+"/mcp", nil)
		req.Header.Set("Authorization", "Bearer key-all-agent")
		req.Header.Set("Accept", "text/event-stream")
		if tc.version != "" {
			req.Header.Set("Mcp-Protocol-Version", tc.version)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != tc.status || (tc.status == http.StatusOK && resp.Header.Get("Content-Type") != "text/event-stream") {
			t.Errorf("GET /mcp without Last-Event-ID, version %q: %d %s, want %d", tc.version, resp.StatusCode, resp.Header.Get("Content-Type"), tc.status)
		}
		resp.Body.Close()
	}
	g.wantEffects(1)
}
