package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/internal/testrig"
	"github.com/toolgate/toolgate/sandbox"
	"github.com/toolgate/toolgate/sandbox/sandboxtest"
)

// Every subcommand's --help names a flag's default once (a usage that says
// its own default is not followed by flag's "(default …)" as well) and names
// every flag's argument (never flag's generic "value").
func TestHelpNamesEachDefaultOnce(t *testing.T) {
	t.Parallel()
	subs := map[string][]string{
		"actions":   {"list", "show", "reconcile", "resolve", "approve", "deny"},
		"rollout":   {"status", "shadow", "canary", "promote", "rollback", "halt"},
		"upstream":  {"diff", "accept"},
		"decisions": {"list", "show"},
		"cases":     {"capture"},
		"import":    {"mcp", "openapi"},
	}
	var runs [][]string
	for name := range commands {
		runs = append(runs, []string{name, "--help"})
		for _, sub := range subs[name] {
			runs = append(runs, []string{name, sub, "--help"})
		}
	}
	twice := regexp.MustCompile(`\(default.*\(default `)
	unnamed := regexp.MustCompile(`^\s+-[a-z-]+ value$`)
	for _, args := range runs {
		r := runCLI(t, "", args...)
		for _, line := range strings.Split(r.stdout+r.stderr, "\n") {
			if twice.MatchString(line) {
				t.Errorf("toolgate %s: a default named twice: %q", strings.Join(args, " "), strings.TrimSpace(line))
			}
			if unnamed.MatchString(line) {
				t.Errorf("toolgate %s: a flag whose argument has no name (write it in back quotes in the usage): %q", strings.Join(args, " "), strings.TrimSpace(line))
			}
		}
	}
}

// The messages fixed for being wrong, each held by a golden file
// (go test ./cmd/toolgate -run TestFixedMessages -update rewrites them).
func TestFixedMessages(t *testing.T) {
	t.Parallel()

	t.Run("lock_one_version", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		copyTree(t, filepath.Join(exampleTools, "orders.get_order"), filepath.Join(dir, "orders.get_order"))
		r := runCLI(t, "", "lock", dir)
		if r.code != exitOK {
			t.Fatalf("lock: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		again := runCLI(t, "", "lock", dir)
		assertGoldenFile(t, "messages/lock_one_version.golden", strings.ReplaceAll(r.stdout+r.stderr+again.stdout+again.stderr, dir, "$DIR"))
	})

	t.Run("serve", func(t *testing.T) {
		t.Parallel()
		s := startMessagesServe(t)
		// A call to a tool that does not exist: 404 tool_not_found, and a
		// decision-log line that names the tool the caller asked for.
		req, _ := http.NewRequest("POST", s.base+"/v1/tools/payments.issue_refunds/calls", strings.NewReader(`{"arguments":{}}`))
		req.Header.Set("Authorization", "Bearer "+logAgentKey)
		req.Header.Set("Idempotency-Key", "msg-unknown-0001")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Fatalf("unknown tool: %d", resp.StatusCode)
		}
		// The API's own contract names the address it was fetched from.
		resp, err = http.Get(s.base + "/v1/openapi.json")
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Servers json.RawMessage `json:"servers"`
		}
		err = json.NewDecoder(resp.Body).Decode(&doc)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		stderr := s.stop()

		norm := func(s string) string {
			s = regexp.MustCompile(`\d{4}/\d\d/\d\d \d\d:\d\d:\d\d`).ReplaceAllString(s, "YYYY/MM/DD hh:mm:ss")
			s = regexp.MustCompile(`127\.0\.0\.1:\d+`).ReplaceAllString(s, "127.0.0.1:PORT")
			return s
		}
		var startup []string
		for _, l := range strings.Split(stderr, "\n") {
			startup = append(startup, l)
			if strings.Contains(l, "listening on") {
				break
			}
		}
		assertGoldenFile(t, "messages/serve_startup.text.golden", norm(strings.Join(startup, "\n")+"\n"))
		assertGoldenFile(t, "messages/openapi_servers.golden", norm(string(doc.Servers)+"\n"))

		b, err := os.ReadFile(s.log)
		if err != nil {
			t.Fatal(err)
		}
		var line struct {
			ToolID  string `json:"tool_id"`
			Outcome string `json:"outcome"`
			Error   string `json:"error_class"`
		}
		if err := json.Unmarshal([]byte(strings.SplitN(string(b), "\n", 2)[0]), &line); err != nil {
			t.Fatal(err)
		}
		if line.ToolID != "payments.issue_refunds" || line.Outcome != "invalid" || line.Error != "tool_not_found" {
			t.Errorf("the 404's log line: %+v, want tool_id payments.issue_refunds, outcome invalid, tool_not_found", line)
		}
		r := runCLI(t, "", "replay", "--log", s.log, "--target", s.sandbox)
		assertGoldenFile(t, "messages/replay_tool_not_found.golden", norm(strings.ReplaceAll(r.stdout+r.stderr, s.log, "$LOG")))
	})
}

type messagesServe struct {
	base, sandbox, log string
	stop               func() string
}

// startMessagesServe runs `toolgate serve` (text logs) with a key, a decision
// log and the sandbox as the refund downstream.
func startMessagesServe(t *testing.T) messagesServe {
	t.Helper()
	dir := t.TempDir()
	_, sbURL := sandboxtest.Start(t, sandbox.Config{AutoCreateOrders: true})
	tools, err := filepath.Abs(exampleTools)
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "decisions.jsonl")
	cfgPath := filepath.Join(dir, "toolgate.yaml")
	yaml := fmt.Sprintf(`listen: 127.0.0.1:0
tools_dir: %s
ledger: sqlite://%s
decision_log: {path: %s, arguments: full}
auth:
  keys:
    - {name: agent, key_sha256: "%s", tenant: acme, role: agent, tools: ["*"]}
bindings:
  payments.issue_refund:
    url: %s/refunds
    lookup: {url: "%s/refunds/by-key/{downstream_key}"}
  refund.create_request:
    url: %s/requests
    lookup: {url: "%s/requests/by-key/{downstream_key}"}
  orders.get_order:
    url: "%s/orders/{args.order_id}"
    method: GET
`, tools, filepath.Join(dir, "ledger.db"), logPath, config.HashKey(logAgentKey), sbURL, sbURL, sbURL, sbURL, sbURL)
	if err := os.WriteFile(cfgPath, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var errb testrig.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, env{Args: []string{"serve", "--config", cfgPath},
			Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: &errb})
	}()
	addr := regexp.MustCompile(`listening on (http://[0-9.:]+)`)
	var base string
	for deadline := time.Now().Add(15 * time.Second); base == ""; time.Sleep(5 * time.Millisecond) {
		if m := addr.FindStringSubmatch(errb.String()); m != nil {
			base = m[1]
		} else if time.Now().After(deadline) {
			cancel()
			t.Fatalf("serve did not say where it listens; stderr %q", errb.String())
		}
	}
	stop := func() string {
		cancel()
		select {
		case code := <-done:
			if code != exitOK {
				t.Errorf("serve exited %d", code)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("serve did not stop")
		}
		return strings.ReplaceAll(strings.ReplaceAll(errb.String(), dir, "$DIR"), tools, "$TOOLS")
	}
	return messagesServe{base: base, sandbox: sbURL, log: logPath, stop: stop}
}

// serve's start-up lines, with no configuration file (the embedded defaults,
// the bundled tools, the built-in sandbox), are all log records of the chosen
// format: in text mode every line has the time and the prefix, in JSON mode
// every line is one object.
func TestServeStartupLinesOneFormat(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	for _, format := range []string{"text", "json"} {
		ctx, cancel := context.WithCancel(context.Background())
		var errb testrig.Buffer
		done := make(chan int, 1)
		go func() {
			done <- run(ctx, env{Args: []string{"serve", "--listen", "127.0.0.1:0", "--log-format", format},
				Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: &errb})
		}()
		for deadline := time.Now().Add(15 * time.Second); !strings.Contains(errb.String(), "listening on"); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				cancel()
				t.Fatalf("%s: serve did not start; stderr %q", format, errb.String())
			}
		}
		cancel()
		<-done
		out := errb.String()
		out = regexp.MustCompile(`\d{4}/\d\d/\d\d \d\d:\d\d:\d\d`).ReplaceAllString(out, "YYYY/MM/DD hh:mm:ss")
		out = regexp.MustCompile(`"time":"[^"]+"`).ReplaceAllString(out, `"time":"T"`)
		out = regexp.MustCompile(`127\.0\.0\.1:\d+`).ReplaceAllString(out, "127.0.0.1:PORT")
		// The golden file is the package's, not the temporary directory's.
		assertGoldenFile(t, goldenFrom(t, wd, "messages/serve_startup_no_config."+format+".golden"), out)
	}
}

// goldenFrom is the argument assertGoldenFile needs, from a test that changed
// its working directory, to reach pkgDir/testdata/path.
func goldenFrom(t *testing.T, pkgDir, path string) string {
	t.Helper()
	cur, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(filepath.Join(cur, "testdata"), filepath.Join(pkgDir, "testdata", path))
	if err != nil {
		t.Fatal(err)
	}
	return rel
}
