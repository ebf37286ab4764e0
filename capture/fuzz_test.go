package capture

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/decisionlog"
)

// FuzzSensitiveValuesNeverMatter: a captured case does not depend on the values of the
// sensitive fields at all — any string there yields the same bytes as a fixed one. The
// one exception is a sensitive value that also stands inside a value the case keeps
// ("c_1234" inside the contact id): it is masked there too, so the case differs, and
// that value is checked to be gone instead.
func FuzzSensitiveValuesNeverMatter(f *testing.F) {
	for _, s := range []string{"jane.doe@corp.test", "", "***", "redacted", "user1@example.com", "\x00\n\"'", "c_1234"} {
		f.Add(s)
	}
	_, tool := setupTool(f)
	capture := func(s string) []byte {
		args, _ := json.Marshal(map[string]any{"contact_id": "c_1234", "email": s, "phone": s, "name": s, "kids": []any{map[string]any{"name": s}}})
		res, _ := json.Marshal(map[string]any{"status": "updated", "email": s})
		cases, _ := Build(Config{Tool: tool}, []Record{{ToolID: tool.ID, ToolVersion: "1.0.0", Arguments: args, Result: res}})
		if len(cases) != 1 {
			f.Fatalf("%d cases", len(cases))
		}
		return cases[0].YAML
	}
	want := capture("fixed")
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) >= decisionlog.MinScrubLength && (strings.Contains("c_1234", s) || strings.Contains("updated", s)) {
			if got := capture(s); bytes.Contains(got, []byte(`"`+s+`"`)) {
				t.Fatalf("the sensitive value %q is kept where it stands inside another value:\n%s", s, got)
			}
			return
		}
		if got := capture(s); !bytes.Equal(got, want) {
			t.Fatalf("the case depends on a sensitive value %q:\n%s\nwant\n%s", s, got, want)
		}
	})
}

// FuzzFromLog: any input is read without panicking, and Build never fails on what it read.
func FuzzFromLog(f *testing.F) {
	f.Add([]byte(decisionLog))
	f.Add([]byte(`{"tool_id":"crm.update_contact","tool_version":"1.0.0","arguments":{"kids":[1,{"name":[]}]},"masked":["/arguments/kids/*/name","/arguments/"],"erased":["/arguments/kids/9/x","/result/a"]}`))
	f.Add([]byte(`{"tool_id":"crm.update_contact","tool_version":"1.0.0","arguments":[1,2],"erased":["/arguments/0"]}`))
	_, tool := setupTool(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, _, err := FromLog(bytes.NewReader(data), tool.ID)
		if err != nil {
			return
		}
		cases, _ := Build(Config{Tool: tool, Sample: 2}, recs)
		for _, c := range cases {
			if !strings.HasPrefix(string(c.YAML), "case_id: shadow_") {
				t.Fatalf("bad case:\n%s", c.YAML)
			}
		}
	})
}
