package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/internal/testrig"
)

// TestServeLeaksNothing runs the real toolgate binary with keys, a decision
// log, OTLP trace export and a downstream that echoes what it is sent, puts
// marker values in fields a contract marks x-sensitive behind $anchor, $id,
// dependentSchemas and recursion (one of them sensitive only in the newer
// version), drives calls through one-shot, retry-under-another-version,
// two-phase, OpenAI, approve and failing downstreams, and reads everything
// back with the CLI: no marker reaches the process's stdout or stderr, the
// CLI's output, the decision log file, the exported spans or the cases
// `toolgate cases capture` writes from the log and from the ledger.
func TestServeLeaksNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	t.Parallel()
	bin := buildBinary(t)
	dir := t.TempDir()
	markers := map[string]string{"note": "LkNote7731", "pin": "LkPin5522", "card": "LkCard8813", "deep": "LkDeep3391",
		"extra": "LkExtra4410", "acct": "LkAcct6627", "token": "LkToken1195"}

	// The contract: note is sensitive from 1.1.0 on; the rest in both.
	params := func(noteMark string) string {
		return `{"type":"object","required":["acct","amount"],
		  "$defs":{"pin":{"$anchor":"pin","type":"string","x-sensitive":true},
		           "card":{"$id":"urn:leak:card","type":"object","properties":{"number":{"type":"string","x-sensitive":true}}},
		           "node":{"type":"object","properties":{"secret":{"type":"string","x-sensitive":true},"next":{"$ref":"#/$defs/node"}}}},
		  "properties":{"acct":{"type":"string","pattern":"^[A-Za-z0-9]+$","x-sensitive":true},"amount":{"type":"integer","minimum":1},
		    "note":{"type":"string"` + noteMark + `},"pin":{"$ref":"#pin"},"card":{"$ref":"urn:leak:card"},"tree":{"$ref":"#/$defs/node"},"kind":{"type":"string"}},
		  "dependentSchemas":{"kind":{"properties":{"extra":{"type":"string","x-sensitive":true}}}}}`
	}
	result := `{"type":"object","properties":{"receipt":{"type":"string"},"token":{"type":"string","x-sensitive":true},"echo":{"type":"string"}}}`
	tools := filepath.Join(dir, "tools")
	for _, tool := range []string{"leak.ok", "leak.approve", "leak.fail", "leak.down"} {
		for v, mark := range map[string]string{"1.0.0": "", "1.1.0": `,"x-sensitive":true`} {
			p := filepath.Join(tools, tool, "schemas", "v"+v+".json")
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			body := `{"tool_id":"` + tool + `","version":"` + v + `","name":"` + strings.ReplaceAll(tool, ".", "_") +
				`","description":"leak test tool","effect":"mutating","parameters":` + params(mark) + `,"result":` + result + `}`
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A downstream that echoes every string it is sent; /fail answers 500.
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasPrefix(r.URL.Path, "/fail/"):
			w.WriteHeader(500)
			fmt.Fprintf(w, `{"error":%q}`, "saw "+r.URL.String()+" "+string(body))
		case strings.HasPrefix(r.URL.Path, "/state/"):
			fmt.Fprintf(w, `{"path":%q}`, r.URL.Path)
		default:
			w.WriteHeader(201)
			json.NewEncoder(w).Encode(map[string]string{"receipt": "r-1", "token": markers["token"], "echo": "saw " + r.URL.String() + " " + string(body)})
		}
	}))
	t.Cleanup(down.Close)
	closed := "http://" + freeAddr(t)
	// An OTLP/HTTP collector that keeps what it receives.
	var spansMu sync.Mutex
	var spans bytes.Buffer
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		spansMu.Lock()
		spans.Write(b)
		spansMu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	t.Cleanup(collector.Close)

	addr := freeAddr(t)
	const agentKey, oncallKey = "leak-agent-key-1", "leak-oncall-key-1"
	binding := func(base string, extra string) string {
		return `
    url: "` + base + `/{args.acct}?n={args.amount}"
    state: {url: "` + down.URL + `/state/{args.acct}"}
    lookup: {url: "` + closed + `/lookup/{args.acct}"}
    hold_after: 1ms
    timeout: 2s` + extra
	}
	cfg := `listen: ` + addr + `
tools_dir: ` + tools + `
ledger: sqlite://` + filepath.Join(dir, "ledger.db") + `
decision_log: {path: ` + filepath.Join(dir, "decisions.jsonl") + `, arguments: masked}
auth:
  keys:
    - {name: agent, key_sha256: "` + config.HashKey(agentKey) + `", tenant: acme, role: agent, tools: ["*"]}
    - {name: oncall, key_sha256: "` + config.HashKey(oncallKey) + `", tenant: acme, role: operator, tools: ["*"]}
bindings:
  leak.ok:` + binding(down.URL+"/ok", "") + `
  leak.approve:` + binding(down.URL+"/approve", "\n    require_approval: true") + `
  leak.fail:` + binding(down.URL+"/fail", "") + `
  leak.down:` + binding(closed+"/down", "") + `
`
	cfgPath := filepath.Join(dir, "toolgate.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var serveOut testrig.Buffer // safe for the concurrent writes of stdout and stderr
	cmd := exec.Command(bin, "serve", "--config", cfgPath)
	cmd.Env = append(os.Environ(), "OTEL_EXPORTER_OTLP_ENDPOINT="+collector.URL, "OTEL_EXPORTER_OTLP_COMPRESSION=none", "OTEL_BSP_SCHEDULE_DELAY=50")
	cmd.Stdout, cmd.Stderr = &serveOut, &serveOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	base := "http://" + addr
	waitFor(t, "the gateway", func() bool {
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == 200
	})

	deep := any(map[string]any{"secret": markers["deep"]})
	for range 40 {
		deep = map[string]any{"next": deep}
	}
	args := func(note string, amount int) string {
		b, _ := json.Marshal(map[string]any{"acct": markers["acct"], "amount": amount, "note": note, "pin": markers["pin"],
			"card": map[string]any{"number": markers["card"]}, "tree": deep, "kind": "k", "extra": markers["extra"]})
		return string(b)
	}
	var answers strings.Builder
	post := func(method, path, key, idem, body string, want int) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		if idem != "" {
			req.Header.Set("Idempotency-Key", idem)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("%s %s: %d, want %d: %s", method, path, resp.StatusCode, want, b)
		}
		if resp.StatusCode >= 400 {
			answers.WriteString(string(b) + "\n")
		}
	}
	marked := args(markers["note"], 5)
	post("POST", "/v1/tools/leak.ok/calls", agentKey, "leak-key-0001", `{"version":"1.1.0","arguments":`+marked+`}`, 201)
	post("POST", "/v1/tools/leak.ok/calls", agentKey, "leak-key-0002", `{"version":"1.0.0","arguments":`+args("plain", 5)+`}`, 201)
	post("POST", "/v1/tools/leak.ok/calls", agentKey, "leak-key-0002", `{"version":"1.1.0","arguments":`+marked+`}`, 409)
	post("POST", "/v1/tools/leak.ok/calls", agentKey, "leak-key-0002", `{"version":"9.9.9","arguments":`+marked+`}`, 404)
	post("POST", "/v1/tools/leak.ok/calls", agentKey, "leak-key-0003", `{"arguments":`+args(markers["note"], 0)+`}`, 422)
	post("PUT", "/v1/actions/leak-two-0001", agentKey, "", `{"tool_id":"leak.ok","version":"1.1.0"}`, 201)
	post("POST", "/v1/actions/leak-two-0001/calls", agentKey, "", `{"arguments":`+marked+`}`, 201)
	oa, _ := json.Marshal(map[string]any{"id": "call_leak_1", "type": "function", "function": map[string]any{"name": "leak_ok", "arguments": marked}})
	post("POST", "/v1/calls/openai", agentKey, "leak-openai-01", string(oa), 200)
	post("POST", "/v1/tools/leak.approve/calls", agentKey, "leak-appr-0001", `{"arguments":`+marked+`}`, 202)
	post("POST", "/v1/tools/leak.fail/calls", agentKey, "leak-fail-0001", `{"arguments":`+marked+`}`, 504)
	post("POST", "/v1/tools/leak.down/calls", agentKey, "leak-down-0001", `{"arguments":`+marked+`}`, 502)

	// The CLI: approve, reconcile, then every read.
	cli := func(args ...string) string {
		t.Helper()
		c := exec.Command(bin, append([]string{"actions"}, args...)...)
		c.Env = append(os.Environ(), "TOOLGATE_URL="+base, "TOOLGATE_KEY="+oncallKey)
		out, err := c.CombinedOutput()
		if err != nil {
			t.Errorf("toolgate actions %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	var cliOut strings.Builder
	cliOut.WriteString(cli("approve", "leak-appr-0001", "--note", "ok"))
	cliOut.WriteString(cli("reconcile", "leak-fail-0001"))
	cliOut.WriteString(cli("list", "--all"))
	cliOut.WriteString(cli("list", "--all", "--format", "json"))
	for _, id := range []string{"leak-key-0001", "leak-key-0002", "leak-two-0001", "leak-openai-01", "leak-appr-0001", "leak-fail-0001", "leak-down-0001"} {
		cliOut.WriteString(cli("show", id))
		cliOut.WriteString(cli("show", id, "--format", "json"))
	}
	if !strings.Contains(cliOut.String(), "leak-appr-0001") || !strings.Contains(cliOut.String(), "receipt") {
		t.Errorf("the CLI shows too little:\n%.2000s", cliOut.String())
	}

	// Stop the gateway (the decision log and the spans are flushed), then capture.
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop")
	}
	logBytes, err := os.ReadFile(filepath.Join(dir, "decisions.jsonl"))
	if err != nil || !bytes.Contains(logBytes, []byte(`"outcome":"conflict"`)) {
		t.Fatalf("decision log: %v\n%s", err, logBytes)
	}
	var captured strings.Builder
	for _, from := range [][]string{{"--from-log", filepath.Join(dir, "decisions.jsonl")}, {"--from-ledger", "sqlite://" + filepath.Join(dir, "ledger.db"), "--tenant", "acme"}} {
		for _, tool := range []string{"leak.ok", "leak.approve"} {
			c := exec.Command(bin, append(append([]string{"cases", "capture", "--tool", tool, "--dry-run"}, from...), tools)...)
			out, err := c.CombinedOutput()
			if err != nil {
				t.Errorf("cases capture %s %v: %v\n%s", tool, from, err, out)
			}
			captured.Write(out)
		}
	}
	if !strings.Contains(captured.String(), "case_id: shadow_") {
		t.Errorf("nothing captured:\n%s", captured.String())
	}
	spansMu.Lock()
	exported := spans.String()
	spansMu.Unlock()
	if !strings.Contains(exported, "execute_tool") {
		t.Errorf("no spans were exported (%d bytes)", len(exported))
	}
	sinks := map[string]string{
		"serve's stdout and stderr": serveOut.String(), "the CLI": cliOut.String(), "the decision log": string(logBytes),
		"the captured cases": captured.String(), "the exported spans": exported, "the error answers": answers.String(),
	}
	for name, m := range markers {
		for where, text := range sinks {
			if strings.Contains(text, m) {
				i := strings.Index(text, m)
				t.Errorf("%s shows the %s marker %s: …%s…", where, name, m, text[max(0, i-200):min(len(text), i+80)])
			}
		}
	}
}
