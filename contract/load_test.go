package contract

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const examples = "../examples/agent-tools"

func TestLoadExamples(t *testing.T) {
	t.Parallel()
	reg, err := Load(examples)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, tool := range reg.Tools() {
		ids = append(ids, tool.ID)
	}
	if want := []string{"orders.get_order", "payments.issue_refund", "refund.create_request"}; !reflect.DeepEqual(ids, want) {
		t.Fatalf("tools %v, want %v", ids, want)
	}
	refund := reg.Tool("refund.create_request")
	if got := refund.Default().Version; got != "2.2.0" {
		t.Errorf("default %s, want 2.2.0", got)
	}
	if refund.Version("v2.1.0") == nil || refund.Version("9.9.9") != nil || reg.Tool("nope") != nil {
		t.Error("lookup by version / id is wrong")
	}
	pay := reg.Tool("payments.issue_refund").Version("1.0.0")
	if !pay.Mutating() || pay.IdempotencyKeyProperty() != "idempotency_key" {
		t.Errorf("mutating=%v key=%q", pay.Mutating(), pay.IdempotencyKeyProperty())
	}
	p, r := pay.Sensitive()
	if !reflect.DeepEqual(p, []string{"/customer_email"}) || len(r) != 0 {
		t.Errorf("sensitive %v %v", p, r)
	}
	if got := len(reg.Tool("payments.issue_refund").Cases); got != 5 {
		t.Errorf("%d cases, want 5", got)
	}
	if reg.Tool("orders.get_order").Owner.RiskLevel != "low" {
		t.Error("owner.yaml not read")
	}
	if refund.Policy.Gate.ShadowMinPass != 0.95 || !refund.Policy.Gate.HighRiskRequiresApproval {
		t.Errorf("policy %+v", refund.Policy)
	}
}

// TestContractCasesAgreeWithValidation checks every example case's expected validation.
func TestContractCasesAgreeWithValidation(t *testing.T) {
	t.Parallel()
	reg, err := Load(examples)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range reg.Tools() {
		for _, c := range tool.Cases {
			t.Run(c.ID, func(t *testing.T) {
				args, err := DecodeJSON(c.Arguments)
				if err != nil {
					t.Fatal(err)
				}
				verdict := tool.Version(c.ToolVersion).Validate(args)
				var got []ExpectedError
				for _, e := range verdict.Errors {
					got = append(got, ExpectedError{e.Pointer, e.Code})
				}
				if !reflect.DeepEqual(got, c.Expected.ExpectedErrors) {
					t.Errorf("%s: errors %v, want %v", c.File, got, c.Expected.ExpectedErrors)
				}
				if (c.Expected.Validation == "ok") != verdict.Valid() {
					t.Errorf("%s: valid=%v, expected %s", c.File, verdict.Valid(), c.Expected.Validation)
				}
			})
		}
	}
}

func TestSensitivePointers(t *testing.T) {
	t.Parallel()
	schema := `{"type":"object","$defs":{"contact":{"type":"object","properties":{"phone":{"type":"string","x-sensitive":true}}}},
	  "properties":{
	    "email":{"type":"string","x-sensitive":true},
	    "contacts":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string","x-sensitive":true}}}},
	    "primary":{"$ref":"#/$defs/contact"},
	    "a/b":{"type":"string","x-sensitive":true},
	    "meta":{"type":"object","additionalProperties":{"type":"string","x-sensitive":true}}
	  }}`
	got, _ := parseSchemas(t, schema, "").Sensitive()
	want := []string{"/a~1b", "/contacts/*/name", "/email", "/meta/*", "/primary/phone"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func mustDecode(t *testing.T, s string) any {
	t.Helper()
	v, err := DecodeJSON([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestDefaultSkipsDeprecated(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		deprecated []string
		want       string
	}{
		{"none", nil, "2.1.0"},
		{"minor wildcard", []string{"2.1.x"}, "2.0.3"},
		{"major wildcard", []string{"2.x"}, "1.4.0"},
		{"everything falls back to newest", []string{"x"}, "2.1.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tool := &Tool{Policy: ReleasePolicy{DeprecatedVersions: tt.deprecated}}
			for _, v := range []string{"1.4.0", "2.0.3", "2.1.0"} {
				tool.Versions = append(tool.Versions, &Version{Version: v})
			}
			if got := tool.Default().Version; got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestParseSemver(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in string
		ok bool
	}{{"1.2.3", true}, {"0.0.0", true}, {"01.2.3", false}, {"1.2", false}, {"1.2.3-rc1", false}, {"a.b.c", false}} {
		if _, ok := ParseSemver(tt.in); ok != tt.ok {
			t.Errorf("ParseSemver(%q) ok=%v", tt.in, ok)
		}
	}
}

// TestLoadBrokenDirectory: every problem is listed, with its file and line.
func TestLoadBrokenDirectory(t *testing.T) {
	t.Parallel()
	dir := writeTool(t, "pay.refund", "1.0.0", `{
  "tool_id": "pay.other",
  "version": "1.0.1",
  "name": "refund",
  "effect": "sometimes",
  "colour": "blue",
  "parameters": {"type": "object", "properties": {"a": {"type": "strin"}}}
}`, map[string]string{
		"schemas/v1.1.0.json":      "{\n  \"tool_id\": \"pay.refund\",\n  \"version\": ,\n}",
		"schemas/latest.json":      "{}",
		"owner.yaml":               "owner: team\nrisk_level: extreme\nconsumer: [a]\n",
		"release-policy.yaml":      "gate:\n  golden_min_pass: 2\n",
		"contracts/golden/a.yaml":  "case_id: a\ntool: {id: pay.other, version: 1.0.0}\n",
		"contracts/golden/b.yaml":  "case_id: b\n  bad: [\n",
		"contracts/nightly/c.yaml": "case_id: c\n",
	})
	_, err := Load(dir)
	le, ok := err.(*LoadError)
	if !ok {
		t.Fatalf("want *LoadError, got %v", err)
	}
	var got []string
	for _, p := range le.Problems {
		rel, _ := filepath.Rel(dir, p.File)
		got = append(got, strings.ReplaceAll((Problem{File: rel, Line: p.Line, Message: p.Message}).String(), string(filepath.Separator), "/"))
	}
	want := []string{
		`pay.refund/schemas/latest.json: schema file name must be vMAJOR.MINOR.PATCH.json`,
		`pay.refund/schemas/v1.0.0.json:6: unknown field "colour": a schema file holds $schema, description, effect, errors, name, parameters, result, rules, tool_id, version; extensions are x-VENDOR-NAME (e.g. x-acme-owner; VENDOR is lowercase letters and digits)`,
		`pay.refund/schemas/v1.0.0.json:2: tool_id "pay.other" does not match its folder "pay.refund"`,
		`pay.refund/schemas/v1.0.0.json:3: version "1.0.1" does not match the file name (v1.0.0.json)`,
		`pay.refund/schemas/v1.0.0.json:5: effect must be "mutating" or "read_only", not "sometimes"`,
		`pay.refund/schemas/v1.0.0.json:7: pay.refund v1.0.0: parameters schema does not compile:`,
		`pay.refund/schemas/v1.1.0.json:3: invalid JSON at line 3, column 14: invalid character ',' looking for beginning of value`,
		`pay.refund/owner.yaml:3: consumer: unknown field; did you mean "consumers"?`,
		`pay.refund/owner.yaml:2: risk_level: must be low, medium or high, not "extreme"`,
		`pay.refund/release-policy.yaml:2: gate.golden_min_pass: must be between 0 and 1`,
		`pay.refund/contracts/golden/a.yaml:2: tool.id: "pay.other" is not the tool whose folder holds the case (pay.refund)`,
		`pay.refund/contracts/golden/b.yaml:2: invalid YAML: mapping values are not allowed in this context`,
		`pay.refund/contracts/nightly: unknown case suite "nightly" (expected golden, regression or shadow)`,
	}
	if len(got) != len(want) {
		t.Fatalf("got %d problems:\n%s", len(got), strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("problem %d:\n got %s\nwant %s", i, got[i], want[i])
		}
	}
}

func TestLoadMissingDirectory(t *testing.T) {
	t.Parallel()
	_, err := Load(filepath.Join(t.TempDir(), "absent"))
	if err == nil || !strings.Contains(err.Error(), "cannot read tools directory") {
		t.Fatalf("got %v", err)
	}
}

// TestSensitiveRecursiveSchemas: self-referencing schemas are walked in bounded time.
func TestSensitiveRecursiveSchemas(t *testing.T) {
	t.Parallel()
	schema := `{"allOf":[{"$ref":"#"},{"$ref":"#"},{"$ref":"#/$defs/n"}],
	  "$defs":{"n":{"anyOf":[{"$ref":"#"},{"$ref":"#/$defs/n"}],"properties":{"s":{"x-sensitive":true},"next":{"$ref":"#/$defs/n"}}}}}`
	got, _ := parseSchemas(t, `{"type":"object",`+schema[1:], "").Sensitive()
	// /s at the top, and at any depth below next.
	if want := []string{"/**/s", "/s"}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// TestYAMLErrorLines: YAML syntax errors name the line of the problem.
func TestYAMLErrorLines(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, owner string
		line        int
	}{
		{"unclosed flow sequence", "owner: a\nrisk_level: low\nconsumers: [a, b\n", 3},
		{"unclosed flow mapping", "owner: a\nconsumers: {a\nrisk_level: low\n", 2},
		{"bad indentation", "owner: a\n  risk_level: low\n", 2},
		{"tab", "owner: a\n\trisk_level: low\n", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := writeTool(t, "t.tool", "1.0.0", ruleSchema(`[]`), map[string]string{"owner.yaml": tt.owner})
			_, problems := Inspect(dir)
			if len(problems) != 1 || problems[0].Line != tt.line || !strings.HasSuffix(problems[0].File, "owner.yaml") {
				t.Fatalf("got %+v, want one owner.yaml problem at line %d", problems, tt.line)
			}
		})
	}
}
