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
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/client"
	"github.com/toolgate/toolgate/gate"
)

// TestOperatorCommandsReadTheConfigsListen: rollout and actions dial the
// listen address of toolgate.yaml (--config, or ./toolgate.yaml in the
// working directory) the way serve listens on it, and a gateway they cannot
// reach is reported with the flag and variable that name another.
func TestOperatorCommandsReadTheConfigsListen(t *testing.T) {
	t.Parallel()
	clk := &frozen{t: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}
	url, _ := rolloutGateway(t, clk, nil)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "toolgate.yaml")
	if err := os.WriteFile(cfg, []byte("listen: "+strings.TrimPrefix(url, "http://")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := runCLI(t, "", "rollout", "status", "--tool", "refund.create_request", "--config", cfg, "--key", roOncall); r.code != 0 || !strings.Contains(r.stdout, "refund.create_request: stable") {
		t.Fatalf("rollout status --config: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if r := runCLI(t, "", "actions", "list", "--config", cfg, "--key", roOncall); r.code != 0 {
		t.Fatalf("actions list --config: %d %s %s", r.code, r.stdout, r.stderr)
	}
	// ./toolgate.yaml, from the working directory, through the real binary.
	if !testing.Short() {
		bin := buildBinary(t)
		cmd := exec.Command(bin, "rollout", "status", "--tool", "refund.create_request", "--key", roOncall)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "TOOLGATE_URL=")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "refund.create_request: stable") {
			t.Fatalf("rollout status in a directory with toolgate.yaml: %v\n%s", err, out)
		}
	}
	// A listen nothing answers on: the error names --gateway and TOOLGATE_URL.
	dead := filepath.Join(dir, "dead.yaml")
	os.WriteFile(dead, []byte("listen: "+freeAddr(t)+"\n"), 0o600)
	for _, args := range [][]string{{"rollout", "status", "--tool", "x"}, {"actions", "list"}} {
		r := runCLI(t, "", append(args, "--config", dead, "--key", roOncall)...)
		if r.code != 2 || !strings.Contains(r.stderr, "--gateway") || !strings.Contains(r.stderr, "TOOLGATE_URL") || !strings.Contains(r.stderr, "dead.yaml's listen") {
			t.Fatalf("%v against a dead address: %d %s", args, r.code, r.stderr)
		}
	}
}

// TestConcurrentRollbacksDoNotCancel (issue 30, item 2): two operators
// roll back at once, each having read the rollout, sending what
// `toolgate rollout rollback` sends (the version it restores, and the
// revision it read, or the version alone): one is applied, the other is
// refused with 409, and the default ends at the previous one — not back
// where it started. Five tries of each body.
func TestConcurrentRollbacksDoNotCancel(t *testing.T) {
	t.Parallel()
	for try := range 10 {
		base := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
		clk := &frozen{t: base}
		url, _ := rolloutGateway(t, clk, []gate.Approval{{Approver: "jane.doe", Tool: "refund.create_request", Version: "2.1.0", ApprovedAt: base.Add(-time.Hour), Source: "approvals/x.yaml"}})
		cli := func(args ...string) cliResult {
			return runCLI(t, "", append(append([]string{"rollout"}, args...), "--gateway", url, "--key", roOncall, "--format", "json")...)
		}
		if r := cli("promote", "--tool", "refund.create_request", "--version", "2.1.0"); r.code != 0 {
			t.Fatalf("promote: %d %s", r.code, r.stderr)
		}
		var read client.Rollout
		json.Unmarshal([]byte(cli("status", "--tool", "refund.create_request").stdout), &read)
		body := fmt.Sprintf(`{"version":%q,"revision":%d}`, read.Previous, read.Revision)
		if try%2 == 1 {
			body = fmt.Sprintf(`{"version":%q}`, read.Previous)
		}
		var wg sync.WaitGroup
		codes := make([]int, 2)
		for i := range codes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req, _ := http.NewRequest("POST", url+"/v1/rollouts/refund.create_request/rollback", strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+roOncall)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
				codes[i] = resp.StatusCode
			}()
		}
		wg.Wait()
		var got client.Rollout
		json.Unmarshal([]byte(cli("status", "--tool", "refund.create_request").stdout), &got)
		slices.Sort(codes)
		if codes[0] != 200 || codes[1] != 409 || got.Default != "2.2.0" || got.Revision != 2 {
			t.Fatalf("try %d (%s): answers %v, default %s at revision %d; want 200 and 409, 2.2.0 at 2", try, body, codes, got.Default, got.Revision)
		}
	}
	// The CLI reads the rollout and sends its revision and the version it restores.
	clk := &frozen{t: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}
	var seen []string
	url, _ := rolloutGateway(t, clk, []gate.Approval{{Approver: "jane.doe", Tool: "refund.create_request", Version: "2.1.0", ApprovedAt: clk.t.Add(-time.Hour), Source: "approvals/x.yaml"}})
	spy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		seen = append(seen, r.Method+" "+r.URL.Path+" "+string(b))
		req, _ := http.NewRequest(r.Method, url+r.URL.Path, bytes.NewReader(b))
		req.Header = r.Header.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), 502)
			return
		}
		defer resp.Body.Close()
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	}))
	defer spy.Close()
	runCLI(t, "", "rollout", "promote", "--tool", "refund.create_request", "--version", "2.1.0", "--gateway", url, "--key", roOncall)
	if r := runCLI(t, "", "rollout", "rollback", "--tool", "refund.create_request", "--gateway", spy.URL, "--key", roOncall); r.code != 0 {
		t.Fatalf("rollback: %d %s", r.code, r.stderr)
	}
	// It sends the default it rolls back from (the server compare-and-sets
	// on it), not the revision: a deprecation stamp in between is no conflict.
	if len(seen) < 2 || !strings.HasPrefix(seen[0], "GET ") || !strings.Contains(seen[1], `"version":"2.2.0"`) || !strings.Contains(seen[1], `"from":"2.1.0"`) {
		t.Fatalf("the CLI sent %q", seen)
	}
}

// TestRollbackAndPromoteBackNeedNoFreshApproval (issue 27, item 4): a
// rollback restores the previous default without an approval; promoting
// back to an earlier version reads the approval written for it before;
// --approver (or --approval) records an approval as the gate's --approval
// does; and a file's approver is what the history records.
func TestRollbackAndPromoteBackNeedNoFreshApproval(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	clk := &frozen{t: base}
	url, _ := rolloutGateway(t, clk, []gate.Approval{{Approver: "payments-lead", Tool: "refund.create_request", Version: "2.1.0", ApprovedAt: base.Add(-time.Hour), Source: "approvals/refund-2.1.0.yaml"}})
	cli := func(args ...string) cliResult {
		return runCLI(t, "", append(append([]string{"rollout"}, args...), "--gateway", url, "--key", roOncall, "--format", "json")...)
	}
	hist := func() client.Rollout {
		var r client.Rollout
		json.Unmarshal([]byte(cli("status", "--tool", "refund.create_request").stdout), &r)
		return r
	}
	if r := cli("promote", "--tool", "refund.create_request", "--version", "2.1.0", "--approver", "ciso-alice"); r.code != 0 {
		t.Fatalf("promote 2.1.0: %d %s", r.code, r.stderr)
	}
	if h := hist().History[0]; h.Approver != "payments-lead" || h.ApprovalSource != "approvals/refund-2.1.0.yaml" {
		t.Fatalf("the body's approver overrode the file's: %+v", h)
	}
	if r := cli("rollback", "--tool", "refund.create_request"); r.code != 0 {
		t.Fatalf("rollback without an approval: %d %s", r.code, r.stderr)
	}
	if r := cli("promote", "--tool", "refund.create_request", "--version", "2.1.0"); r.code != 0 {
		t.Fatalf("promote back to the approved 2.1.0: %d %s", r.code, r.stderr)
	}
	if r := cli("rollback", "--tool", "refund.create_request"); r.code != 0 {
		t.Fatalf("rollback: %d %s", r.code, r.stderr)
	}
	// Where no approvals/ file approves: refused, then approved by name
	// as the gate's --approval.
	url2, _ := rolloutGateway(t, clk, nil)
	cli2 := func(args ...string) cliResult {
		return runCLI(t, "", append(append([]string{"rollout"}, args...), "--gateway", url2, "--key", roOncall, "--format", "json")...)
	}
	if r := cli2("promote", "--tool", "refund.create_request", "--version", "2.1.0"); r.code != 1 || !strings.Contains(r.stderr, "approval_required") || !strings.Contains(r.stderr, "--approver") {
		t.Fatalf("promote of an unapproved version: %d %s", r.code, r.stderr)
	}
	if r := cli2("promote", "--tool", "refund.create_request", "--version", "2.1.0", "--approval", "jane.doe"); r.code != 0 {
		t.Fatalf("promote --approval: %d %s", r.code, r.stderr)
	}
	var r2 client.Rollout
	json.Unmarshal([]byte(cli2("status", "--tool", "refund.create_request").stdout), &r2)
	if h := r2.History[0]; h.Approver != "jane.doe" || h.ApprovalSource != "--approver" {
		t.Fatalf("the approval by name: %+v", h)
	}
}
