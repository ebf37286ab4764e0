package gateway

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolgate/toolgate/internal/testrig"
	"github.com/toolgate/toolgate/rollout"
	"github.com/toolgate/toolgate/toolcall"
)

// TestMCPToolListFollowsTheRollout: a session connected to a key's MCP
// server is sent notifications/tools/list_changed when the rollout changes
// the version that serves the key (here a canary naming it), and tools/list
// then describes that version; a halt changes it back, and notifies again.
func TestMCPToolListFollowsTheRollout(t *testing.T) {
	t.Parallel()
	_, sbURL := testrig.Sandbox(t)
	calls := toolcall.New(toolcall.Config{Registry: testrig.Registry(t), Ledger: testrig.Ledger(t, "mcp-lc"), Bindings: testrig.Bindings(sbURL), Logger: testrig.Logger(t)})
	s, err := New(Config{Calls: calls, Logger: testrig.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	p := s.noAuth
	changed := make(chan struct{}, 8)
	client := mcp.NewClient(&mcp.Implementation{Name: "lc-test", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	ct, st := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := s.mcp.serverOf(p).Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	required := func() string {
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range res.Tools {
			if strings.Contains(tl.Name, "create_request") {
				b, _ := json.Marshal(tl.InputSchema)
				return string(b)
			}
		}
		t.Fatal("no refund.create_request in tools/list")
		return ""
	}
	if !strings.Contains(required(), "approval_channel") {
		t.Fatal("the default 2.2.0 is not listed")
	}
	wait := func(what string) {
		t.Helper()
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("no notifications/tools/list_changed after %s", what)
		}
	}
	ch := toolcall.RolloutChange{Change: rollout.Change{Action: rollout.ActCanary, Version: "2.1.0", Principals: []string{p.Name}}}
	if _, err := s.calls.ChangeRollout(ctx, p, "refund.create_request", ch); err != nil {
		t.Fatal(err)
	}
	wait("the canary")
	if strings.Contains(required(), "approval_channel") {
		t.Fatal("tools/list still describes 2.2.0 to the canary's principal")
	}
	if _, err := s.calls.ChangeRollout(ctx, p, "refund.create_request", toolcall.RolloutChange{Change: rollout.Change{Action: rollout.ActHalt}}); err != nil {
		t.Fatal(err)
	}
	wait("the halt")
	if !strings.Contains(required(), "approval_channel") {
		t.Fatal("tools/list does not describe the default again after the halt")
	}
}
