package examples_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/gateway/gatewaytest"
	"github.com/toolgate/toolgate/internal/testrig"
	"github.com/toolgate/toolgate/invoke"
	"github.com/toolgate/toolgate/sandbox"
	"github.com/toolgate/toolgate/sandbox/sandboxtest"
)

// TestTypeScriptAgents runs the three agent loops of examples/typescript
// (OpenAI Chat Completions, Anthropic Messages, an MCP client with Anthropic
// as the model), compiled with tsc from the committed lock file, against a
// real gateway (SQLite ledger, reconciler running, the sandbox downstream over
// loopback) and a scripted model server of the provider's API. The script
// first calls the refund tool with two wrong arguments, corrects both once it
// reads the 422's field errors, and answers in text once the refund is done.
// The corrected call's connection is dropped after the sandbox applied the
// refund, so the loop meets a 504 outcome_unknown, waits for the reconciler,
// and sends the same key again. Each loop then runs a second time with the
// same conversation id, as after a crash: the sandbox must still count one
// refund. A third run meets its action already running (409
// action_in_progress) and waits for its result.
//
// Without node or npm the test is skipped, except under CI=true, where it fails.
func TestTypeScriptAgents(t *testing.T) {
	t.Parallel()
	dir := tsExamples(t)
	for _, c := range []struct{ name, script, api string }{
		{"openai", "openai-agent.js", "openai"},
		{"anthropic", "anthropic-agent.js", "anthropic"},
		{"mcp", "mcp-agent.js", "anthropic"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			sb, gw := agentGateway(t)
			model := &scriptedModel{api: c.api}
			ms := httptest.NewServer(model)
			t.Cleanup(ms.Close)
			conversation := "conv-" + c.name + "-0001"
			env := append(os.Environ(), "TOOLGATE_URL="+gw, "TOOLGATE_KEY=key-ts-agent", "TOOLGATE_POLL_MS=100",
				"CONVERSATION_ID="+conversation,
				"OPENAI_BASE_URL="+ms.URL+"/v1", "OPENAI_API_KEY=sk-test",
				"ANTHROPIC_BASE_URL="+ms.URL, "ANTHROPIC_API_KEY=sk-ant-test")
			// The first refund that reaches the sandbox is applied and its
			// connection dropped: the gateway cannot know, and answers 504.
			testrig.Fault(t, sb, sandbox.Fault{Path: "/refunds", Fault: "drop_after"})

			first := runNode(t, dir, c.script, env)
			t.Logf("first run of %s:\n%s", c.script, first)
			seen := model.toolResults()
			if len(seen) != 2 || !strings.Contains(seen[0], "invalid_arguments") ||
				!strings.Contains(seen[0], "/order_id") || !strings.Contains(seen[0], "/amount_minor") {
				t.Fatalf("the model did not read the 422's field errors first: %q", seen)
			}
			refundID := regexp.MustCompile(`re_[0-9a-z]+`).FindString(seen[1])
			if refundID == "" {
				t.Fatalf("the corrected call's result has no refund: %q", seen[1])
			}
			for _, want := range []string{
				conversation + "-step0-call0: 422 invalid_arguments",
				conversation + "-step1-call0: 504 outcome_unknown",
				conversation + "-step1-call0: action is succeeded",
				conversation + "-step1-call0: 200 (replayed)",
				"assistant: Refunded " + refundID,
			} {
				if !strings.Contains(first, want) {
					t.Errorf("first run: no %q in its output", want)
				}
			}

			second := runNode(t, dir, c.script, env)
			t.Logf("second run of %s, same conversation:\n%s", c.script, second)
			for _, want := range []string{
				conversation + "-step0-call0: 422 invalid_arguments",
				conversation + "-step1-call0: 200 (replayed)",
				"assistant: Refunded " + refundID,
			} {
				if !strings.Contains(second, want) {
					t.Errorf("second run: no %q in its output", want)
				}
			}
			if strings.Contains(second, "outcome_unknown") {
				t.Errorf("second run met an unknown outcome again")
			}
			testrig.WantEffects(t, sb, 1)
			if n := sb.Requests("/refunds"); n != 1 {
				t.Errorf("the sandbox saw %d refund requests, want 1", n)
			}

			// A new conversation whose corrected call is already running
			// elsewhere (another worker took the same action off a queue):
			// the loop's call waits join_timeout, gets 409 action_in_progress,
			// waits Retry-After and sends it again.
			other := "conv-" + c.name + "-0002"
			testrig.Fault(t, sb, sandbox.Fault{Path: "/refunds", Fault: "delay", DelayMS: 1500})
			elsewhere := make(chan int, 1)
			model.beforeCorrect(func() {
				// Just before the model answers with the corrected call.
				go func() { elsewhere <- postRefund(gw, other+"-step1-call0", goodArgs) }()
				testrig.WaitFor(t, "the other worker's refund to reach the sandbox", func() bool { return sb.Requests("/refunds") == 2 })
			})
			third := runNode(t, dir, c.script, append(env, "CONVERSATION_ID="+other))
			t.Logf("a conversation whose action another worker is running:\n%s", third)
			if status := <-elsewhere; status != 201 {
				t.Errorf("the other worker's call: %d", status)
			}
			if strings.Contains(third, refundID) {
				t.Errorf("a new conversation got the first conversation's refund %s", refundID)
			}
			for _, want := range []string{
				other + "-step1-call0: 409 action_in_progress",
				other + "-step1-call0: 201 (replayed)",
				"assistant: Refunded re_",
			} {
				if !strings.Contains(third, want) {
					t.Errorf("third run: no %q in its output", want)
				}
			}
			testrig.WantEffects(t, sb, 2)
		})
	}
}

// postRefund is a one-shot call of the refund tool, as another worker of the
// application would make it; it returns the status.
func postRefund(gw, key, args string) int {
	req, _ := http.NewRequest("POST", gw+"/v1/tools/payments.issue_refund/calls", strings.NewReader(`{"arguments":`+args+`}`))
	req.Header.Set("Authorization", "Bearer key-ts-agent")
	req.Header.Set("Idempotency-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// agentGateway starts a gateway with an agent key for every tool and its
// reconciler, in front of a sandbox that has the order the loops refund.
func agentGateway(t *testing.T) (*sandbox.Server, string) {
	t.Helper()
	sb, sbURL := sandboxtest.Start(t, sandbox.Config{Orders: []sandbox.Order{
		{OrderID: "ord_8Xk2Lm9Q", TotalMinor: 100_000, Currency: "EUR"},
	}})
	srv, err := gatewaytest.New(gatewaytest.Config{
		Registry: testrig.Registry(t), Ledger: testrig.Ledger(t, "ts-agents"), Invoker: &invoke.Client{},
		Bindings: testrig.Bindings(sbURL), JoinTimeout: 300 * time.Millisecond, Logger: testrig.Logger(t),
		Keys: []gateway.Key{{Name: "ts-agent", SHA256Hex: config.HashKey("key-ts-agent"), Tenant: "acme", Role: "agent", Tools: []string{"*"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	rec := srv.Calls().Reconciler(50 * time.Millisecond)
	srv.Metrics().ObserveReconciler(rec)
	go func() { rec.Run(ctx); close(done) }()
	ts := httptest.NewServer(srv)
	t.Cleanup(func() { ts.Close(); cancel(); <-done })
	return sb, ts.URL
}

func runNode(t *testing.T, dir, script string, env []string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join("dist", script))
	cmd.Dir, cmd.Env = dir, env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node %s: %v\nstdout:\n%s\nstderr:\n%s", script, err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// scriptedModel plays the model over the provider's real HTTP API (OpenAI
// Chat Completions at /v1/chat/completions, Anthropic Messages at
// /v1/messages). What it says depends only on the conversation it is sent,
// like a model: the last tool result decides the next move.
type scriptedModel struct {
	api     string // "openai" or "anthropic"
	mu      sync.Mutex
	results []string // the tool results of the last conversation it was sent
	hook    func()   // runs once before the next corrected call is answered
}

func (m *scriptedModel) beforeCorrect(f func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.hook = f
}

const (
	refundToolName = "payments_issue_refund" // as the exports (and the MCP loop) name it
	badArgs        = `{"order_id":"jane@example.com","amount_minor":19.99,"currency":"EUR","reason":"duplicate_charge"}`
	goodArgs       = `{"order_id":"ord_8Xk2Lm9Q","amount_minor":1999,"currency":"EUR","reason":"duplicate_charge"}`
)

func (m *scriptedModel) toolResults() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.results...)
}

// next is the script: a tool call's arguments, or a final text.
func next(results []string) (args, text string) {
	if len(results) == 0 {
		return badArgs, ""
	}
	last := results[len(results)-1]
	switch {
	case strings.Contains(last, "invalid_arguments"):
		if strings.Contains(last, "/order_id") && strings.Contains(last, "/amount_minor") {
			return goodArgs, ""
		}
		return "", "I could not correct the call: " + last
	case strings.Contains(last, "refund_id"):
		var r struct {
			RefundID string `json:"refund_id"`
			Status   string `json:"status"`
		}
		json.Unmarshal([]byte(last), &r)
		return "", fmt.Sprintf("Refunded %s (%s).", r.RefundID, r.Status)
	}
	return "", "The refund did not go through: " + last
}

func (m *scriptedModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model    string          `json:"model"`
		Tools    json.RawMessage `json:"tools"`
		Messages []struct {
			Role       string          `json:"role"`
			Content    json.RawMessage `json:"content"`
			ToolCallID string          `json:"tool_call_id"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if !strings.Contains(string(req.Tools), `"`+refundToolName+`"`) {
		http.Error(w, `{"error":{"message":"the request offers no `+refundToolName+` tool"}}`, http.StatusBadRequest)
		return
	}
	var results []string
	for _, msg := range req.Messages {
		switch {
		case m.api == "openai" && msg.Role == "tool":
			results = append(results, textOf(msg.Content))
		case m.api == "anthropic" && msg.Role == "user":
			var blocks []struct {
				Type    string          `json:"type"`
				Content json.RawMessage `json:"content"`
			}
			if json.Unmarshal(msg.Content, &blocks) == nil {
				for _, b := range blocks {
					if b.Type == "tool_result" {
						results = append(results, textOf(b.Content))
					}
				}
			}
		}
	}
	args, text := next(results)
	m.mu.Lock()
	m.results = results
	hook := m.hook
	if args == goodArgs {
		m.hook = nil
	} else {
		hook = nil
	}
	m.mu.Unlock()
	if hook != nil {
		hook()
	}
	step := len(results)
	w.Header().Set("Content-Type", "application/json")
	switch {
	case m.api == "openai" && r.URL.Path == "/v1/chat/completions":
		msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil}
		finish := "tool_calls"
		if args != "" {
			msg["tool_calls"] = []any{map[string]any{"id": fmt.Sprintf("call_%d", step), "type": "function",
				"function": map[string]any{"name": refundToolName, "arguments": args}}}
		} else {
			msg["content"], finish = text, "stop"
		}
		json.NewEncoder(w).Encode(map[string]any{"id": "chatcmpl-test", "object": "chat.completion", "created": 1767225600,
			"model": req.Model, "choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish, "logprobs": nil}},
			"usage": map[string]int{"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}})
	case m.api == "anthropic" && r.URL.Path == "/v1/messages":
		content := []any{map[string]any{"type": "text", "text": text}}
		stop := "end_turn"
		if args != "" {
			content = []any{map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%d", step), "name": refundToolName,
				"input": json.RawMessage(args)}}
			stop = "tool_use"
		}
		json.NewEncoder(w).Encode(map[string]any{"id": "msg_test", "type": "message", "role": "assistant", "model": req.Model,
			"content": content, "stop_reason": stop, "stop_sequence": nil, "usage": map[string]int{"input_tokens": 10, "output_tokens": 10}})
	default:
		http.NotFound(w, r)
	}
}

// textOf reads a message's content: a string, or text parts/blocks.
func textOf(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

var tsBuild struct {
	once sync.Once
	err  error
	out  []byte
}

// tsExamples installs examples/typescript's packages from its lock file (npm
// ci, unless node_modules already holds every locked version) and compiles
// the loops with tsc, once per test binary; it returns the directory.
func tsExamples(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not installed, and CI=true requires the TypeScript agent examples to run", tool)
			}
			t.Skipf("skipping the TypeScript agent examples: %s is not installed (install Node.js 20+ with npm)", tool)
		}
	}
	dir, err := filepath.Abs("typescript")
	if err != nil {
		t.Fatal(err)
	}
	tsBuild.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		run := func(name string, args ...string) bool {
			cmd := exec.CommandContext(ctx, name, args...)
			cmd.Dir = dir
			out, err := cmd.CombinedOutput()
			tsBuild.out = append(tsBuild.out, out...)
			tsBuild.err = err
			return err == nil
		}
		if !installed(dir) && !run("npm", "ci", "--no-audit", "--no-fund") {
			return
		}
		run(filepath.Join("node_modules", ".bin", "tsc"), "-p", ".")
	})
	if tsBuild.err != nil {
		t.Fatalf("building %s: %v\n%s", dir, tsBuild.err, tsBuild.out)
	}
	return dir
}

// installed reports whether node_modules holds every package of the lock
// file at its locked version.
func installed(dir string) bool {
	data, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		return false
	}
	var lock struct {
		Packages map[string]struct {
			Version  string `json:"version"`
			Optional bool   `json:"optional"`
		} `json:"packages"`
	}
	if json.Unmarshal(data, &lock) != nil {
		return false
	}
	for path, p := range lock.Packages {
		if path == "" || p.Optional {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, path, "package.json"))
		if err != nil {
			return false
		}
		var got struct {
			Version string `json:"version"`
		}
		if json.Unmarshal(data, &got) != nil || got.Version != p.Version {
			return false
		}
	}
	return true
}
