package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// fixtureConfig binds every bundled tool; @DIR@ is the fixture's directory.
const fixtureConfig = `listen: 127.0.0.1:0
tools_dir: @DIR@/agent-tools
ledger: sqlite://@DIR@/toolgate.db
bindings:
  payments.issue_refund:
    url: http://127.0.0.1:9/refunds
    timeout: 2s
    lookup: {url: "http://127.0.0.1:9/refunds/by-key/{downstream_key}"}
    state: {url: "http://127.0.0.1:9/orders/{args.order_id}"}
    not_started_statuses: [503]
  refund.create_request:
    url: http://127.0.0.1:9/refund-requests
  orders.get_order:
    url: http://127.0.0.1:9/orders/{args.order_id}
    method: GET
auth:
  keys:
    - name: cs-agent
      key_sha256: 2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b
      tenant: acme
      role: agent
      tools: [payments.issue_refund, orders.get_order]
`

// fixtureDir writes a fixture: a copy of the bundled tools (without toolgate.lock, so that
// lint reports what the fixture breaks and nothing about immutability) and toolgate.yaml.
func fixtureDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	copyTree(t, exampleTools, filepath.Join(dir, "agent-tools"))
	if err := os.Remove(filepath.Join(dir, "agent-tools", "toolgate.lock")); err != nil {
		t.Fatal(err)
	}
	writeFixtureFile(t, dir, "toolgate.yaml", strings.ReplaceAll(fixtureConfig, "@DIR@", dir))
	return dir
}

func writeFixtureFile(t *testing.T, dir, rel, body string) {
	t.Helper()
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Kinds of broken fixtures, and the commands each is run through.
const (
	kindContract = "contract" // lint, check, serve
	kindCase     = "case"     // lint, check, serve, test
	kindConfig   = "config"   // check, serve
	kindWarning  = "warning"  // lint and check only: a warning, nothing is refused
	kindCLI      = "cli"      // the command line given
)

type brokenFixture struct {
	name  string
	kind  string
	setup func(t *testing.T, dir string)
	args  []string // kindCLI: the command line; "$DIR" is the fixture's directory
}

const (
	pay     = "agent-tools/payments.issue_refund/schemas/v1.0.0.json"
	req22   = "agent-tools/refund.create_request/schemas/v2.2.0.json"
	payCase = "agent-tools/payments.issue_refund/contracts/golden/refund_duplicate_charge.yaml"
)

func editing(file, old, new string) func(t *testing.T, dir string) {
	return func(t *testing.T, dir string) { edit(t, dir, file, old, new) }
}

func writing(file, body string) func(t *testing.T, dir string) {
	return func(t *testing.T, dir string) { writeFixtureFile(t, dir, file, body) }
}

func brokenFixtures() []brokenFixture {
	return []brokenFixture{
		// contracts: schema keywords and extensions
		{name: "keyword_requried", kind: kindContract, setup: editing(pay, `"required": ["order_id", "amount_minor", "currency", "reason"]`, `"requried": ["order_id", "amount_minor", "currency", "reason"]`)},
		{name: "keyword_patern", kind: kindContract, setup: editing(pay, `"pattern": "^TCK-[0-9]+$"`, `"patern": "^TCK-[0-9]+$"`)},
		{name: "keyword_maxlenght", kind: kindContract, setup: editing(pay, `"maxLength": 128,`, `"maxLenght": 128,`)},
		{name: "keyword_in_result", kind: kindContract, setup: editing(pay, `"required": ["refund_id", "order_id", "amount_minor", "currency", "status"]`, `"requires": ["refund_id", "order_id", "amount_minor", "currency", "status"]`)},
		{name: "keyword_unknown_without_suggestion", kind: kindContract, setup: editing(pay, `"minimum": 1,`, `"minimum": 1, "currencyCode": "EUR",`)},
		{name: "extension_x_sensitve", kind: kindContract, setup: editing(pay, `"x-sensitive": true,`, `"x-sensitve": true,`)},
		{name: "extension_without_x", kind: kindContract, setup: editing(pay, `"x-sensitive": true,`, `"sensitive": true,`)},
		{name: "extension_reserved_prefix", kind: kindContract, setup: editing(pay, `"x-impact": "funds",`, `"x-impact-level": "high",`)},
		{name: "extension_not_vendor", kind: kindContract, setup: editing(pay, `"x-impact": "funds",`, `"x-impact": "funds", "x-owner": "payments",`)},
		{name: "annotation_sensitive_not_bool", kind: kindContract, setup: editing(pay, `"x-sensitive": true,`, `"x-sensitive": "yes",`)},
		{name: "annotation_impact_value", kind: kindContract, setup: editing(pay, `"x-impact": "funds",`, `"x-impact": "fund",`)},
		{name: "annotation_idempotency_key_in_result", kind: kindContract, setup: editing(pay, `"refund_id": {"type": "string",`, `"refund_id": {"type": "string", "x-idempotency-key": true,`)},
		{name: "annotation_enum_descriptions", kind: kindContract, setup: editing(pay, `"enum": ["EUR", "USD", "GBP"],
        "description"`, `"enum": ["EUR", "USD", "GBP"], "x-enum-descriptions": {"EUR": "euro", "UDS": "US dollar"},
        "description"`)},
		{name: "draft_07", kind: kindContract, setup: editing(pay, `"parameters": {
    "type": "object",`, `"parameters": {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",`)},
		{name: "additional_items", kind: kindContract, setup: editing(pay, `"minLength": 8,`, `"minLength": 8, "additionalItems": false,`)},
		{name: "format_emial", kind: kindContract, setup: editing(pay, `"format": "email",`, `"format": "emial",`)},
		{name: "file_field_efect", kind: kindContract, setup: editing(pay, `"effect": "mutating",`, `"efect": "mutating", "effect": "mutating",`)},
		{name: "error_field_categroy", kind: kindContract, setup: editing(pay, `{"code": "ORDER_NOT_FOUND", "category": "business"`, `{"code": "ORDER_NOT_FOUND", "categroy": "business"`)},
		{name: "rule_field_outcom", kind: kindContract, setup: editing(pay, `"field": "/amount_minor", "outcome": "review"`, `"field": "/amount_minor", "outcom": "review"`)},
		{name: "file_extension_x_darft", kind: kindContract, setup: editing(req22, `"effect": "mutating",`, `"effect": "mutating", "x-darft": true,`)},
		// contracts: the other YAML files of a tools directory
		{name: "owner_field_consumer", kind: kindContract, setup: editing("agent-tools/orders.get_order/owner.yaml", "consumers:", "consumer:")},
		{name: "owner_risk_level_hihg", kind: kindContract, setup: editing("agent-tools/orders.get_order/owner.yaml", "risk_level: low", "risk_level: hihg")},
		{name: "policy_gate_field", kind: kindContract, setup: editing("agent-tools/orders.get_order/release-policy.yaml", "  golden_min_pass: 1.0", "  golden_min_pas: 1.0")},
		{name: "policy_yaml_unclosed", kind: kindContract, setup: editing("agent-tools/orders.get_order/release-policy.yaml", `compatible_with: ["1.0.x"]`, `compatible_with: ["1.0.x"`)},
		{name: "decision_field", kind: kindContract, setup: writing("agent-tools/decisions/refund-late-delivery-v1.yaml", "id: refund-late-delivery-v1\ndecision: \"Refund in full when the delivery is late.\"\nowner: payment-platform\ndate: 2026-08-11\npolicy_version: refund-policy-v1\ntool: payments.issue_refund\nrelies_onn: [{pointer: /reason, value: duplicate_charge}]\n")},
		{name: "approval_tool_typo", kind: kindContract, setup: editing("agent-tools/approvals/payments.issue_refund-1.0.0.yaml", "tool: payments.issue_refund", "tool: payments.issue_refunds")},
		{name: "agent_field", kind: kindContract, setup: editing("agent-tools/agents/ops_agent.yaml", "system_prompt:", "system_promt:")},
		// contract cases
		{name: "case_version_unknown", kind: kindCase, setup: editing(payCase, "version: 1.0.0}", "version: 1.1.0}")},
		{name: "case_tool_typo", kind: kindCase, setup: editing(payCase, "{id: payments.issue_refund,", "{id: payments.issue_refnd,")},
		{name: "case_field_arguements", kind: kindCase, setup: editing(payCase, "expected_tool_arguments:", "expected_tool_arguements:")},
		{name: "case_expected_validaton", kind: kindCase, setup: editing(payCase, "  validation: ok", "  validaton: ok")},
		{name: "case_behavior_must_includes", kind: kindCase, setup: editing(payCase, "  must_include:", "  must_includes:")},
		{name: "case_yaml_indentation", kind: kindCase, setup: editing(payCase, "  tool_status: succeeded\n  validation: ok", "  tool_status: succeeded\n validation: ok")},
		{name: "case_suite_goldn", kind: kindCase, setup: writing("agent-tools/payments.issue_refund/contracts/goldn/extra.yaml", "case_id: extra\ntool: {id: payments.issue_refund, version: 1.0.0}\nexpected: {validation: ok}\n")},
		{name: "case_expected_error_without_code", kind: kindCase, setup: editing("agent-tools/payments.issue_refund/contracts/regression/decimal_amount.yaml", "code: type", "cod: type")},
		{name: "case_expects_nothing", kind: kindWarning, setup: writing("agent-tools/payments.issue_refund/contracts/golden/nothing.yaml", "case_id: nothing\ntool: {id: payments.issue_refund, version: 1.0.0}\nuser_intent: \"anything\"\n")},
		// toolgate.yaml
		{name: "config_timout", kind: kindConfig, setup: editing("toolgate.yaml", "    timeout: 2s", "    timout: 2s")},
		{name: "config_duration_without_unit", kind: kindConfig, setup: editing("toolgate.yaml", "    timeout: 2s", "    timeout: 5")},
		{name: "config_duration_word", kind: kindConfig, setup: editing("toolgate.yaml", "listen: 127.0.0.1:0", "listen: 127.0.0.1:0\nretention: a week")},
		{name: "config_yaml_indentation", kind: kindConfig, setup: editing("toolgate.yaml", "    method: GET", "   method: GET")},
		{name: "config_binding_unknown_tool", kind: kindConfig, setup: editing("toolgate.yaml", "  orders.get_order:\n", "  orders.get_orders:\n")},
		{name: "config_placeholder_downstream_kye", kind: kindConfig, setup: editing("toolgate.yaml", "by-key/{downstream_key}", "by-key/{downstream_kye}")},
		{name: "config_args_field_typo", kind: kindConfig, setup: editing("toolgate.yaml", `state: {url: "http://127.0.0.1:9/orders/{args.order_id}"}`, `state: {url: "http://127.0.0.1:9/orders/{args.order_idd}"}`)},
		{name: "config_args_field_missing_in_a_version", kind: kindConfig, setup: editing("toolgate.yaml", "refund-requests", "refund-requests/{args.approval_channel}")},
		{name: "config_placeholder_in_host", kind: kindConfig, setup: editing("toolgate.yaml", "url: http://127.0.0.1:9/refund-requests", "url: http://{tenant}.refunds.internal/refund-requests")},
		{name: "config_key_set_twice", kind: kindConfig, setup: editing("toolgate.yaml", "    method: GET", "    method: GET\n    method: POST")},
		{name: "config_method_pots", kind: kindConfig, setup: editing("toolgate.yaml", "    method: GET", "    method: GTE")},
		{name: "config_auth_tool_typo", kind: kindConfig, setup: editing("toolgate.yaml", "tools: [payments.issue_refund, orders.get_order]", "tools: [payments.issue_refund, orders.get_ordr]")},
		{name: "config_bindigns", kind: kindConfig, setup: editing("toolgate.yaml", "bindings:", "bindigns:")},
		{name: "config_not_started_404", kind: kindConfig, setup: editing("toolgate.yaml", "not_started_statuses: [503]", "not_started_statuses: [503, 404]")},
		{name: "config_decision_log_mode", kind: kindConfig, setup: editing("toolgate.yaml", "listen: 127.0.0.1:0", "listen: 127.0.0.1:0\ndecision_log: {path: /dev/null, arguments: raw}")},
		{name: "config_unbound_and_unknown", kind: kindConfig, setup: editing("toolgate.yaml", "  refund.create_request:\n    url: http://127.0.0.1:9/refund-requests\n", "  refund.create_requests:\n    url: http://127.0.0.1:9/refund-requests\n")},
		// command-line misuse
		{name: "cli_validate_schema_given_a_contract", kind: kindCLI, args: []string{"validate", "--schema", "$DIR/" + pay, "-"}},
		{name: "cli_validate_schema_with_a_typo", kind: kindCLI, setup: writing("plain.json", "{\n  \"type\": \"object\",\n  \"requried\": [\"a\"]\n}\n"), args: []string{"validate", "--schema", "$DIR/plain.json", "-"}},
		{name: "cli_validate_tool_typo", kind: kindCLI, args: []string{"validate", "--tool", "payments.issue_refnd", "--dir", "$DIR/agent-tools", "-"}},
		{name: "cli_validate_version_unknown", kind: kindCLI, args: []string{"validate", "--tool", "refund.create_request", "--version", "2.3", "--dir", "$DIR/agent-tools", "-"}},
		{name: "cli_test_tool_typo", kind: kindCLI, args: []string{"test", "$DIR/agent-tools", "--tool", "refund.create_reqest"}},
		{name: "cli_gate_version_unknown", kind: kindCLI, args: []string{"gate", "--tool", "refund.create_request", "--from", "2.1.0", "--to", "2.3.0", "$DIR/agent-tools"}},
		{name: "cli_unknown_command", kind: kindCLI, args: []string{"lnit"}},
		{name: "cli_check_format", kind: kindCLI, args: []string{"check", "--config", "$DIR/toolgate.yaml", "--format", "yaml"}},
		{name: "cli_check_config_missing", kind: kindCLI, args: []string{"check", "--config", "$DIR/absent.yaml"}},
		{name: "cli_check_tools_dir_missing", kind: kindCLI, args: []string{"check", "--config", "$DIR/toolgate.yaml", "--dir", "$DIR/absent"}},
		{name: "cli_actions_gateway", kind: kindCLI, args: []string{"actions", "list", "--gateway", "ftp://127.0.0.1:21"}},
		{name: "cli_export_config_leaves_out_unbound", kind: kindCLI, setup: editing("toolgate.yaml", "  orders.get_order:\n    url: http://127.0.0.1:9/orders/{args.order_id}\n    method: GET\n", ""), args: []string{"export", "--format", "anthropic", "--config", "$DIR/toolgate.yaml"}},
	}
}

// commandsFor lists the command lines a fixture is run through.
func commandsFor(f brokenFixture) [][]string {
	cfg := []string{"--config", "$DIR/toolgate.yaml"}
	lint := []string{"lint", "$DIR/agent-tools"}
	check := append([]string{"check"}, cfg...)
	serve := append([]string{"serve"}, cfg...)
	switch f.kind {
	case kindContract:
		return [][]string{lint, check, serve}
	case kindCase:
		return [][]string{lint, check, serve, {"test", "$DIR/agent-tools"}}
	case kindConfig:
		return [][]string{check, serve}
	case kindWarning:
		return [][]string{lint, check}
	}
	return [][]string{f.args}
}

// TestBrokenFixtures breaks a copy of the bundled tools (or its configuration, or the
// command line) one way per fixture and runs it through lint, check and serve's start-up:
// every mistake is refused with the exact message in testdata/broken/<name>.golden, and
// check and serve say the same.
func TestBrokenFixtures(t *testing.T) {
	t.Parallel()
	fixtures := brokenFixtures()
	if len(fixtures) < 40 {
		t.Fatalf("only %d fixtures", len(fixtures))
	}
	for _, f := range fixtures {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			dir := fixtureDir(t)
			if f.setup != nil {
				f.setup(t, dir)
			}
			var b strings.Builder
			results := map[string]cliResult{}
			for _, cmd := range commandsFor(f) {
				args := make([]string, len(cmd))
				for i, a := range cmd {
					args[i] = strings.ReplaceAll(a, "$DIR", dir)
				}
				r := runCLI(t, "{}", args...)
				results[cmd[0]] = r
				fmt.Fprintf(&b, "$ toolgate %s\n%s", strings.Join(cmd, " "), strings.ReplaceAll(r.String(), dir, "$DIR"))
			}
			assertGoldenFile(t, filepath.Join("broken", f.name+".golden"), b.String())
			checkFixtureVerdicts(t, f, results)
		})
	}
}

// checkFixtureVerdicts asserts the exit codes a fixture of its kind must get, and that
// serve refuses with the very lines check prints.
func checkFixtureVerdicts(t *testing.T, f brokenFixture, r map[string]cliResult) {
	t.Helper()
	switch f.kind {
	case kindContract, kindCase, kindConfig:
		if r["check"].code != exitNegative || r["serve"].code != exitUsage {
			t.Errorf("check exit %d (want 1), serve exit %d (want 2)", r["check"].code, r["serve"].code)
		}
		for _, line := range strings.Split(strings.TrimSpace(r["check"].stdout), "\n") {
			if strings.Contains(line, ": error [") && !strings.Contains(r["serve"].stderr, line) {
				t.Errorf("serve does not print check's line %q", line)
			}
		}
		if f.kind != kindConfig && r["lint"].code != exitNegative {
			t.Errorf("lint exit %d, want 1", r["lint"].code)
		}
		if f.kind == kindCase && r["test"].code != exitUsage {
			t.Errorf("test exit %d, want 2", r["test"].code)
		}
	case kindWarning:
		if r["lint"].code != exitOK || r["check"].code != exitOK || !strings.Contains(r["lint"].stdout, ": warning [") {
			t.Errorf("lint exit %d, check exit %d: want 0 with a warning", r["lint"].code, r["check"].code)
		}
	}
}

// TestCheckBundledConfiguration: a configuration that binds the bundled tools checks clean
// (exit 0, nothing to report), and so does the example configuration in examples/.
func TestCheckBundledConfiguration(t *testing.T) {
	t.Parallel()
	dir := fixtureDir(t)
	for _, args := range [][]string{
		{"check", "--config", filepath.Join(dir, "toolgate.yaml")},
		{"check", "--config", "../../examples/toolgate.yaml", "--dir", exampleTools},
	} {
		r := runCLI(t, "", args...)
		if r.code != exitOK || r.stderr != "" || !strings.HasSuffix(r.stdout, ": 0 errors, 0 warnings\n") || strings.Count(r.stdout, "\n") != 1 {
			t.Errorf("%v:\n%s", args, r)
		}
	}
	r := runCLI(t, "", "check", "--config", filepath.Join(dir, "toolgate.yaml"), "--format", "json")
	assertGoldenFile(t, "check/clean_json.golden", strings.ReplaceAll(r.String(), dir, "$DIR"))
}

// TestCheckFormats renders one broken fixture in every format.
func TestCheckFormats(t *testing.T) {
	t.Parallel()
	dir := fixtureDir(t)
	edit(t, dir, "toolgate.yaml", "    timeout: 2s", "    timout: 2s")
	edit(t, dir, pay, `"x-sensitive": true,`, `"x-sensitve": true,`)
	edit(t, dir, "toolgate.yaml", "  orders.get_order:\n    url: http://127.0.0.1:9/orders/{args.order_id}\n    method: GET\n", "")
	for _, format := range reportFormats {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			r := runCLI(t, "", "check", "--config", filepath.Join(dir, "toolgate.yaml"), "--format", format)
			if r.code != exitNegative {
				t.Errorf("exit %d", r.code)
			}
			assertGoldenFile(t, filepath.Join("check", "formats."+format+".golden"), strings.ReplaceAll(r.String(), dir, "$DIR"))
		})
	}
}

// TestSchemaTypoRefusedEverywhere: a contract whose schema has a typo is refused by every
// command that loads the tools directory, not only reported by lint.
func TestSchemaTypoRefusedEverywhere(t *testing.T) {
	t.Parallel()
	dir := fixtureDir(t)
	edit(t, dir, pay, `"required": ["order_id", "amount_minor", "currency", "reason"]`, `"requried": ["order_id", "amount_minor", "currency", "reason"]`)
	tools := filepath.Join(dir, "agent-tools")
	at, want := "payments.issue_refund/schemas/v1.0.0.json:56: ", `/parameters/requried: unknown keyword "requried"; did you mean "required"?`
	for _, args := range [][]string{
		{"validate", "--tool", "payments.issue_refund", "--dir", tools, "-"},
		{"export", "--format", "openai", tools},
		{"test", tools},
		{"gate", "--tool", "payments.issue_refund", "--from", "1.0.0", "--to", "1.0.0", tools},
		{"lock", tools},
		{"diff", filepath.Join(dir, pay), filepath.Join(dir, pay)},
		{"serve", "--config", filepath.Join(dir, "toolgate.yaml")},
	} {
		r := runCLI(t, "{}", args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, at) || !strings.Contains(r.stderr, want) {
			t.Errorf("%s: want exit 2 naming the typo:\n%s", args[0], r)
		}
	}
}

// TestHelpAndUsage: every command's --help goes to standard output with exit 0; a bad
// flag goes to standard error with exit 2.
func TestHelpAndUsage(t *testing.T) {
	t.Parallel()
	for name := range commands {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, h := range []string{"--help", "-h"} {
				r := runCLI(t, "", name, h)
				if r.code != exitOK || r.stderr != "" || !strings.Contains(r.stdout, "Usage: toolgate "+name) {
					t.Errorf("%s %s:\n%s", name, h, r)
				}
			}
			if name == "actions" || name == "cases" || name == "upstream" {
				return // their first argument is a subcommand
			}
			r := runCLI(t, "", name, "--no-such-flag")
			if r.code != exitUsage || r.stdout != "" || !strings.Contains(r.stderr, "flag provided but not defined: -no-such-flag") {
				t.Errorf("%s --no-such-flag:\n%s", name, r)
			}
		})
	}
	for _, tt := range []struct {
		args   []string
		code   int
		stdout bool
	}{
		{nil, exitUsage, false},
		{[]string{"--help"}, exitOK, true},
		{[]string{"help"}, exitOK, true},
		{[]string{"help", "lint"}, exitOK, true},
		{[]string{"--version"}, exitOK, true},
		{[]string{"version"}, exitOK, true},
	} {
		r := runCLI(t, "", tt.args...)
		if r.code != tt.code || (r.stdout != "") != tt.stdout || (r.stderr != "") == tt.stdout {
			t.Errorf("toolgate %v:\n%s", tt.args, r)
		}
	}
}

func TestFormatVersion(t *testing.T) {
	t.Parallel()
	info := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/toolgate/toolgate", Version: "v1.4.0"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.time", Value: "2026-11-30T10:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	if got, want := formatVersion(info), "toolgate v1.4.0 revision 0123456789ab (modified) 2026-11-30T10:00:00Z go1.26.8"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := formatVersion(&debug.BuildInfo{GoVersion: "go1.26.8"}); got != "toolgate (devel) go1.26.8" {
		t.Errorf("without module information: %q", got)
	}
}

// TestCheckUnquotedTemplate: a URL template left unquoted inside a { … } mapping is
// a YAML error whose message says to quote it, and the report names no tools
// directory the file does not use.
func TestCheckUnquotedTemplate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "toolgate.yaml")
	yaml := "tools_dir: ./tools\nbindings:\n  x.y:\n    url: http://127.0.0.1:9090/orders\n    lookup: {url: http://127.0.0.1:9090/orders/by-key/{downstream_key}}\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, "", "check", "--config", cfg)
	if r.code != exitNegative || strings.Contains(r.stdout, "agent-tools") || !strings.Contains(r.stdout, "must be quoted") {
		t.Errorf("exit %d:\n%s", r.code, r)
	}
	assertGoldenFile(t, "check/unquoted_template.golden", strings.ReplaceAll(r.String(), dir, "$DIR"))
}
