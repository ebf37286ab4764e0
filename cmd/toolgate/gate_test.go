package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/lockfile"
)

const compatibleTools = "testdata/gate/compatible"

var gateRefund = []string{"gate", "--tool", "refund.create_request", "--from", "2.1.0", "--to", "2.2.0"}

// TestGateCommand: the bundled 2.1.0 -> 2.2.0 release blocks with a reviewer's reasons; a
// compatible change with passing cases is allowed.
func TestGateCommand(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		args   []string
		code   int
		golden string
	}{
		{name: "block text", args: []string{exampleTools}, code: exitNegative, golden: "block.text.golden"},
		{name: "block line", args: []string{exampleTools, "--format", "line"}, code: exitNegative, golden: "block.line.golden"},
		{name: "block markdown", args: []string{exampleTools, "--format", "markdown"}, code: exitNegative, golden: "block.markdown.golden"},
		{name: "block json", args: []string{exampleTools, "--format", "json"}, code: exitNegative, golden: "block.json.golden"},
		{name: "block junit", args: []string{exampleTools, "--format", "junit"}, code: exitNegative, golden: "block.junit.golden"},
		{name: "approval flag", args: []string{exampleTools, "--approval", "jane.doe", "--format", "line"}, code: exitNegative, golden: "block_approved.line.golden"},
		{name: "allow text", args: []string{compatibleTools}, code: exitOK, golden: "allow.text.golden"},
		{name: "allow markdown", args: []string{"--dir", compatibleTools, "--format", "markdown"}, code: exitOK, golden: "allow.markdown.golden"},
		{name: "allow line", args: []string{compatibleTools, "--format", "line"}, code: exitOK, golden: "allow.line.golden"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := runCLI(t, "", append(append([]string{}, gateRefund...), tt.args...)...)
			if got.code != tt.code {
				t.Fatalf("exit %d, want %d\n%s", got.code, tt.code, got)
			}
			out := got.stdout
			if strings.Contains(tt.name, "approval") || strings.Contains(tt.name, "json") {
				out = scrubTimes(out)
			}
			assertGoldenFile(t, filepath.Join("gate", tt.golden), out)
		})
	}
	// The reasons a reviewer expects.
	got := runCLI(t, "", append(append([]string{}, gateRefund...), exampleTools, "--format", "json")...)
	var d struct {
		Decision string   `json:"decision"`
		Reasons  []string `json:"reasons"`
	}
	if err := json.Unmarshal([]byte(got.stdout), &d); err != nil {
		t.Fatal(err)
	}
	all := strings.Join(d.Reasons, "\n")
	for _, want := range []string{"major change needs a major bump", "Missing approval_channel in old prompt path", "approval required"} {
		if d.Decision != "block" || !strings.Contains(all, want) {
			t.Errorf("decision %s, reasons lack %q:\n%s", d.Decision, want, all)
		}
	}
}

func scrubTimes(s string) string {
	// the --approval flag stamps the current time
	for _, f := range strings.Fields(s) {
		if _, err := time.Parse(time.RFC3339, strings.Trim(f, `",()`)); err == nil {
			s = strings.ReplaceAll(s, strings.Trim(f, `",()`), "$TIME")
		}
	}
	return s
}

func TestGateUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "missing versions", args: []string{"gate", "--tool", "refund.create_request", exampleTools}, want: "--tool, --from and --to are required"},
		{name: "unknown version", args: append(append([]string{}, gateRefund[:5]...), "--to", "3.0.0", exampleTools), want: `no version "3.0.0"`},
		{name: "unknown tool", args: []string{"gate", "--tool", "x.y", "--from", "1.0.0", "--to", "1.0.1", exampleTools}, want: `no tool "x.y"`},
		{name: "bad format", args: append(append([]string{}, gateRefund...), exampleTools, "--format", "html"), want: "unknown --format"},
		{name: "empty approval", args: append(append([]string{}, gateRefund...), exampleTools, "--approval", " "), want: "approver's name"},
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

// copyCompatible copies the compatible fixture into a temporary directory.
func copyCompatible(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(compatibleTools)); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestGateLockAndDeprecation: a released file edited in place blocks the gate and fails
// lint; a dropped version must have been deprecated for the policy's window.
func TestGateLockAndDeprecation(t *testing.T) {
	t.Parallel()
	day := 24 * time.Hour
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string)
		code  int
		want  string
	}{
		{name: "released file edited in place", setup: func(t *testing.T, dir string) {
			edit(t, dir, "refund.create_request/schemas/v2.1.0.json", `"maxLength": 500`, `"maxLength": 400`)
		}, code: exitNegative, want: "released version refund.create_request 2.1.0 changed in place"},
		{name: "dropped inside the window", setup: func(t *testing.T, dir string) {
			dropped(t, dir, time.Now().Add(-5*day))
		}, code: exitNegative, want: "v2.0.0 is dropped 5 days after its deprecation; the window is 30 days"},
		{name: "dropped after the window", setup: func(t *testing.T, dir string) {
			dropped(t, dir, time.Now().Add(-40*day))
		}, code: exitOK, want: "v2.0.0 dropped 40 days after its deprecation"},
		{name: "dropped without deprecation", setup: func(t *testing.T, dir string) {
			dropped(t, dir, time.Time{})
		}, code: exitNegative, want: "toolgate.lock has no deprecated_at"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := copyCompatible(t)
			tt.setup(t, dir)
			got := runCLI(t, "", append(append([]string{}, gateRefund...), dir)...)
			if got.code != tt.code || !strings.Contains(got.stdout, tt.want) {
				t.Fatalf("want exit %d and %q:\n%s", tt.code, tt.want, got)
			}
			if strings.Contains(tt.name, "edited") {
				if lint := runCLI(t, "", "lint", dir); lint.code != exitNegative || !strings.Contains(lint.stdout, "[locked-version-changed]") {
					t.Fatalf("lint: %s", lint)
				}
				if lock := runCLI(t, "", "lock", dir); lock.code != exitNegative || !strings.Contains(lock.stderr, "immutable") {
					t.Fatalf("lock: %s", lock)
				}
			}
		})
	}
}

// dropped records a released v2.0.0 in the lock whose file is gone, deprecated at since
// (zero: never deprecated).
func dropped(t *testing.T, dir string, since time.Time) {
	t.Helper()
	l, err := lockfile.Read(dir)
	if err != nil || l == nil {
		t.Fatalf("read lock: %v", err)
	}
	e := lockfile.Entry{Tool: "refund.create_request", Version: "2.0.0", File: "refund.create_request/schemas/v2.0.0.json",
		Digest: lockfile.Digest([]byte("{}")), LockedAt: time.Now().Add(-100 * day()).UTC().Truncate(time.Second)}
	if !since.IsZero() {
		s := since.UTC()
		e.DeprecatedAt = &s
	}
	l.Versions = append([]lockfile.Entry{e}, l.Versions...)
	if err := os.WriteFile(filepath.Join(dir, lockfile.FileName), l.Marshal(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func day() time.Duration { return 24 * time.Hour }

// uncoveredTools holds shop.place_order (risk_level high) at 1.0.0, 1.1.0 and a breaking
// 2.0.0, with one golden case, written for 1.0.0: nothing covers 2.0.0.
const uncoveredTools = "testdata/gate/uncovered"

// TestZeroCasesIsNotAPass: a pass rate over no case is not a pass. A major change of a
// high-risk tool that no golden or regression case covers blocks in test and gate, in every
// format, naming the version and the fix; a tool with no case at all is "no cases", not
// "allow release"; declaring the 1.x case to cover 2.x (tool.versions) lifts the block.
func TestZeroCasesIsNotAPass(t *testing.T) {
	t.Parallel()
	release := []string{"--tool", "shop.place_order", "--from", "1.1.0", "--to", "2.0.0"}
	covered := t.TempDir()
	if err := os.CopyFS(covered, os.DirFS(uncoveredTools)); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join(covered, "shop.place_order", "contracts", "golden", "place_order.yaml")
	b, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	// The 1.0.0 case is declared to cover 2.x; for 2.0.0 it now needs sales_channel.
	b = []byte(strings.NewReplacer(
		"version: 1.0.0}", `version: 1.0.0, versions: ["2.x"]}`,
		`currency: "EUR"}`, `currency: "EUR", sales_channel: "web"}`).Replace(string(b)))
	if err := os.WriteFile(golden, b, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		golden string
		args   []string
		code   int
	}{
		{"test_uncovered.text", append([]string{"test", uncoveredTools}, release...), exitNegative},
		{"test_uncovered.json", append([]string{"test", uncoveredTools, "--format", "json"}, release...), exitNegative},
		{"test_uncovered.junit", append([]string{"test", uncoveredTools, "--format", "junit"}, release...), exitNegative},
		{"test_uncovered.markdown", append([]string{"test", uncoveredTools, "--format", "markdown"}, release...), exitNegative},
		{"test_no_cases.text", []string{"test", exampleTools, "--tool", "orders.get_order"}, exitNegative},
		{"test_no_cases.junit", []string{"test", exampleTools, "--tool", "orders.get_order", "--format", "junit"}, exitNegative},
		{"gate_uncovered.text", append([]string{"gate", uncoveredTools, "--approval", "jane.doe"}, release...), exitNegative},
		{"gate_uncovered.json", append([]string{"gate", uncoveredTools, "--approval", "jane.doe", "--format", "json"}, release...), exitNegative},
		{"gate_uncovered.junit", append([]string{"gate", uncoveredTools, "--approval", "jane.doe", "--format", "junit"}, release...), exitNegative},
		{"gate_uncovered.markdown", append([]string{"gate", uncoveredTools, "--approval", "jane.doe", "--format", "markdown"}, release...), exitNegative},
		{"gate_uncovered.line", append([]string{"gate", uncoveredTools, "--approval", "jane.doe", "--format", "line"}, release...), exitNegative},
		{"test_covered.text", append([]string{"test", covered}, release...), exitOK},
		{"gate_covered.line", append([]string{"gate", covered, "--approval", "jane.doe", "--format", "line"}, release...), exitOK},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			t.Parallel()
			got := runCLI(t, "", tt.args...)
			if got.code != tt.code {
				t.Fatalf("exit %d, want %d\n%s", got.code, tt.code, got)
			}
			out := strings.ReplaceAll(scrubTimes(got.stdout), covered, "$DIR")
			if tt.code == exitNegative && !strings.Contains(out, "v2.0.0") && !strings.Contains(out, "v1.0.0") {
				t.Errorf("the block names no version:\n%s", out)
			}
			if strings.Contains(out, "0 / 0") || strings.Contains(out, "allow release") && tt.code != exitOK {
				t.Errorf("a replay of nothing reads as a pass:\n%s", out)
			}
			assertGoldenFile(t, filepath.Join("gate", "zero_cases", tt.golden+".golden"), out)
		})
	}
}
