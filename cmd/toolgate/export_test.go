package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"testing"

	"github.com/toolgate/toolgate/provider"
)

func TestExportCommand(t *testing.T) {
	t.Parallel()
	for _, format := range provider.Formats {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			got := runCLI(t, "", "export", "--format", format, exampleTools)
			if got.code != exitOK {
				t.Fatalf("export: %s", got)
			}
			assertGoldenFile(t, filepath.Join("export", format+".golden"), got.String())
		})
	}
}

func TestExportUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		code int
	}{
		{"no format", []string{"export", exampleTools}, exitUsage},
		{"unknown format", []string{"export", "--format", "gemini", exampleTools}, exitUsage},
		{"broken directory", []string{"export", "--format", "openai", t.TempDir()}, exitUsage},
		{"help", []string{"export", "--help"}, exitOK},
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

var strictAllowed = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range provider.StrictKeywords() {
		m[k] = true
	}
	return m
}()

var openAIName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// TestExportOpenAIStrictInvariants walks every object of `export --format openai` (and
// openai-responses) and checks what strict mode demands: objects closed, every property
// required, no unsupported keyword, names the provider accepts, and a name map back.
func TestExportOpenAIStrictInvariants(t *testing.T) {
	t.Parallel()
	for _, format := range []string{"openai", "openai-responses"} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			got := runCLI(t, "", "export", "--format", format, exampleTools)
			var out struct {
				Tools []map[string]any  `json:"tools"`
				Names map[string]string `json:"names"`
			}
			if err := json.Unmarshal([]byte(got.stdout), &out); err != nil {
				t.Fatalf("%v\n%s", err, got)
			}
			if len(out.Tools) != 3 {
				t.Fatalf("%d tools, want 3", len(out.Tools))
			}
			for _, tool := range out.Tools {
				fn := tool
				if format == "openai" {
					fn, _ = tool["function"].(map[string]any)
				}
				name, _ := fn["name"].(string)
				if tool["type"] != "function" || fn["strict"] != true {
					t.Errorf("%s: type %v strict %v", name, tool["type"], fn["strict"])
				}
				if !openAIName.MatchString(name) {
					t.Errorf("name %q is not a valid OpenAI function name", name)
				}
				if _, ok := out.Names[name]; !ok {
					t.Errorf("name %q missing from the name map", name)
				}
				params, _ := fn["parameters"].(map[string]any)
				if params["type"] != "object" {
					t.Errorf("%s: root is not an object", name)
				}
				checkStrict(t, name, "", params)
			}
		})
	}
}

func checkStrict(t *testing.T, tool, ptr string, node any) {
	t.Helper()
	switch n := node.(type) {
	case []any:
		for i, x := range n {
			checkStrict(t, tool, fmt.Sprintf("%s/%d", ptr, i), x)
		}
	case map[string]any:
		props, hasProps := n["properties"].(map[string]any)
		if isObjectType(n["type"]) || hasProps {
			if n["additionalProperties"] != false {
				t.Errorf("%s %s: object not closed", tool, ptr)
			}
			var keys, req []string
			for k := range props {
				keys = append(keys, k)
			}
			for _, r := range asList(n["required"]) {
				req = append(req, r.(string))
			}
			sort.Strings(keys)
			sort.Strings(req)
			if fmt.Sprint(keys) != fmt.Sprint(req) {
				t.Errorf("%s %s: required %v, properties %v", tool, ptr, req, keys)
			}
		}
		for k, v := range n {
			if k == "properties" || k == "$defs" {
				for name, sub := range v.(map[string]any) {
					checkStrict(t, tool, ptr+"/"+k+"/"+name, sub)
				}
				continue
			}
			if !strictAllowed[k] {
				t.Errorf("%s %s: keyword %q is not allowed in strict mode", tool, ptr, k)
			}
			if k == "items" || k == "anyOf" {
				checkStrict(t, tool, ptr+"/"+k, v)
			}
		}
	}
}

func isObjectType(v any) bool {
	if v == "object" {
		return true
	}
	for _, x := range asList(v) {
		if x == "object" {
			return true
		}
	}
	return false
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}
