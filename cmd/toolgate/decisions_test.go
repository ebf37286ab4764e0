package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// decisionsCopy copies the bundled examples (with their two rule records,
// locked) and applies edits: file -> func(contents) contents ("" deletes).
func decisionsCopy(t *testing.T, edits map[string]func(string) string) string {
	t.Helper()
	dir := t.TempDir()
	copyTree(t, exampleTools, dir)
	for file, f := range edits {
		path := filepath.Join(dir, filepath.FromSlash(file))
		b, _ := os.ReadFile(path)
		out := f(string(b))
		if out == "" {
			if err := os.RemoveAll(path); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func replace(old, new string) func(string) string {
	return func(s string) string { return strings.Replace(s, old, new, 1) }
}

func content(s string) func(string) string { return func(string) string { return s } }

const (
	v1Record = "decisions/refund-duplicate-charge-v1.yaml"
	v2Record = "decisions/refund-duplicate-charge-v2.yaml"
)

// Lint on rule records: a live record relying on a tool, field or enum value
// no current version has is an error; a locked record edited in place (or
// deleted) is an error that says to supersede it; a superseded record may
// rely on what is gone; an incomplete record is a warning.
func TestLintRuleRecords(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		edits map[string]func(string) string
		code  int
	}{
		{"value_unknown", map[string]func(string) string{v2Record: replace("{pointer: /reason, value: duplicate_charge}", "{pointer: /reason, value: duplicate_charg}"), "toolgate.lock": content("")}, exitNegative},
		{"field_unknown", map[string]func(string) string{v2Record: replace("{pointer: /customer_email}", "{pointer: /customer_mail}"), "toolgate.lock": content("")}, exitNegative},
		{"tool_unknown", map[string]func(string) string{v2Record: replace("tool: payments.issue_refund", "tool: payments.issue_refnd"), "toolgate.lock": content("")}, exitNegative},
		{"edited_in_place", map[string]func(string) string{v2Record: replace("confirm by SMS", "confirm by letter")}, exitNegative},
		{"removed", map[string]func(string) string{v2Record: content(""), v1Record: content("")}, exitNegative},
		{"superseded_may_rely_on_what_is_gone", map[string]func(string) string{
			v1Record:        replace("{pointer: /amount_minor}", "{pointer: /amount_cents}"),
			"toolgate.lock": content(""), // not locked yet: editing is allowed
		}, exitOK},
		{"incomplete_and_untestable", map[string]func(string) string{
			"decisions/refund-goodwill-v1.yaml": content("id: refund-goodwill-v1\ndecision: \"Refund goodwill gestures up to 20 EUR without review.\"\nowner: payment-platform\ndate: 2026-11-20\npolicy_version: refund-policy-v2\ntool: payments.issue_refund\n"),
		}, exitOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := decisionsCopy(t, tt.edits)
			r := runCLI(t, "", "lint", dir)
			out := strings.ReplaceAll(fmt.Sprintf("exit %d\n--- stdout\n%s--- stderr\n%s", r.code, r.stdout, r.stderr), dir, "$DIR")
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d\n%s", r.code, tt.code, out)
			}
			assertGoldenFile(t, filepath.Join("decisions", "lint_"+tt.name+".golden"), out)
		})
	}
}

// v2 of payments.issue_refund drops the enum value duplicate_charge, or the
// parameter customer_email, which the live record refund-duplicate-charge-v2
// relies on: the gate blocks the release and names the record. Superseding
// the record with one that no longer relies on it allows the release.
func TestGateRuleRecords(t *testing.T) {
	t.Parallel()
	schema, err := os.ReadFile(filepath.Join(exampleTools, "payments.issue_refund", "schemas", "v1.0.0.json"))
	if err != nil {
		t.Fatal(err)
	}
	v2 := strings.Replace(string(schema), `"version": "1.0.0"`, `"version": "2.0.0"`, 1)
	noDuplicate := strings.NewReplacer(`"enum": ["customer_request", "duplicate_charge", "service_failure"]`, `"enum": ["customer_request", "service_failure"]`,
		` duplicate_charge (charged twice) or`, ``).Replace(v2)
	if noDuplicate == v2 {
		t.Fatal("the schema edit did not apply")
	}
	base := func(schema string) map[string]func(string) string {
		return map[string]func(string) string{
			"payments.issue_refund/schemas/v2.0.0.json": content(schema),
			"payments.issue_refund/changelog.md":        replace("## 1.0.0", "## 2.0.0\n\n- Duplicate charges are refunded by the payment provider itself.\n\n## 1.0.0"),
			// the golden case of the dropped reason goes with it; the other still holds for 2.x
			"payments.issue_refund/contracts/golden/refund_duplicate_charge.yaml":   content(""),
			"payments.issue_refund/contracts/golden/large_refund_needs_review.yaml": replace("version: 1.0.0}", `version: 1.0.0, versions: ["2.x"]}`),
			"approvals/payments.issue_refund-2.0.0.yaml":                            content("approver: payments-lead\ntool: payments.issue_refund\nversion: 2.0.0\napproved_at: 2026-11-30T09:00:00Z\n"),
		}
	}
	withV3 := base(noDuplicate)
	withV3["decisions/refund-duplicate-charge-v3.yaml"] = content(`id: refund-duplicate-charge-v3
decision: "Leave duplicated charges to the payment provider, which refunds them itself; refunds through payments.issue_refund send the confirmation to the customer's email."
context: "The provider now detects and refunds duplicate charges on its own."
alternatives: ["keep refunding them ourselves"]
owner: payment-platform
review_trigger: "a duplicate charge reaches support"
date: 2026-11-30
policy_version: refund-policy-v3
tool: payments.issue_refund
relies_on: [{pointer: /order_id}, {pointer: /customer_email}]
supersedes: refund-duplicate-charge-v2
`)
	noEmail := strings.Replace(v2, `"customer_email": {`, `"customer_mail": {`, 1)
	gateArgs := []string{"gate", "--tool", "payments.issue_refund", "--from", "1.0.0", "--to", "2.0.0"}
	tests := []struct {
		name   string
		edits  map[string]func(string) string
		format string
		code   int
	}{
		{"gate_enum_value_removed.text", base(noDuplicate), "text", exitNegative},
		{"gate_enum_value_removed.line", base(noDuplicate), "line", exitNegative},
		{"gate_enum_value_removed.markdown", base(noDuplicate), "markdown", exitNegative},
		{"gate_field_removed.line", base(noEmail), "line", exitNegative},
		{"gate_superseded_first.text", withV3, "text", exitOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := decisionsCopy(t, tt.edits)
			r := runCLI(t, "", append(gateArgs, dir, "--format", tt.format)...)
			out := strings.ReplaceAll(fmt.Sprintf("exit %d\n--- stdout\n%s--- stderr\n%s", r.code, r.stdout, r.stderr), dir, "$DIR")
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d\n%s", r.code, tt.code, out)
			}
			if tt.code == exitNegative && !strings.Contains(r.stdout, "refund-duplicate-charge-v2") {
				t.Errorf("the block does not name the record:\n%s", r.stdout)
			}
			if strings.Contains(r.stdout, "which live rule record refund-duplicate-charge-v1") {
				t.Errorf("a superseded record blocks the release:\n%s", r.stdout)
			}
			assertGoldenFile(t, filepath.Join("decisions", tt.name+".golden"), out)
		})
	}
}

func TestDecisionsCommand(t *testing.T) {
	t.Parallel()
	edited := decisionsCopy(t, map[string]func(string) string{v1Record: replace("store credit", "a voucher")})
	tests := []struct {
		name string
		args []string
		code int
	}{
		{"list", []string{"list", exampleTools}, exitOK},
		{"list_json", []string{"list", "--dir", exampleTools, "--format", "json"}, exitOK},
		{"show", []string{"show", "refund-duplicate-charge-v1", exampleTools}, exitOK},
		{"show_json", []string{"show", "refund-duplicate-charge-v2", exampleTools, "--format", "json"}, exitOK},
		{"show_edited", []string{"show", "refund-duplicate-charge-v1", edited}, exitOK},
		{"show_unknown", []string{"show", "refund-duplicate-charge-v9", exampleTools}, exitNegative},
		{"no_subcommand", nil, exitUsage},
		{"bad_subcommand", []string{"lsit"}, exitUsage},
		{"show_without_id", []string{"show"}, exitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := runCLI(t, "", append([]string{"decisions"}, tt.args...)...)
			out := strings.ReplaceAll(fmt.Sprintf("exit %d\n--- stdout\n%s--- stderr\n%s", r.code, r.stdout, r.stderr), edited, "$DIR")
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d\n%s", r.code, tt.code, out)
			}
			assertGoldenFile(t, filepath.Join("decisions", tt.name+".golden"), out)
		})
	}
}
