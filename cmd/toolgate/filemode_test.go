package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/config"
)

// Everything toolgate creates that holds call data is 0600, and serve warns
// about an existing such file that other users can read.
func TestServeWarnsAboutReadableCallData(t *testing.T) {
	t.Parallel()
	tools, err := filepath.Abs("../../examples/agent-tools")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	db, dlog := filepath.Join(dir, "ledger.db"), filepath.Join(dir, "decisions.jsonl")
	cfg := config.Default()
	cfg.Listen, cfg.ToolsDir, cfg.Ledger = "127.0.0.1:0", tools, "sqlite://"+db
	cfg.DecisionLog.Path = dlog

	// A first start creates the files owner-only, and says nothing.
	var first bytes.Buffer
	rt, err := startGateway(context.Background(), cfg, &first)
	if err != nil {
		t.Fatal(err)
	}
	rt.Close()
	for _, p := range []string{db, db + "-wal", db + "-shm", dlog} {
		if fi, err := os.Stat(p); err == nil && fi.Mode().Perm() != 0o600 {
			t.Errorf("%s created with mode %#o", filepath.Base(p), fi.Mode().Perm())
		}
	}
	if strings.Contains(first.String(), "readable") {
		t.Fatalf("a warning about files toolgate made itself:\n%s", first.String())
	}

	// Someone opened them up: the next start says which and how to fix it.
	for _, p := range []string{db, dlog} {
		if err := os.Chmod(p, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var second bytes.Buffer
	rt, err = startGateway(context.Background(), cfg, &second)
	if err != nil {
		t.Fatal(err)
	}
	rt.Close()
	for _, p := range []string{db, dlog} {
		if !strings.Contains(second.String(), "warning: "+p+" is readable by other users (mode 0644)") || !strings.Contains(second.String(), "chmod 600 "+p) {
			t.Errorf("no warning for %s:\n%s", p, second.String())
		}
	}
}

func TestCapturedCasesAreOwnerOnly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyTree(t, exampleTools, dir)
	logFile := filepath.Join(t.TempDir(), "decisions.jsonl")
	if err := os.WriteFile(logFile, []byte(refundLog), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := runCLI(t, "", "cases", "capture", "--tool", "refund.create_request", "--from-log", logFile, dir); got.code != exitOK {
		t.Fatal(got)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "refund.create_request", "contracts", "shadow", "shadow_*.yaml"))
	written := 0
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Base(f) != "shadow_0001.yaml" { // shipped with the examples
			written++
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("%s has mode %#o", filepath.Base(f), fi.Mode().Perm())
			}
		}
	}
	if written == 0 {
		t.Fatal("no case captured")
	}
}
