package lint

import (
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

const goodSchema = `{
  "tool_id": "acme.send_note",
  "version": "1.0.0",
  "name": "send_note",
  "description": "Send a note.",
  "effect": "read_only",
  "parameters": {
    "type": "object",
    "additionalProperties": false,
    "properties": {
      "text": {"type": "string", "description": "The note."}
    },
    "required": ["text"]
  }
}`

// writeLintTool writes acme.send_note with the given files over a clean baseline.
func writeLintTool(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	base := map[string]string{
		"schemas/v1.0.0.json": goodSchema,
		"owner.yaml":          "owner: notes-team\nrisk_level: low\nconsumers: [agent]\n",
		"changelog.md":        "# changelog\n\n## 1.0.0\n\n- first\n",
	}
	for k, v := range files {
		base[k] = v
	}
	for name, body := range base {
		if body == "" {
			continue
		}
		p := filepath.Join(dir, "acme.send_note", name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func withParams(props string) string {
	return strings.Replace(goodSchema, `"text": {"type": "string", "description": "The note."}`, props, 1)
}

// TestChecks: one defect per case, and the finding ids it must produce.
func TestChecks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"clean", nil, nil},
		{"object not closed", map[string]string{"schemas/v1.0.0.json": strings.Replace(goodSchema, `"additionalProperties": false,`, "", 1)}, []string{"object-not-closed"}},
		{"object open on purpose", map[string]string{"schemas/v1.0.0.json": strings.Replace(goodSchema, `"additionalProperties": false,`, `"additionalProperties": true,`, 1)}, nil},
		{"nested object not closed", map[string]string{"schemas/v1.0.0.json": withParams(`"text": {"type": "object", "description": "d", "properties": {"a": {"type": "string", "description": "a"}}}`)}, []string{"object-not-closed"}},
		{"property undescribed", map[string]string{"schemas/v1.0.0.json": withParams(`"text": {"type": "string"}`)}, []string{"property-undescribed"}},
		{"money as number", map[string]string{"schemas/v1.0.0.json": withParams(`"price": {"type": "number", "description": "Price."}`)}, []string{"money-not-integer"}},
		{"enum values undescribed", map[string]string{"schemas/v1.0.0.json": withParams(`"tone": {"type": "string", "enum": ["warm", "cold"], "description": "warm notes only"}`)}, []string{"enum-undescribed"}},
		{"enum described by x-enum-descriptions", map[string]string{"schemas/v1.0.0.json": withParams(`"tone": {"type": "string", "enum": ["warm", "cold"], "description": "Tone.", "x-enum-descriptions": {"warm": "friendly", "cold": "formal"}}`)}, nil},
		{"bad annotations", map[string]string{"schemas/v1.0.0.json": withParams(`"text": {"type": "integer", "description": "d", "x-sensitive": "yes", "x-impact": "money", "x-idempotency-key": true}`)}, []string{"annotation-invalid", "annotation-invalid"}},
		{"idempotency key not a string", map[string]string{"schemas/v1.0.0.json": withParams(`"text": {"type": "integer", "description": "d", "x-idempotency-key": true}`)}, []string{"idempotency-key-not-string"}},
		{"schema keyword typo", map[string]string{"schemas/v1.0.0.json": withParams(`"text": {"type": "string", "description": "d", "maxLenght": 3}`)}, []string{"schema-keyword-unknown"}},
		{"vendor extension", map[string]string{"schemas/v1.0.0.json": withParams(`"text": {"type": "string", "description": "d", "x-acme-label": "T"}`)}, nil},
		{"extension typo", map[string]string{"schemas/v1.0.0.json": withParams(`"text": {"type": "string", "description": "d", "x-sensitiv": true}`)}, []string{"extension-unknown"}},
		{"case field typo", map[string]string{"contracts/golden/c1.yaml": "case_id: c1\ntool: {id: acme.send_note, version: 1.0.0}\nexpected_tool_arguements: {text: hi}\n"}, []string{"field-unknown"}},
		{"case names another tool", map[string]string{"contracts/golden/c1.yaml": "case_id: c1\ntool: {id: acme.send_notes, version: 1.0.0}\nexpected: {validation: ok}\n"}, []string{"case-tool-unknown"}},
		{"misspelt owner file", map[string]string{"ownr.yaml": "owner: x\n"}, []string{"file-unknown"}},
		{"notes are fine", map[string]string{"README.md": "# notes\n"}, nil},
		{"case expects nothing", map[string]string{"contracts/golden/c1.yaml": "case_id: c1\ntool: {id: acme.send_note, version: 1.0.0}\n"}, []string{"case-expects-nothing"}},
		{"owner missing", map[string]string{"owner.yaml": ""}, []string{"consumers-missing", "owner-missing", "risk-level-missing"}},
		{"changelog missing", map[string]string{"changelog.md": ""}, []string{"changelog-missing"}},
		{"changelog misses a version", map[string]string{"changelog.md": "# changelog\n"}, []string{"changelog-version-missing"}},
		{"description missing", map[string]string{"schemas/v1.0.0.json": strings.Replace(goodSchema, `"description": "Send a note.",`, "", 1)}, []string{"description-missing"}},
		{"mutating without golden cases or errors", map[string]string{"schemas/v1.0.0.json": strings.Replace(goodSchema, `"read_only"`, `"mutating"`, 1)}, []string{"errors-missing", "golden-cases-missing"}},
		{"error category", map[string]string{"schemas/v1.0.0.json": strings.Replace(goodSchema, `"parameters"`, `"errors": [{"code": "A"}, {"code": "B", "category": "oops"}], "parameters"`, 1)}, []string{"error-category-invalid", "error-category-missing"}},
		{"rule field unknown", map[string]string{"schemas/v1.0.0.json": strings.Replace(goodSchema, `"parameters"`, `"rules": [{"id": "r", "rule": "true", "field": "/nope"}], "parameters"`, 1)}, []string{"rule-field-unknown"}},
		{"case names a missing version", map[string]string{"contracts/golden/c1.yaml": "case_id: c1\ntool: {id: acme.send_note, version: 9.9.9}\n"}, []string{"case-version-unknown"}},
		{"case id mismatch", map[string]string{"contracts/golden/c1.yaml": "case_id: other\ntool: {id: acme.send_note, version: 1.0.0}\nexpected: {validation: ok}\n"}, []string{"case-id-mismatch"}},
		{"name changed between versions", map[string]string{
			"schemas/v1.1.0.json": strings.Replace(strings.Replace(goodSchema, `"1.0.0"`, `"1.1.0"`, 1), `"send_note"`, `"post_note"`, 1),
			"changelog.md":        "# changelog\n\n## 1.1.0\n\n## 1.0.0\n"}, []string{"name-changed"}},
		{"changelog order", map[string]string{
			"schemas/v1.1.0.json": strings.Replace(goodSchema, `"1.0.0"`, `"1.1.0"`, 1),
			"changelog.md":        "# changelog\n\n## 1.1.0\n\n## 1.0.0\n\n## 1.2.0\n"}, []string{"versions-not-monotonic"}},
		{"load problem", map[string]string{"schemas/v1.0.0.json": "{"}, []string{"load"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := writeLintTool(t, tt.files)
			var got []string
			for _, f := range Run(dir) {
				got = append(got, f.ID)
				if f.File == "" || f.Message == "" || f.Severity == "" {
					t.Errorf("incomplete finding %+v", f)
				}
			}
			sort.Strings(got)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %v, want %v\n%+v", got, tt.want, Run(dir))
			}
		})
	}
}

func TestToolIDFormat(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := writeLintTool(t, nil)
	if err := os.Rename(filepath.Join(src, "acme.send_note"), filepath.Join(dir, "SendNote")); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "SendNote", "schemas", "v1.0.0.json")
	b, _ := os.ReadFile(p)
	os.WriteFile(p, []byte(strings.Replace(string(b), "acme.send_note", "SendNote", 1)), 0o644)
	fs := Run(dir)
	if len(fs) != 1 || fs[0].ID != "tool-id-format" {
		t.Fatalf("got %+v", fs)
	}
}
