package masking

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/decisionlog"
)

// registry loads a tools directory of one tool, t.tool, with the versions
// given (version → parameters schema).
func registry(t *testing.T, versions map[string]string) *contract.Registry {
	t.Helper()
	dir := t.TempDir()
	for v, params := range versions {
		file := `{"tool_id":"t.tool","version":"` + v + `","name":"t","effect":"mutating","parameters":` + params +
			`,"result":{"type":"object","properties":{"pin":{"x-sensitive":true}}}}`
		p := filepath.Join(dir, "t.tool", "schemas", "v"+v+".json")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(file), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	reg, err := contract.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// TestCallPicksTheMasker: a call's payloads are masked by their version's
// pointers only when the arguments were sent for the version that served;
// else by every version's; for an unknown tool, erased.
func TestCallPicksTheMasker(t *testing.T) {
	t.Parallel()
	reg := registry(t, map[string]string{
		"1.0.0": `{"type":"object","properties":{"a":{"x-sensitive":true},"b":{}}}`,
		"1.1.0": `{"type":"object","properties":{"a":{},"b":{"x-sensitive":true}}}`,
	})
	s, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	masked := func(m *decisionlog.Masker) string {
		rec := decisionlog.Record{Arguments: json.RawMessage(`{"a":"va-secret","b":"vb-secret"}`), Result: json.RawMessage(`{"pin":"p-secret"}`)}
		if err := m.Apply(&rec, decisionlog.ModeMasked); err != nil {
			t.Fatal(err)
		}
		return string(rec.Arguments) + " " + string(rec.Result)
	}
	tests := []struct {
		name, tool, argsVersion, version, want string
	}{
		{"sent for the version that served", "t.tool", "1.1.0", "1.1.0", `{"a":"va-secret","b":"***"} {"pin":"***"}`},
		{"sent for another version", "t.tool", "1.1.0", "1.0.0", `{"a":"***","b":"***"} {"pin":"***"}`},
		{"version unknown", "t.tool", "", "1.0.0", `{"a":"***","b":"***"} {"pin":"***"}`},
		{"a version the tool does not have", "t.tool", "9.9.9", "9.9.9", `{"a":"***","b":"***"} {"pin":"***"}`},
		{"an unknown tool", "no.tool", "1.0.0", "1.0.0", ` `},
	}
	for _, tc := range tests {
		if got := masked(s.Call(tc.tool, tc.argsVersion, tc.version)); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
	if got := masked(s.Version("t.tool", "1.0.0")); !strings.Contains(got, `"b":"vb-secret"`) || strings.Contains(got, "va-secret") {
		t.Errorf("Version 1.0.0: %s", got)
	}
}
