package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryCommandFindsToolsDirTheSameWay: in a directory whose toolgate.yaml
// names a tools directory other than ./agent-tools, every command that reads
// a tools directory finds it with no DIR and no --dir, as check and serve do;
// a toolgate.yaml that does not load is named, with the way around it.
func TestEveryCommandFindsToolsDirTheSameWay(t *testing.T) {
	src, err := filepath.Abs(exampleTools)
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	copyTree(t, src, filepath.Join(work, "tools"))
	if err := os.WriteFile(filepath.Join(work, "toolgate.yaml"), []byte("tools_dir: ./tools\nledger: sqlite://./toolgate.db\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "args.json"), []byte(`{"order_id":"ord_8Xk2Lm9Q"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(work)
	commands := [][]string{
		{"lint"},
		{"check"},
		{"test"},
		{"export", "--format", "openai"},
		{"validate", "--tool", "orders.get_order", "args.json"},
		{"diff", "orders.get_order@1.0.0", "orders.get_order@1.0.0"},
		{"gate", "--tool", "orders.get_order", "--from", "1.0.0", "--to", "1.0.0"},
	}
	for _, args := range commands {
		r := runCLI(t, "", args...)
		if r.code == exitUsage || strings.Contains(r.stderr, "agent-tools") {
			t.Errorf("toolgate %s: exit %d; it did not read tools_dir from ./toolgate.yaml:\n%s%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
		}
	}
	if err := os.WriteFile("toolgate.yaml", []byte("tools_dir: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"lint"}, {"test"}} {
		r := runCLI(t, "", args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "toolgate.yaml") || !strings.Contains(r.stderr, "DIR") {
			t.Errorf("toolgate %s with a broken toolgate.yaml: exit %d\n%s", args[0], r.code, r.stderr)
		}
	}
	// A DIR or --dir still wins over the configuration.
	if r := runCLI(t, "", "lint", "--dir", "tools"); r.code == exitUsage {
		t.Errorf("lint --dir tools: exit %d\n%s", r.code, r.stderr)
	}
}
