package gateway_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/gateway/gatewaytest"
	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/internal/testrig"
	"github.com/toolgate/toolgate/invoke"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/ledger/postgres"
)

// tasksReplica is one gateway on the PostgreSQL ledger at dsn; stop closes
// its HTTP server and its connections to the ledger (a gateway that is
// gone).
type tasksReplica struct {
	url  string
	stop func()
}

func newTasksReplica(t *testing.T, dsn, owner string, d *heldDownstream, approval bool) *tasksReplica {
	t.Helper()
	st, err := postgres.Open(context.Background(), postgres.Config{DSN: dsn, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	_, sbURL := testrig.Sandbox(t)
	b := testrig.Bindings(sbURL)
	b["refund.create_request"] = invoke.Binding{URL: d.url, Timeout: 30 * time.Second, RequireApproval: approval}
	cfg := gatewaytest.Config{
		Registry: testrig.Registry(t), Invoker: &invoke.Client{}, Bindings: b,
		Ledger:      &ledger.Service{Store: st, Lease: 30 * time.Second, Owner: owner},
		JoinTimeout: 5 * time.Second, Retention: time.Hour, MCPTaskAfter: 50 * time.Millisecond,
		Logger: testrig.Logger(t),
	}
	tasksKeys(&cfg)
	srv, err := gatewaytest.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			ts.CloseClientConnections()
			ts.Close()
			st.Close()
		}
	}
	t.Cleanup(stop)
	return &tasksReplica{url: ts.URL, stop: stop}
}

// TestMCPTasksAcrossReplicas: on a real PostgreSQL ledger, a task created
// on replica A is polled to completion on replica B; a task A created for
// an approval-held call is answered by B after A is gone, and completes
// once an operator approves it over B's /v1.
func TestMCPTasksAcrossReplicas(t *testing.T) {
	t.Parallel()
	dsn, _ := pgtest.Schema(t)
	d := newHeldDownstream(t)
	a := newTasksReplica(t, dsn, "replica-a", d, false)
	b := newTasksReplica(t, dsn, "replica-b", d, false)

	release := d.hold()
	defer release()
	call := `{"name":"refund.create_request","arguments":{` + refundRequestArgs + `,"idempotency_key":"replicas-slow-0001"}}`
	created := mustResult(t)(mcpRPC(t, a.url, "key-tasks-a", "tools/call", call, true))
	id, _ := created["taskId"].(string)
	if created["resultType"] != "task" || id == "" {
		t.Fatalf("replica A: %v", created)
	}
	<-d.arrived
	onB := mustResult(t)(mcpRPC(t, b.url, "key-tasks-a", "tasks/get", `{"taskId":"`+id+`"}`, true))
	if onB["status"] != "working" || !strings.HasPrefix(onB["statusMessage"].(string), "running") {
		t.Fatalf("replica B while A's call is in flight: %v", onB)
	}
	release()
	done := pollTask(t, b.url, "key-tasks-a", id)
	if res, _ := done["result"].(map[string]any); done["status"] != "completed" || res["isError"] == true {
		t.Fatalf("replica B: %v", done)
	}
	replay := mustResult(t)(mcpRPC(t, b.url, "key-tasks-a", "tools/call", call, false))
	if x, y := comparable(done["result"].(map[string]any)), comparable(replay); x != y {
		t.Errorf("task result on B and replay on B differ:\n%s\n%s", x, y)
	}

	// A gateway that is gone loses no task: held on A, answered by B.
	ha := newTasksReplica(t, dsn, "replica-c", d, true)
	hb := newTasksReplica(t, dsn, "replica-d", d, true)
	held := mustResult(t)(mcpRPC(t, ha.url, "key-tasks-a", "tools/call",
		`{"name":"refund.create_request","arguments":{`+refundRequestArgs+`,"idempotency_key":"replicas-held-0001"}}`, true))
	hid, _ := held["taskId"].(string)
	if held["resultType"] != "task" || hid == "" {
		t.Fatalf("held call on A: %v", held)
	}
	ha.stop()
	still := mustResult(t)(mcpRPC(t, hb.url, "key-tasks-a", "tasks/get", `{"taskId":"`+hid+`"}`, true))
	if still["status"] != "working" || !strings.HasPrefix(still["statusMessage"].(string), "awaiting_approval") {
		t.Fatalf("B after A is gone: %v", still)
	}
	req, _ := http.NewRequest("POST", hb.url+"/v1/actions/replicas-held-0001/approve", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer key-tasks-op")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("approve on B: %d", resp.StatusCode)
	}
	after := pollTask(t, hb.url, "key-tasks-a", hid)
	if res, _ := after["result"].(map[string]any); after["status"] != "completed" || res["isError"] == true {
		t.Fatalf("approved on B: %v", after)
	}
	if n := d.count.Load(); n != 2 {
		t.Errorf("downstream answered %d requests, want 2", n)
	}
}
