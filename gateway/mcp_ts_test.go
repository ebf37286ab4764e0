package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/sandbox"
)

// TestMCPWithTheTypeScriptClient runs the official TypeScript MCP client
// (@modelcontextprotocol/sdk from the npm registry, installed into
// testdata/mcp-ts) against a real gateway: tools/list, calls, replays, the
// isError answers, and a tools/call whose connection is cut while the refund is
// in flight downstream and which the client then re-issues. The sandbox must
// count one effect per intended action.
//
// Without node or npm the test is skipped, except under CI=true, where it fails.
func TestMCPWithTheTypeScriptClient(t *testing.T) {
	t.Parallel()
	dir := tsClientDir(t)
	g := newRig(t, frontKeys)
	// Both refunds that reach the downstream take 1.2s: long enough to cut the
	// second one in flight.
	g.fault(sandbox.Fault{Path: "/refunds", Fault: "delay", DelayMS: 1200, Count: 2})

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "client.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TOOLGATE_URL="+g.url+"/mcp", "TOOLGATE_KEY=key-all-agent", "DROP_AFTER_MS=400")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node client.mjs: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}

	type result struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		StructuredContent map[string]any `json:"structuredContent"`
		IsError           bool           `json:"isError"`
		Meta              map[string]any `json:"_meta"`
	}
	var out struct {
		Tools []struct {
			Name            string         `json:"name"`
			Annotations     map[string]any `json:"annotations"`
			HasOutputSchema bool           `json:"hasOutputSchema"`
		} `json:"tools"`
		First, Again, MissingKey, Invalid, Reissued result
		Dropped                                     struct {
			Result *result `json:"result"`
			Error  string  `json:"error"`
		} `json:"dropped"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("script output: %v\n%s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	text := func(r result) string {
		var b strings.Builder
		for _, c := range r.Content {
			b.WriteString(c.Text)
		}
		return b.String()
	}

	var names []string
	for _, tl := range out.Tools {
		names = append(names, tl.Name)
		if tl.Name == "payments.issue_refund" && (tl.Annotations["destructiveHint"] != true || tl.Annotations["readOnlyHint"] != false || !tl.HasOutputSchema) {
			t.Errorf("refund tool as the TS client sees it: %+v", tl)
		}
	}
	if got := strings.Join(names, ","); got != "orders.get_order,payments.issue_refund,refund.create_request" {
		t.Errorf("tools %s", got)
	}
	if out.First.IsError || out.First.StructuredContent["status"] != "succeeded" || out.First.Meta["toolgate/replayed"] != false {
		t.Errorf("first call: %+v", out.First)
	}
	if out.Again.IsError || out.Again.Meta["toolgate/replayed"] != true || out.Again.StructuredContent["refund_id"] != out.First.StructuredContent["refund_id"] {
		t.Errorf("repeated call: %+v", out.Again)
	}
	if !out.MissingKey.IsError || !strings.Contains(text(out.MissingKey), "idempotency_key") {
		t.Errorf("missing key: %+v", out.MissingKey)
	}
	if inv := text(out.Invalid); !out.Invalid.IsError || !strings.Contains(inv, "/order_id") || !strings.Contains(inv, "/amount_minor") {
		t.Errorf("invalid call: %+v", out.Invalid)
	}
	if out.Dropped.Result != nil || out.Dropped.Error == "" {
		t.Errorf("the dropped call got an answer: %+v", out.Dropped)
	}
	t.Logf("the dropped call ended with: %s", out.Dropped.Error)
	re := out.Reissued
	if re.IsError || re.StructuredContent["amount_minor"] != float64(2500) || re.Meta["toolgate/replayed"] != true || re.Meta["toolgate/action_id"] != "ts-drop-00000001" {
		t.Errorf("re-issued call: %+v", re)
	}
	// One refund for ts-key-00000001 and one for the dropped-and-re-issued call.
	g.wantEffects(2)
	if n := g.sb.Requests("/refunds"); n != 2 {
		t.Fatalf("the downstream saw %d refund requests, want 2", n)
	}
}

// tsClientDir installs the TypeScript client's dependencies into
// testdata/mcp-ts (once per test binary) and returns the directory.
func tsClientDir(t *testing.T) string {
	t.Helper()
	return nodePackages(t, "mcp-ts", "the TypeScript MCP client test", []string{"@modelcontextprotocol/sdk/package.json"})
}
