package importer

import (
	"strings"
	"testing"
	"unicode"

	"go.yaml.in/yaml/v3"
)

// breakers are every character that breaks a line, is a control, a bidi or
// zero-width format character, or a YAML indicator.
var breakers = func() []string {
	out := []string{"\n", "\r", "\r\n", "\u0085", "\u2028", "\u2029", "\t", "\x00", "\x1b", "\x7f", "\v", "\f",
		"\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u061c", "\u200e", "\u200f",
		"\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069", "\\", "\"", "'"}
	for _, c := range ":#{}[],&*!|>%@`-? " {
		out = append(out, string(c))
	}
	for c := rune(0); c < 0x20; c++ {
		out = append(out, string(c))
	}
	return out
}()

// snippetHolds: the snippet of a binding holding s in every place a name
// can stand reads back as exactly that binding and shows nothing hidden.
func snippetHolds(t *testing.T, s string) {
	t.Helper()
	b := map[string]any{
		"url": "https://h.example/" + s, "body": "form", "body_omit": []any{s, "x"},
		"form_encoding": map[string]any{s: map[string]any{"style": "deepObject", "explode": true}},
		"#":             "lookup: {url: \"" + s + "\"}",
	}
	out, err := Snippet([]Tool{{ID: "t.x", Binding: b}})
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	var got struct {
		Bindings map[string]map[string]any `yaml:"bindings"`
	}
	if err := yaml.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%q: %v\n%s", s, err, out)
	}
	g := got.Bindings["t.x"]
	fe, _ := g["form_encoding"].(map[string]any)
	if len(got.Bindings) != 1 || len(g) != 4 || g["url"] != "https://h.example/"+s || len(fe) != 1 || fe[s] == nil {
		t.Fatalf("%q: read back as %v:\n%s", s, got.Bindings, out)
	}
	for _, r := range out {
		if r != '\n' && r != ' ' && (!unicode.IsPrint(r) || unicode.Is(unicode.Cf, r)) {
			t.Fatalf("%q: the snippet shows %U as it is:\n%s", s, r, out)
		}
	}
}

func TestSnippetNamesRoundTrip(t *testing.T) {
	t.Parallel()
	for _, c := range breakers {
		for _, s := range []string{c, "a" + c + "b", c + "lookup: {url: http://evil}", "x: {}}" + c + "    lookup: {url: \"http://evil\"}" + c + "    #", "- " + c, c + c} {
			snippetHolds(t, s)
		}
	}
}

func FuzzSnippet(f *testing.F) {
	for _, c := range breakers {
		f.Add("x: {}}" + c + "    lookup: {url: \"http://evil\"}" + c + "    #")
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8Valid(s) {
			return // names come from a parsed document: always UTF-8
		}
		snippetHolds(t, s)
	})
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "") == s }

// Visible leaves nothing hidden and is unambiguous (a backslash is doubled).
func TestVisible(t *testing.T) {
	t.Parallel()
	for _, c := range breakers {
		v := Visible("a" + c + "b")
		for _, r := range v {
			if r != ' ' && (!unicode.IsPrint(r) || unicode.Is(unicode.Cf, r)) {
				t.Fatalf("%q shows %U", c, r)
			}
		}
	}
	if Visible(`a\u202Eb`) == Visible("a\u202eb") {
		t.Fatal("an escape and the character it names look alike")
	}
}
