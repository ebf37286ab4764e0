package capture

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/casetest"
	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/ledger/sqlite"
)

const contactSchema = `{
  "tool_id": "crm.update_contact", "version": "1.0.0", "name": "update_contact",
  "description": "Update a customer's contact details.", "effect": "mutating",
  "parameters": {
    "type": "object", "additionalProperties": false, "required": ["contact_id", "email", "phone", "name"],
    "properties": {
      "contact_id": {"type": "string", "pattern": "^c_[0-9]{4}$", "description": "contact"},
      "email": {"type": "string", "format": "email", "x-sensitive": true, "description": "email"},
      "phone": {"type": "string", "pattern": "^\\+[0-9]{8,12}$", "x-sensitive": true, "description": "phone"},
      "name": {"type": "string", "minLength": 2, "maxLength": 6, "x-sensitive": true, "description": "name"},
      "age": {"type": "integer", "minimum": 18, "x-sensitive": true, "description": "age"},
      "kids": {"type": "array", "description": "kids", "items": {"type": "object", "additionalProperties": false,
        "properties": {"name": {"type": "string", "x-sensitive": true, "description": "kid"}}}},
      "tier": {"type": "string", "enum": ["gold", "silver"], "description": "gold or silver"}
    }
  },
  "result": {"type": "object", "properties": {
    "status": {"type": "string", "enum": ["updated", "pending_review"]},
    "email": {"type": "string", "format": "email", "x-sensitive": true}
  }, "required": ["status"]}
}`

// secrets are the sensitive values in the recorded calls; none may reach a case.
var secrets = []string{"jane.doe@corp.test", "+4915112345678", "Janet", `"age":73`, "Tommy", "Lisa", "+4917099999999", "bob@corp.test", "Bobby"}

// setupTool writes a tools directory with crm.update_contact and loads it.
func setupTool(t testing.TB) (string, *contract.Tool) {
	t.Helper()
	dir := t.TempDir()
	sdir := filepath.Join(dir, "crm.update_contact", "schemas")
	if err := os.MkdirAll(sdir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sdir, "v1.0.0.json"), []byte(contactSchema), 0o644); err != nil {
		t.Fatal(err)
	}
	reg, err := contract.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return dir, reg.Tool("crm.update_contact")
}

const decisionLog = `{"tool_id":"crm.update_contact","tool_version":"1.0.0","status_code":200,"outcome":"executed","arguments":{"contact_id":"c_1234","email":"jane.doe@corp.test","phone":"+4915112345678","name":"Janet","age":73,"kids":[{"name":"Tommy"},{"name":"Lisa"}],"tier":"gold"},"result":{"status":"updated","email":"jane.doe@corp.test"},"masked":[],"erased":[]}
{"tool_id":"crm.update_contact","tool_version":"1.0.0","status_code":200,"outcome":"executed","arguments":{"contact_id":"c_9999","email":"bob@corp.test","phone":"+4917099999999","name":"Bobby","age":73,"kids":[{"name":"Tommy"},{"name":"Lisa"}],"tier":"gold"},"result":{"status":"updated","email":"bob@corp.test"},"masked":[],"erased":[]}
{"tool_id":"crm.update_contact","tool_version":"1.0.0","status_code":202,"outcome":"awaiting_approval","arguments":{"contact_id":"c_5555","email":"***","phone":"***","tier":"silver"},"result":null,"masked":["/arguments/email","/arguments/phone"],"erased":["/arguments/name"]}
{"tool_id":"crm.update_contact","tool_version":"1.0.0","status_code":201,"outcome":"executed","arguments":null,"input_hash":"sha256:00","masked":[],"erased":[]}
{"tool_id":"other.tool","tool_version":"1.0.0","status_code":200,"arguments":{"email":"jane.doe@corp.test"}}
not json
`

func TestCaptureFromLogLeaksNothing(t *testing.T) {
	t.Parallel()
	dir, tool := setupTool(t)
	recs, warnings, err := FromLog(strings.NewReader(decisionLog), tool.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 4 || len(warnings) != 1 {
		t.Fatalf("%d records, warnings %q", len(recs), warnings)
	}
	cases, sum := Build(Config{Tool: tool}, recs)
	// line 2 has line 1's shape; the digest-mode line has no arguments.
	if sum.Cases != 2 || sum.Duplicates != 1 || sum.Skipped != 1 {
		t.Fatalf("summary %+v", sum)
	}
	assertClean(t, cases)
	replayCases(t, dir, tool, cases)
	if !strings.Contains(string(cases[0].YAML), `"email":"user1@example.com"`) || !strings.Contains(string(cases[0].YAML), `mock_tool_result: {"email":"user1@example.com","status":"updated"}`) {
		t.Fatalf("case 1:\n%s", cases[0].YAML)
	}
	if !strings.Contains(string(cases[1].YAML), `"name":"redact"`) {
		t.Fatalf("erased name not restored with a synthetic value:\n%s", cases[1].YAML)
	}
}

func TestCaptureFromLedgerLeaksNothing(t *testing.T) {
	t.Parallel()
	dir, tool := setupTool(t)
	ctx := context.Background()
	store, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "ledger.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for i, a := range []struct{ id, tenant, args, body string }{
		{"a1", "acme", `{"contact_id":"c_1234","email":"jane.doe@corp.test","name":"Janet","phone":"+4915112345678"}`, `{"status":"updated","email":"jane.doe@corp.test"}`},
		{"a2", "acme", `{"age":73,"contact_id":"c_1000","email":"bob@corp.test","kids":[{"name":"Tommy"}],"name":"Bobby","phone":"+4917099999999"}`, `{"status":"pending_review"}`},
		{"a3", "other", `{"contact_id":"c_1234","email":"x@corp.test","name":"Xy","phone":"+4900000000"}`, `{"status":"updated"}`},
	} {
		act := &ledger.Action{Tenant: a.tenant, ID: a.id, ToolID: tool.ID, Version: "1.0.0", State: ledger.Succeeded,
			Arguments: []byte(a.args), ArgsDigest: "sha256:x", Result: &ledger.Result{StatusCode: 200, ContentType: "application/json", Body: []byte(a.body)},
			CreatedAt: at.Add(time.Duration(i) * time.Minute), UpdatedAt: at}
		if err := store.Insert(ctx, act); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := FromLedger(ctx, store, "acme", tool.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 {
		t.Fatalf("%d records from tenant acme", len(recs))
	}
	cases, sum := Build(Config{Tool: tool, Agent: "crm_agent"}, recs)
	if sum.Cases != 2 {
		t.Fatalf("summary %+v", sum)
	}
	assertClean(t, cases)
	replayCases(t, dir, tool, cases)
}

// assertClean fails when any secret or mask token reaches a case.
func assertClean(t *testing.T, cases []Case) {
	t.Helper()
	for _, c := range cases {
		for _, s := range append(secrets, "***") {
			if strings.Contains(string(c.YAML), s) {
				t.Fatalf("case %s leaks %q:\n%s", c.ID, s, c.YAML)
			}
		}
	}
}

// replayCases writes the cases into the tool's shadow folder, loads the directory (the
// cases must parse) and replays them: every captured case passes.
func replayCases(t *testing.T, dir string, tool *contract.Tool, cases []Case) {
	t.Helper()
	out := filepath.Join(tool.Dir, "contracts", "shadow")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		if err := os.WriteFile(filepath.Join(out, c.ID+".yaml"), c.YAML, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	reg, err := contract.Load(dir)
	if err != nil {
		t.Fatalf("captured cases do not load: %v", err)
	}
	rep, err := casetest.Run(context.Background(), casetest.Config{Tool: reg.Tool(tool.ID)})
	if err != nil {
		t.Fatal(err)
	}
	if s := rep.Suites[2]; s.Passed != len(cases) || s.Total != len(cases) {
		t.Fatalf("shadow replay %+v: %+v", s, rep.Cases)
	}
	// Captured again, the same calls are duplicates of the cases on disk.
	again, sum := Build(Config{Tool: reg.Tool(tool.ID)}, nil)
	if len(again) != 0 || sum.Cases != 0 {
		t.Fatalf("rebuild %+v", sum)
	}
}

func TestDedupAndSample(t *testing.T) {
	t.Parallel()
	_, tool := setupTool(t)
	var recs []Record
	for i, tier := range []string{"gold", "silver", "gold", "silver", "gold"} {
		args, _ := json.Marshal(map[string]any{"contact_id": "c_1234", "email": "a@b.test", "phone": "+1234567890", "name": "Ab", "tier": tier, "age": 20 + i})
		recs = append(recs, Record{ToolID: tool.ID, ToolVersion: "1.0.0", Arguments: args})
	}
	recs = append(recs, Record{ToolID: tool.ID, ToolVersion: "9.9.9", Arguments: []byte(`{}`)})
	_, sum := Build(Config{Tool: tool}, recs)
	if sum.Cases != 2 || sum.Duplicates != 3 || sum.Skipped != 1 {
		t.Fatalf("enum values are part of the shape: %+v", sum)
	}
	cases, sum := Build(Config{Tool: tool, Sample: 1}, recs)
	if len(cases) != 1 || sum.Sampled != 1 {
		t.Fatalf("sample: %+v", sum)
	}
}

func TestSynthetic(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, schema string
		want         string // JSON of the value, or a regexp when it starts with ~
	}{
		{name: "email", schema: `{"type":"string","format":"email"}`, want: `"user3@example.com"`},
		{name: "pattern", schema: `{"type":"string","pattern":"^ord_[A-Za-z0-9]+$"}`, want: `"ord_3"`},
		{name: "ticket pattern", schema: `{"type":"string","pattern":"^TCK-[0-9]{3,}$"}`, want: `"TCK-333"`},
		{name: "alternation", schema: `{"type":"string","pattern":"^(EUR|USD)$"}`, want: `"EUR"`},
		{name: "unsatisfiable pattern falls back", schema: `{"type":"string","pattern":"^a\\bb$"}`, want: `"redacted"`},
		{name: "length bounds", schema: `{"type":"string","minLength":10,"maxLength":12}`, want: `"redactedxx"`},
		{name: "short max", schema: `{"type":"string","maxLength":3}`, want: `"red"`},
		{name: "enum", schema: `{"type":"string","enum":["chat","email"]}`, want: `"chat"`},
		{name: "integer minimum", schema: `{"type":"integer","minimum":18}`, want: `18`},
		{name: "nullable integer", schema: `{"type":["null","integer"]}`, want: `0`},
		{name: "boolean", schema: `{"type":"boolean"}`, want: `false`},
		{name: "uuid", schema: `{"type":"string","format":"uuid"}`, want: `"00000000-0000-4000-8000-000000000003"`},
		{name: "object with required", schema: `{"type":"object","required":["a"],"properties":{"a":{"type":"string","format":"date"}}}`, want: `{"a":"2000-01-01"}`},
		{name: "local ref", schema: `{"$ref":"#/$defs/e","$defs":{"e":{"type":"string","format":"email"}}}`, want: `"user3@example.com"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := contract.DecodeJSON([]byte(tt.schema))
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(synthetic(s, s, 3))
			if string(got) != tt.want {
				t.Fatalf("got %s, want %s", got, tt.want)
			}
			if p, ok := s.(map[string]any)["pattern"].(string); ok && string(got) != `"redacted"` {
				if !regexp.MustCompile(p).MatchString(strings.Trim(string(got), `"`)) {
					t.Fatalf("%s does not match %s", got, p)
				}
			}
		})
	}
}

// TestCaptureMasksByEveryVersion: a log line's tool_version is the version
// that served the call, which for a retry under an existing key is not the
// version its arguments were sent for; a field sensitive in any version, or
// behind any applicator, is never copied into a case, nor is a sensitive
// value a downstream echoed into a field the result schema does not mark.
func TestCaptureMasksByEveryVersion(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	params := func(noteSensitive bool) string {
		mark := ""
		if noteSensitive {
			mark = `,"x-sensitive":true`
		}
		return `{"type":"object","$defs":{"pin":{"$anchor":"pin","type":"string","x-sensitive":true}},"properties":{
		  "id":{"type":"string"},"note":{"type":"string"` + mark + `},"pin":{"$ref":"#pin"},
		  "tree":{"$ref":"#/$defs/node"}},"dependentSchemas":{"id":{"properties":{"card":{"x-sensitive":true}}}}}`
	}
	for v, sens := range map[string]bool{"1.0.0": false, "1.1.0": true} {
		file := `{"tool_id":"vault.put","version":"` + v + `","name":"put","effect":"mutating","parameters":` +
			strings.Replace(params(sens), `"$defs":{`, `"$defs":{"node":{"type":"object","properties":{"secret":{"x-sensitive":true},"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}}},`, 1) +
			`,"result":{"type":"object","properties":{"echo":{"type":"string"}}}}`
		sdir := filepath.Join(dir, "vault.put", "schemas")
		if err := os.MkdirAll(sdir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(sdir, "v"+v+".json"), []byte(file), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	reg, err := contract.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	tool := reg.Tool("vault.put")
	const note, pin, card, deep = "NOTE-secret-1", "PIN-secret-2", "CARD-secret-3", "DEEP-secret-4"
	line := `{"tool_id":"vault.put","tool_version":"1.0.0","status_code":201,"outcome":"executed","masked":[],"erased":[],` +
		`"arguments":{"id":"i-1","note":"` + note + `","pin":"` + pin + `","card":"` + card + `","tree":{"kids":[{"kids":[{"secret":"` + deep + `"}]}]}},` +
		`"result":{"echo":"stored ` + pin + ` for you"}}`
	recs, _, err := FromLog(strings.NewReader(line+"\n"), tool.ID)
	if err != nil {
		t.Fatal(err)
	}
	cases, sum := Build(Config{Tool: tool}, recs)
	if len(cases) != 1 {
		t.Fatalf("summary %+v", sum)
	}
	for _, s := range []string{note, pin, card, deep} {
		if strings.Contains(string(cases[0].YAML), s) {
			t.Errorf("the case copies %q:\n%s", s, cases[0].YAML)
		}
	}
}

// TestSyntheticValuesOfReferencesEnd: a sensitive value behind a $ref to an
// $anchor (which once resolved to the whole document and recursed without
// end) or a schema whose required member refers back to itself gets a plain
// synthetic value.
func TestSyntheticValuesOfReferencesEnd(t *testing.T) {
	t.Parallel()
	for _, schema := range []string{
		`{"type":"object","required":["a","p"],"properties":{"a":{"type":"string"},"p":{"$ref":"#sec"}},"$defs":{"s":{"$anchor":"sec","x-sensitive":true,"type":"string"}}}`,
		`{"type":"object","required":["p"],"properties":{"p":{"x-sensitive":true,"$ref":"#/$defs/n"}},"$defs":{"n":{"type":"object","required":["next"],"properties":{"next":{"$ref":"#/$defs/n"}}}}}`,
	} {
		v, problems := contract.ParseVersion("t.tool/schemas/v1.0.0.json", []byte(`{"tool_id":"t.tool","version":"1.0.0","name":"t","effect":"mutating","parameters":`+schema+`}`), "t.tool", "1.0.0")
		if len(problems) > 0 {
			t.Fatal(problems)
		}
		tool := &contract.Tool{ID: "t.tool", Versions: []*contract.Version{v}}
		cases, sum := Build(Config{Tool: tool}, []Record{{ToolID: "t.tool", ToolVersion: "1.0.0", Arguments: json.RawMessage(`{"a":"x","p":{"next":{"next":"SECRET-p"}}}`)}})
		if len(cases) != 1 || strings.Contains(string(cases[0].YAML), "SECRET") {
			t.Fatalf("summary %+v, cases %v", sum, cases)
		}
	}
}
