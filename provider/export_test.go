package provider

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/contract"
)

func TestExportNames(t *testing.T) {
	t.Parallel()
	long := "a." + strings.Repeat("x", 70)
	tests := []struct {
		name   string
		format string
		ids    []string
		want   map[string]string
	}{
		{"dots rewritten for openai", FormatOpenAI, []string{"payments.issue_refund"}, map[string]string{"payments.issue_refund": "payments_issue_refund"}},
		{"dots kept for mcp", FormatMCP, []string{"payments.issue_refund"}, map[string]string{"payments.issue_refund": "payments.issue_refund"}},
		{"valid name kept", FormatAnthropic, []string{"get_weather"}, map[string]string{"get_weather": "get_weather"}},
		{"collision: the rewritten name yields", FormatOpenAI, []string{"a.b", "a_b"}, map[string]string{"a.b": "a_b_" + hash8("a.b"), "a_b": "a_b"}},
		{"two rewritten names collide", FormatOpenAI, []string{"a.b", "a-b.x", "a/b"}, map[string]string{"a.b": "a_b_" + hash8("a.b"), "a/b": "a_b_" + hash8("a/b"), "a-b.x": "a-b_x"}},
		{"too long for anthropic", FormatAnthropic, []string{long}, map[string]string{long: ("a_" + strings.Repeat("x", 53))[:55] + "_" + hash8(long)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := ExportNames(tt.format, tt.ids)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
			for _, n := range got {
				if len(n) > 64 {
					t.Errorf("%q is longer than 64", n)
				}
			}
		})
	}
}

func hash8(id string) string {
	return strings.TrimPrefix(hashed("", id, 64), "_")
}

func TestStrictSchema(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
		warnings       int
	}{
		{"optional becomes nullable and required",
			`{"type":"object","additionalProperties":false,"properties":{"a":{"type":"string"},"b":{"type":"integer"}},"required":["a"]}`,
			`{"additionalProperties":false,"properties":{"a":{"type":"string"},"b":{"type":["integer","null"]}},"required":["a","b"],"type":"object"}`, 0},
		{"enum gains null", `{"type":"object","properties":{"c":{"type":"string","enum":["x"]}}}`,
			`{"additionalProperties":false,"properties":{"c":{"enum":["x",null],"type":["string","null"]}},"required":["c"],"type":"object"}`, 0},
		{"untyped optional wrapped in anyOf", `{"type":"object","properties":{"r":{"$ref":"#/$defs/x","description":"d"}},"$defs":{"x":{"type":"string"}}}`,
			`{"$defs":{"x":{"type":"string"}},"additionalProperties":false,"properties":{"r":{"anyOf":[{"$ref":"#/$defs/x"},{"type":"null"}],"description":"d"}},"required":["r"],"type":"object"}`, 0},
		{"unsupported keywords move into the description", `{"type":"object","properties":{"k":{"type":"string","minLength":8,"description":"Key."}},"required":["k"]}`,
			`{"additionalProperties":false,"properties":{"k":{"description":"Key. Constraints: minLength: 8.","type":"string"}},"required":["k"],"type":"object"}`, 1},
		{"open object closed with a warning", `{"type":"object","additionalProperties":true,"properties":{}}`,
			`{"additionalProperties":false,"properties":{},"required":[],"type":"object"}`, 1},
		{"oneOf becomes anyOf", `{"type":"object","properties":{"v":{"oneOf":[{"type":"string"},{"type":"integer"}]}},"required":["v"]}`,
			`{"additionalProperties":false,"properties":{"v":{"anyOf":[{"type":"string"},{"type":"integer"}]}},"required":["v"],"type":"object"}`, 1},
		{"nested objects in arrays", `{"type":"object","properties":{"l":{"type":"array","items":{"type":"object","properties":{"q":{"type":"integer"}}}}},"required":["l"]}`,
			`{"additionalProperties":false,"properties":{"l":{"items":{"additionalProperties":false,"properties":{"q":{"type":["integer","null"]}},"required":["q"],"type":"object"},"type":"array"}},"required":["l"],"type":"object"}`, 0},
		{"annotations dropped", `{"type":"object","properties":{"e":{"type":"string","x-sensitive":true}},"required":["e"]}`,
			`{"additionalProperties":false,"properties":{"e":{"type":"string"}},"required":["e"],"type":"object"}`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in, err := contract.DecodeJSON([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			s := &strictor{}
			got, _ := json.Marshal(s.schema(in, "", true))
			if string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			if len(s.warnings) != tt.warnings {
				t.Errorf("warnings %v, want %d", s.warnings, tt.warnings)
			}
		})
	}
}

func TestExportExamples(t *testing.T) {
	t.Parallel()
	reg, err := contract.Load("../examples/agent-tools")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range Formats {
		out, err := Export(reg, f)
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Tools) != 3 || len(out.Names) != 3 {
			t.Errorf("%s: %d tools, %d names", f, len(out.Tools), len(out.Names))
		}
		for name, id := range out.Names {
			if got, ok := out.ToolID(name); !ok || got != id || reg.Tool(id) == nil {
				t.Errorf("%s: name %s maps to %s", f, name, got)
			}
		}
	}
	if _, err := Export(reg, "gemini"); err == nil {
		t.Error("unknown format accepted")
	}
	mcp, _ := Export(reg, FormatMCP)
	var refund struct {
		Annotations map[string]bool `json:"annotations"`
		Output      map[string]any  `json:"outputSchema"`
	}
	json.Unmarshal(mcp.Tools[1], &refund)
	if !refund.Annotations["destructiveHint"] || refund.Annotations["readOnlyHint"] || !refund.Annotations["idempotentHint"] || refund.Output == nil {
		t.Errorf("payments.issue_refund MCP annotations %v output %v", refund.Annotations, refund.Output != nil)
	}
}

// TestExportSelected: a tool left out is absent from tools, names and versions, and the
// names of the others do not change.
func TestExportSelected(t *testing.T) {
	t.Parallel()
	reg, err := contract.Load("../examples/agent-tools")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range Formats {
		all, _ := Export(reg, f)
		some, err := ExportSelected(reg, f, func(id string) bool { return id != "payments.issue_refund" })
		if err != nil {
			t.Fatal(err)
		}
		if len(some.Tools) != 2 || len(some.Names) != 2 || some.Versions["payments.issue_refund"] != "" {
			t.Fatalf("%s: %d tools, names %v", f, len(some.Tools), some.Names)
		}
		for name, id := range some.Names {
			if all.Names[name] != id {
				t.Errorf("%s: %s is named %s only when another tool is left out", f, id, name)
			}
		}
	}
}
