package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
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

const (
	logAgentKey    = "tg-agent-bearer-7Hq2Zp9X"
	logOperatorKey = "tg-operator-bearer-4Kd8Wm3V"
	logWrongKey    = "tg-wrong-bearer-1Jc5Rn6Y"
)

// logServe runs `toolgate serve --log-format FORMAT` with keys, a decision
// log, and bindings of which two cannot be reached (one of them through a
// URL that carries an argument), until stop is called; it returns the base
// URL and a function that stops serve and returns its standard error.
func logServe(t *testing.T, format string) (base string, stop func() string) {
	t.Helper()
	dir := t.TempDir()
	_, sbURL := sandboxtest.Start(t, sandbox.Config{AutoCreateOrders: true})
	tools, err := filepath.Abs("../../examples/agent-tools")
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "toolgate.yaml")
	yaml := fmt.Sprintf(`listen: 127.0.0.1:0
tools_dir: %s
ledger: sqlite://%s
decision_log: {path: %s, arguments: masked}
auth:
  keys:
    - {name: agent, key_sha256: "%s", tenant: acme, role: agent, tools: ["*"]}
    - {name: oncall, key_sha256: "%s", tenant: acme, role: operator, tools: ["*"]}
bindings:
  payments.issue_refund:
    url: %s/refunds
    lookup: {url: "%s/refunds/by-key/{downstream_key}"}
  refund.create_request:
    url: "http://127.0.0.1:1/requests/{args.order_id}"
    lookup: {url: "http://127.0.0.1:1/requests/by-key/{downstream_key}"}
  orders.get_order:
    url: "http://127.0.0.1:1/orders/{args.order_id}"
    method: GET
`, tools, filepath.Join(dir, "ledger.db"), filepath.Join(dir, "decisions.jsonl"),
		config.HashKey(logAgentKey), config.HashKey(logOperatorKey), sbURL, sbURL)
	if err := os.WriteFile(cfgPath, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb testrig.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, env{Args: []string{"serve", "--config", cfgPath, "--log-format", format},
			Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb})
	}()
	addr := regexp.MustCompile(`listening on (http://[0-9.:]+)`)
	for deadline := time.Now().Add(15 * time.Second); base == ""; time.Sleep(5 * time.Millisecond) {
		if m := addr.FindStringSubmatch(errb.String()); m != nil {
			base = m[1]
		} else if time.Now().After(deadline) {
			cancel()
			t.Fatalf("serve did not say where it listens; stderr %q", errb.String())
		}
	}
	return base, func() string {
		cancel()
		select {
		case code := <-done:
			if code != exitOK {
				t.Errorf("serve exited %d", code)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("serve did not stop")
		}
		return errb.String()
	}
}

// The arguments the test sends: every value in them is one the log must
// never hold.
var loggedCalls = []struct {
	tool, key, args string
	status          int
}{
	// A refund that succeeds.
	{"payments.issue_refund", "log-refund-0001",
		`{"order_id":"ord_LogSecret01","amount_minor":4321,"currency":"EUR","reason":"customer_request","customer_email":"leak.me@example.com"}`, 201},
	// A mutating call whose URL names an argument, to a downstream that is not
	// there: 502, whose cause (logged) quotes the URL.
	{"refund.create_request", "log-request-0001",
		`{"order_id":"ord_LogSecret02","reason_code":"customer_request","approval_channel":"email","note":"please hurry, my pin is 8812"}`, 502},
	// A read-only call likewise.
	{"orders.get_order", "", `{"order_id":"ord_LogSecret03"}`, 502},
	// Invalid arguments.
	{"payments.issue_refund", "log-invalid-0001", `{"order_id":"jane.doe@example.org","amount_minor":19.99}`, 422},
}

func sendLoggedCalls(t *testing.T, base string) {
	t.Helper()
	for _, c := range loggedCalls {
		req, _ := http.NewRequest("POST", base+"/v1/tools/"+c.tool+"/calls", strings.NewReader(`{"arguments":`+c.args+`}`))
		req.Header.Set("Authorization", "Bearer "+logAgentKey)
		req.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
		if c.key != "" {
			req.Header.Set("Idempotency-Key", c.key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Errorf("%s %s: %d, want %d", c.tool, c.key, resp.StatusCode, c.status)
		}
	}
	for _, key := range []string{logWrongKey, logOperatorKey} {
		req, _ := http.NewRequest("GET", base+"/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
}

// argumentValues lists every string and number the calls' arguments hold
// (as JSON writes them), of at least 3 characters.
func argumentValues(t *testing.T) []string {
	t.Helper()
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		case string:
			if len(x) >= 3 {
				out = append(out, x)
			}
		case json.Number:
			if len(x) >= 3 {
				out = append(out, x.String())
			}
		}
	}
	for _, c := range loggedCalls {
		dec := json.NewDecoder(strings.NewReader(c.args))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		walk(v)
	}
	return out
}

// serve --log-format json writes JSON lines only: each parses on its own,
// has time, level and msg, and a call's line has the call's action_id,
// tool_id, tenant and trace_id. No line holds an argument value of any call,
// nor a bearer key, valid or not.
func TestServeJSONLogs(t *testing.T) {
	base, stop := logServe(t, "json")
	sendLoggedCalls(t, base)
	stderr := stop()

	sc := bufio.NewScanner(strings.NewReader(stderr))
	var records []map[string]any
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("line %d is not a JSON object: %v\n%s", n, err, line)
		}
		for _, k := range []string{"time", "level", "msg"} {
			if _, ok := rec[k].(string); !ok {
				t.Errorf("line %d has no %s: %s", n, k, line)
			}
		}
		records = append(records, rec)
	}
	if len(records) < 3 {
		t.Fatalf("only %d log lines:\n%s", len(records), stderr)
	}
	t.Logf("%d JSON log lines; the calls' lines:", len(records))
	msgs := map[string]bool{}
	var callLine map[string]any
	for _, rec := range records {
		msg := rec["msg"].(string)
		msgs[msg] = true
		if rec["tool_id"] != nil {
			line, _ := json.Marshal(rec)
			t.Logf("  %s", line)
		}
		if rec["tool_id"] == "refund.create_request" {
			callLine = rec
		}
	}
	for _, want := range []string{"shutting down"} {
		if !msgs[want] {
			t.Errorf("no %q line", want)
		}
	}
	if !anyPrefix(msgs, "listening on http://") {
		t.Errorf("no start-up line")
	}
	if callLine == nil {
		t.Fatalf("no log line for the unreachable refund.create_request call:\n%s", stderr)
	}
	for k, want := range map[string]string{"level": "WARN", "msg": "downstream_unreachable", "action_id": "log-request-0001",
		"tool_id": "refund.create_request", "tenant": "acme", "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736", "code": "downstream_unreachable"} {
		if callLine[k] != want {
			t.Errorf("the call's line has %s=%v, want %q", k, callLine[k], want)
		}
	}
	if e, _ := callLine["error"].(string); !strings.Contains(e, "127.0.0.1:1") {
		t.Errorf("the call's line does not say what failed: %v", callLine["error"])
	}
	for _, secret := range append(argumentValues(t), logAgentKey, logOperatorKey, logWrongKey) {
		if strings.Contains(stderr, secret) {
			t.Errorf("the log holds %q", secret)
		}
	}
}

func anyPrefix(set map[string]bool, prefix string) bool {
	for s := range set {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

// In text mode the lines are what serve has always written: time, the
// "toolgate: " prefix, the message; the attributes of a call's line follow as
// key=value. Nothing secret there either.
func TestServeTextLogs(t *testing.T) {
	base, stop := logServe(t, "text")
	sendLoggedCalls(t, base)
	stderr := stop()
	line := regexp.MustCompile(`^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d toolgate: \S`)
	for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if !line.MatchString(l) {
			t.Errorf("not a log line: %q", l)
		}
	}
	for _, want := range []string{
		"toolgate: listening on http://",
		"toolgate: decision log: ",
		"toolgate: WARN downstream_unreachable action_id=log-request-0001 tool_id=refund.create_request tenant=acme trace_id=4bf92f3577b34da6a3ce929d0e0e4736",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("no %q in\n%s", want, stderr)
		}
	}
	for _, secret := range append(argumentValues(t), logAgentKey, logOperatorKey, logWrongKey) {
		if strings.Contains(stderr, secret) {
			t.Errorf("the log holds %q", secret)
		}
	}
}

func TestServeLogFormatUsage(t *testing.T) {
	var out, errb strings.Builder
	code := run(context.Background(), env{Args: []string{"serve", "--log-format", "yaml"}, Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb})
	if code != exitUsage || !strings.Contains(errb.String(), `--log-format "yaml": want text or json`) {
		t.Errorf("exit %d, stderr %q", code, errb.String())
	}
}

// A configuration serve refuses is reported, in JSON mode, as one ERROR
// record per line of the report.
func TestServeJSONRefusal(t *testing.T) {
	cfgPath := filepath.Join(t.TempDir(), "toolgate.yaml")
	if err := os.WriteFile(cfgPath, []byte("listen: 127.0.0.1:0\nlisten_addr: oops\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb strings.Builder
	code := run(context.Background(), env{Args: []string{"serve", "--config", cfgPath, "--log-format", "json"},
		Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb})
	if code != exitUsage {
		t.Fatalf("exit %d, stderr %s", code, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
	for _, l := range lines {
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil || rec["level"] != "ERROR" {
			t.Errorf("not an ERROR record: %q", l)
		}
	}
	if !strings.Contains(errb.String(), "listen_addr") || !strings.Contains(errb.String(), "refusing to start") {
		t.Errorf("the report lost its content:\n%s", errb.String())
	}
}
