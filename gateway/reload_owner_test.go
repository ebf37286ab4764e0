package gateway_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/examples"
	"github.com/toolgate/toolgate/toolcall"
)

// TestReloadedOwnerIsRead: after a reload that changes a tool's owner
// (owner.yaml), an action's read and the per-tool metrics' owner label name
// the new owner, not the one loaded at start.
func TestReloadedOwnerIsRead(t *testing.T) {
	t.Parallel()
	g := newRig(t)
	if r := g.refund("owner-reload-0001", okArgs); r.status != 201 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	const tool = "payments.issue_refund"
	if got := g.action("owner-reload-0001")["owner"]; got != "payment-platform" {
		t.Fatalf("owner before the reload %v, want payment-platform", got)
	}
	g.series("toolgate_hold_after_seconds", map[string]string{"tool_id": tool, "owner": "payment-platform"})

	dir := t.TempDir()
	if err := os.CopyFS(dir, examples.AgentTools()); err != nil {
		t.Fatal(err)
	}
	ownerFile := filepath.Join(dir, tool, "owner.yaml")
	if err := os.WriteFile(ownerFile, []byte("owner: refunds-team\nrisk_level: high\nconsumers: [customer_service_agent, ops_agent]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	reg, err := contract.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.server.Reload(toolcall.Tools{Registry: reg}); err != nil {
		t.Fatal(err)
	}
	if got := g.action("owner-reload-0001")["owner"]; got != "refunds-team" {
		t.Errorf("owner after the reload %v, want refunds-team", got)
	}
	g.series("toolgate_hold_after_seconds", map[string]string{"tool_id": tool, "owner": "refunds-team"})
}
