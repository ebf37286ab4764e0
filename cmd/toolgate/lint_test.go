package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLintExamplesClean(t *testing.T) {
	t.Parallel()
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			got := runCLI(t, "", "lint", exampleTools, "--format", format)
			if got.code != exitOK {
				t.Fatalf("lint examples: %s", got)
			}
			assertGoldenFile(t, filepath.Join("lint", "examples_"+format+".golden"), got.String())
		})
	}
}

// copyTree copies a directory tree (the examples) so a test can break the copy.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		if info.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// edit rewrites a file of the copy, replacing old with new exactly once.
func edit(t *testing.T, dir, file, old, new string) {
	t.Helper()
	path := filepath.Join(dir, file)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(string(b), old) != 1 {
		t.Fatalf("%s: %q occurs %d times", file, old, strings.Count(string(b), old))
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(b), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestLintBrokenCopy breaks a copy of the examples in many ways and expects every problem
// listed, each with its file and line.
func TestLintBrokenCopy(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyTree(t, exampleTools, dir)
	pay := "payments.issue_refund/schemas/v1.0.0.json"
	edit(t, dir, pay, `"additionalProperties": false,
    "properties": {
      "order_id"`, `"properties": {
      "order_id"`)
	edit(t, dir, pay, `"type": "integer",
        "minimum": 1,
        "x-impact": "funds",`, `"type": "number",
        "minimum": 1,
        "x-impact": "funds",`)
	edit(t, dir, pay, `"description": "Support ticket documenting a service failure, e.g. TCK-1042."`, `"title": "ticket"`)
	edit(t, dir, pay, `{"code": "RATE_LIMITED", "category": "rate_limit", "http_status": 429, "retryable": true}`, `{"code": "RATE_LIMITED", "http_status": 429, "retryable": true}`)
	edit(t, dir, pay, ` or service_failure (we failed to deliver; needs ticket_id).`, `.`)
	edit(t, dir, "payments.issue_refund/owner.yaml", "risk_level: high\n", "")
	// a load problem: a rule that does not compile in refund.create_request 2.2.0
	edit(t, dir, "refund.create_request/schemas/v2.2.0.json", `"rule": "args.reason_code != 'service_failure' || has(args.ticket_id)"`, `"rule": "args.reason_code != 'service_failure' ||"`)
	// a load problem in YAML, with a line
	edit(t, dir, "refund.create_request/release-policy.yaml", "deprecation_window_days: 30\n", "deprecation_window_days: [30\n")
	edit(t, dir, "refund.create_request/changelog.md", "## 2.1.0", "## 2.2.0")
	edit(t, dir, "payments.issue_refund/changelog.md", "## 1.0.0", "## First release")
	if err := os.RemoveAll(filepath.Join(dir, "refund.create_request", "contracts", "golden")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "orders.get_order", "changelog.md")); err != nil {
		t.Fatal(err)
	}
	got := runCLI(t, "", "lint", dir)
	if got.code != exitNegative {
		t.Fatalf("want exit 1: %s", got)
	}
	text := strings.ReplaceAll(got.String(), dir, "$DIR")
	text = strings.ReplaceAll(text, string(filepath.Separator), "/")
	assertGoldenFile(t, filepath.Join("lint", "broken_copy.golden"), text)
	for _, want := range []string{
		"$DIR/payments.issue_refund/schemas/v1.0.0.json:7: error [object-not-closed]",
		"[money-not-integer]", "[property-undescribed]", "[error-category-missing]", "[enum-undescribed]",
		"payments.issue_refund/owner.yaml: error [risk-level-missing]",
		"refund.create_request/schemas/v2.2.0.json:", "[load] refund.create_request v2.2.0: rule service_failure_needs_ticket does not compile",
		"refund.create_request/release-policy.yaml:", "[golden-cases-missing]",
		"orders.get_order/changelog.md: error [changelog-missing]",
		"payments.issue_refund/changelog.md: error [changelog-version-missing]",
		"refund.create_request/changelog.md:8: error [versions-not-monotonic]",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

func TestLintUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		code int
	}{
		{"missing directory", []string{"lint", filepath.Join(t.TempDir(), "absent")}, exitUsage},
		{"bad format", []string{"lint", exampleTools, "--format", "xml"}, exitUsage},
		{"two dirs", []string{"lint", "a", "b"}, exitUsage},
		{"help", []string{"lint", "--help"}, exitOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := runCLI(t, "", tt.args...); got.code != tt.code {
				t.Errorf("exit %d, want %d: %s", got.code, tt.code, got)
			}
		})
	}
}
