package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/ledger/sqlite"
)

const secretNote = "Customer Jane Roe, IBAN DE89370400440532013000, call +49 151 2345"

const refundLog = `{"tool_id":"refund.create_request","tool_version":"2.2.0","status_code":201,"outcome":"executed","arguments":{"order_id":"ord_777","reason_code":"customer_request","approval_channel":"phone","note":"` + secretNote + `"},"result":{"request_id":"rr_777","status":"pending_review","review_eta_hours":24},"masked":[],"erased":[]}
{"tool_id":"refund.create_request","tool_version":"2.2.0","status_code":201,"outcome":"executed","arguments":{"order_id":"ord_778","reason_code":"customer_request","approval_channel":"phone","note":"***"},"result":{"request_id":"rr_778","status":"submitted"},"masked":["/arguments/note"],"erased":[]}
{"tool_id":"refund.create_request","tool_version":"2.1.0","status_code":201,"outcome":"executed","arguments":{"order_id":"ord_779","reason_code":"duplicate_charge","amount_cents":500},"result":{"request_id":"rr_779","status":"submitted"},"masked":[],"erased":[]}
`

func TestCasesCapture(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyTree(t, exampleTools, dir)
	logFile := filepath.Join(t.TempDir(), "decisions.jsonl")
	if err := os.WriteFile(logFile, []byte(refundLog), 0o644); err != nil {
		t.Fatal(err)
	}
	dry := runCLI(t, "", "cases", "capture", "--tool", "refund.create_request", "--from-log", "-", "--dry-run", dir)
	if dry.code != exitOK {
		t.Fatal(dry)
	}
	got := runCLI(t, "", "cases", "capture", "--tool", "refund.create_request", "--from-log", logFile, "--agent", "customer_service_agent", dir)
	if got.code != exitOK {
		t.Fatal(got)
	}
	assertGoldenFile(t, filepath.Join("cases", "capture.golden"), strings.ReplaceAll(got.String(), dir, "$DIR"))
	shadow := filepath.Join(dir, "refund.create_request", "contracts", "shadow")
	files, _ := filepath.Glob(filepath.Join(shadow, "shadow_*.yaml"))
	var all strings.Builder
	for _, f := range files {
		if filepath.Base(f) == "shadow_0001.yaml" {
			continue
		}
		b, _ := os.ReadFile(f)
		all.Write(b)
		all.WriteString("---\n")
	}
	if strings.Contains(all.String(), "Jane") || strings.Contains(all.String(), "DE89") || strings.Contains(all.String(), "***") {
		t.Fatalf("a sensitive value reached a case:\n%s", all.String())
	}
	assertGoldenFile(t, filepath.Join("cases", "captured.golden"), all.String())
	// The directory still lints clean and the captured cases replay.
	if lint := runCLI(t, "", "lint", dir); lint.code != exitOK {
		t.Fatalf("lint after capture: %s", lint)
	}
	if rerun := runCLI(t, "", "cases", "capture", "--tool", "refund.create_request", "--from-log", logFile, dir); !strings.Contains(rerun.stdout, "3 duplicate shapes") {
		t.Fatalf("re-capture: %s", rerun)
	}
}

func TestCasesCaptureFromLedger(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyTree(t, exampleTools, dir)
	db := filepath.Join(t.TempDir(), "toolgate.db")
	ctx := context.Background()
	store, err := sqlite.Open(ctx, sqlite.Config{Path: db})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for i, args := range []string{
		`{"approval_channel":"chat","note":"` + secretNote + `","order_id":"ord_1","reason_code":"customer_request"}`,
		`{"amount_cents":1200,"approval_channel":"email","note":"private: 4111 1111 1111 1111","order_id":"ord_2","reason_code":"customer_request"}`,
	} {
		a := &ledger.Action{Tenant: "acme", ID: "act-" + string(rune('1'+i)), ToolID: "refund.create_request", Version: "2.2.0",
			State: ledger.Succeeded, Arguments: []byte(args), ArgsDigest: "sha256:x", CreatedAt: at.Add(time.Duration(i) * time.Second), UpdatedAt: at,
			Result: &ledger.Result{StatusCode: 201, ContentType: "application/json", Body: []byte(`{"request_id":"rr_1","status":"submitted"}`)}}
		if err := store.Insert(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	store.Close()
	got := runCLI(t, "", "cases", "capture", "--tool", "refund.create_request", "--from-ledger", "sqlite://"+db, "--tenant", "acme", "--dry-run", dir)
	if got.code != exitOK || strings.Count(got.stdout, "case_id:") != 2 {
		t.Fatalf("%s", got)
	}
	for _, s := range []string{"Jane", "DE89", "4111"} {
		if strings.Contains(got.stdout, s) {
			t.Fatalf("%q leaked:\n%s", s, got.stdout)
		}
	}
	if empty := runCLI(t, "", "cases", "capture", "--tool", "refund.create_request", "--from-ledger", "sqlite://"+db, dir); !strings.Contains(empty.stdout, "0 records") {
		t.Fatalf("default tenant: %s", empty)
	}
}

func TestCasesUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "no subcommand", args: []string{"cases"}, want: "Usage: toolgate cases capture"},
		{name: "no tool", args: []string{"cases", "capture", "--from-log", "x", exampleTools}, want: "--tool is required"},
		{name: "no source", args: []string{"cases", "capture", "--tool", "refund.create_request", exampleTools}, want: "exactly one of"},
		{name: "both sources", args: []string{"cases", "capture", "--tool", "refund.create_request", "--from-log", "x", "--from-ledger", "sqlite://y", exampleTools}, want: "exactly one of"},
		{name: "missing ledger file", args: []string{"cases", "capture", "--tool", "refund.create_request", "--from-ledger", "sqlite:///nonexistent/x.db", exampleTools}, want: "no such file"},
		{name: "bad dsn", args: []string{"cases", "capture", "--tool", "refund.create_request", "--from-ledger", "mysql://x", exampleTools}, want: "neither sqlite"},
		{name: "unknown tool", args: []string{"cases", "capture", "--tool", "nope.x", "--from-log", "x", exampleTools}, want: `no tool "nope.x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := runCLI(t, "", tt.args...)
			if got.code != exitUsage || !strings.Contains(got.stderr, tt.want) {
				t.Fatalf("want exit 2 and %q:\n%s", tt.want, got)
			}
		})
	}
}

func TestLockCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyTree(t, exampleTools, dir)
	if check := runCLI(t, "", "lock", "--check", dir); check.code != exitOK {
		t.Fatalf("the committed examples lock is stale: %s", check)
	}
	os.Remove(filepath.Join(dir, "toolgate.lock"))
	if check := runCLI(t, "", "lock", "--check", dir); check.code != exitNegative {
		t.Fatalf("missing lock passes --check: %s", check)
	}
	if got := runCLI(t, "", "lock", dir); got.code != exitOK || !strings.Contains(got.stdout, "4 released versions (4 new)") {
		t.Fatal(got)
	}
	edit(t, dir, "orders.get_order/schemas/v1.0.0.json", `"version": "1.0.0",`, `"version": "1.0.0", "x-acme-note": "edited",`)
	got := runCLI(t, "", "lock", dir)
	if got.code != exitNegative || !strings.Contains(got.stderr, "orders.get_order 1.0.0 changed in place") {
		t.Fatal(got)
	}
	if got := runCLI(t, "", "lock", "--force", dir); got.code != exitOK {
		t.Fatal(got)
	}
	if lint := runCLI(t, "", "lint", dir); lint.code != exitOK {
		t.Fatalf("lint after --force: %s", lint)
	}
}
