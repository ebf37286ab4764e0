package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

const exampleTools = "../../examples/agent-tools"

// cliResult is what a user sees from one run of the CLI.
type cliResult struct {
	code           int
	stdout, stderr string
}

func (r cliResult) String() string {
	return fmt.Sprintf("exit %d\n--- stdout\n%s--- stderr\n%s", r.code, r.stdout, r.stderr)
}

// runCLI runs toolgate in-process with the given arguments and standard input.
func runCLI(t *testing.T, stdin string, args ...string) cliResult {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), env{Args: args, Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb})
	return cliResult{code, out.String(), errb.String()}
}

func TestValidateCommand(t *testing.T) {
	t.Parallel()
	dir := "--dir=" + exampleTools
	args := func(name string) string { return filepath.Join("testdata", "validate", name) }
	tests := []struct {
		name     string
		stdin    string
		args     []string
		wantCode int
	}{
		{"refund_valid", "", []string{"--tool", "payments.issue_refund", dir, args("refund_valid.json")}, 0},
		{"refund_invalid", "", []string{"--tool", "payments.issue_refund", dir, args("refund_invalid.json")}, 1},
		{"refund_invalid_json", "", []string{"--tool", "payments.issue_refund", dir, "--format", "json", args("refund_invalid.json")}, 1},
		{"refund_needs_review", "", []string{"--tool", "payments.issue_refund", dir, "--format", "json", args("refund_large.json")}, 0},
		{"refund_rule_reject", "", []string{"--tool", "payments.issue_refund", dir, args("refund_no_ticket.json")}, 1},
		{"request_default_version_needs_channel", "", []string{"--tool", "refund.create_request", dir, args("request_v21.json")}, 1},
		{"request_pinned_version", "", []string{"--tool", "refund.create_request", "--version", "2.1.0", dir, args("request_v21.json")}, 0},
		{"stdin", `{"order_id":"ord_8Xk2Lm9Q"}`, []string{"--tool", "orders.get_order", dir, "-"}, 0},
		{"plain_schema", `{"name":"x","age":-1}`, []string{"--schema", args("person.schema.json"), "-"}, 1},
		{"malformed_arguments", "{\"order_id\": ,}", []string{"--tool", "orders.get_order", dir, "-"}, 2},
		{"unknown_tool", "{}", []string{"--tool", "nope.tool", dir, "-"}, 2},
		{"unknown_version", "{}", []string{"--tool", "orders.get_order", "--version", "9.0.0", dir, "-"}, 2},
		{"both_tool_and_schema", "{}", []string{"--tool", "a.b", "--schema", "x.json", "-"}, 2},
		{"help", "", []string{"--help"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := runCLI(t, tt.stdin, append([]string{"validate"}, tt.args...)...)
			if got.code != tt.wantCode {
				t.Errorf("exit %d, want %d\n%s", got.code, tt.wantCode, got)
			}
			assertGoldenFile(t, filepath.Join("validate", tt.name+".golden"), got.String())
		})
	}
}

// validate --tool gives the gateway's verdict on numbers too: one a double
// cannot hold is number_not_exact at its pointer (docs/reference/files.md).
func TestValidateRefusesNumbersNoDoubleHolds(t *testing.T) {
	t.Parallel()
	in := `{"order_id":"ord_12345678","amount_minor":9007199254740993,"currency":"EUR","reason":"customer_request"}`
	got := runCLI(t, in, "validate", "--dir", "../../examples/agent-tools", "--tool", "payments.issue_refund", "--format", "json", "-")
	if got.code != exitNegative || !strings.Contains(got.stdout, `"code": "number_not_exact"`) || !strings.Contains(got.stdout, `"pointer": "/amount_minor"`) {
		t.Fatalf("%s", got)
	}
	ok := runCLI(t, strings.Replace(in, "9007199254740993", "1.5e3", 1), "validate", "--dir", "../../examples/agent-tools", "--tool", "payments.issue_refund", "-")
	if ok.code != exitOK {
		t.Fatalf("1.5e3 is the integer 1500: %s", ok)
	}
}
