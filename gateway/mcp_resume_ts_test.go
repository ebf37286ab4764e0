package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/gateway/gatewaytest"
	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/internal/testrig"
	"github.com/toolgate/toolgate/invoke"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/ledger/postgres"
	"github.com/toolgate/toolgate/sandbox"
)

// TestMCPStreamResumedOnAnotherReplica: the official TypeScript MCP client
// calls a refund through replica A of two gateways on one PostgreSQL ledger;
// its stream is cut right after the priming event while the refund is in
// flight downstream. The client reconnects by itself, with Last-Event-ID, to
// replica B, and receives the answer A stored: the call returns the refund,
// and the downstream saw exactly one refund request.
func TestMCPStreamResumedOnAnotherReplica(t *testing.T) {
	t.Parallel()
	dir := tsClientDir(t)
	dsn, _ := pgtest.Schema(t)
	sb, sbURL := testrig.Sandbox(t)
	testrig.Fault(t, sb, sandbox.Fault{Path: "/refunds", Fault: "delay", DelayMS: 1500, Count: 1})
	logs := &testrig.Buffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the replicas' log:\n%s", logs.String())
		}
	})
	var urls []string
	for i := range 2 {
		st, err := postgres.Open(context.Background(), postgres.Config{DSN: dsn, MaxConns: 4})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		cfg := gatewaytest.Config{
			Registry: testrig.Registry(t), Invoker: &invoke.Client{}, Bindings: testrig.Bindings(sbURL),
			Ledger:      &ledger.Service{Store: st, Lease: 30 * time.Second, Owner: []string{"replica-a", "replica-b"}[i]},
			JoinTimeout: 5 * time.Second,
			Logger:      slog.New(slog.NewTextHandler(logs, nil)),
		}
		frontKeys(&cfg)
		srv, err := gatewaytest.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(contractChecked(t, srv))
		t.Cleanup(ts.Close)
		urls = append(urls, ts.URL+"/mcp")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "resume.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "REPLICA_A="+urls[0], "REPLICA_B="+urls[1], "TOOLGATE_KEY=key-all-agent")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node resume.mjs: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	var out struct {
		Result struct {
			IsError           bool           `json:"isError"`
			StructuredContent map[string]any `json:"structuredContent"`
			Meta              map[string]any `json:"_meta"`
		} `json:"result"`
		Seen []struct {
			Method       string `json:"method"`
			Replica      string `json:"replica"`
			LastEventID  string `json:"lastEventId"`
			Call         bool   `json:"call"`
			PrimingEvent string `json:"primingEvent"`
		} `json:"seen"`
		Errors []string `json:"errors"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("script output: %v\n%s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	t.Logf("requests: %+v; client errors: %q", out.Seen, out.Errors)

	var priming, resumedWith string
	calls := 0
	for _, s := range out.Seen {
		switch {
		case s.PrimingEvent != "":
			priming = s.PrimingEvent
		case s.Call:
			calls++
			if s.Replica != "A" {
				t.Errorf("a tools/call went to replica %s", s.Replica)
			}
		case s.LastEventID != "":
			if s.Replica != "B" || resumedWith != "" {
				t.Errorf("resumption %+v (an earlier one with %q)", s, resumedWith)
			}
			resumedWith = s.LastEventID
		}
	}
	m := regexp.MustCompile(`(?m)^id: (\S+_0)\nretry: 1000\n`).FindStringSubmatch(priming)
	if m == nil {
		t.Fatalf("the priming event %q has no id STREAM_0 and retry: 1000", priming)
	}
	if resumedWith != m[1] {
		t.Errorf("the client resumed with Last-Event-ID %q, want the priming event's %q", resumedWith, m[1])
	}
	if calls != 1 {
		t.Errorf("the client sent %d tools/call requests, want 1 (resumed, not re-sent)", calls)
	}
	r := out.Result
	if r.IsError || r.StructuredContent["amount_minor"] != float64(3100) || r.StructuredContent["status"] != "succeeded" ||
		r.Meta["toolgate/action_id"] != "ts-resume-0000001" || r.Meta["toolgate/replayed"] != false {
		t.Errorf("the resumed answer: %+v", r)
	}
	if !strings.HasPrefix(r.StructuredContent["refund_id"].(string), "re_") {
		t.Errorf("no refund id in %+v", r.StructuredContent)
	}
	testrig.WantEffects(t, sb, 1)
	if n := sb.Requests("/refunds"); n != 1 {
		t.Fatalf("the downstream saw %d refund requests, want exactly 1", n)
	}
}
