package jsonschemax

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Syntax only .NET or Python has is refused at load, with a message naming it; the
// same text in the legacy grammar's identity escapes matches its letter.
func TestECMAGrammarRefusesForeignSyntax(t *testing.T) {
	t.Parallel()
	for pat, says := range map[string]string{
		`(?i)abc`: "inline flag", `(?ims)abc`: "inline flag", `(?#note)a`: "comment group", `\a`: `\a`,
		`(?P<n>a)`: "Python", `(?P<n>a)(?P=n)`: "Python", `(?>a)`: "atomic", `a++`: "possessive", `(?x) a`: "inline flag",
	} {
		_, err := CompileRegexp(pat)
		if err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("%q: error %v, want one that says %q", pat, err, says)
		}
	}
	for pat, cases := range map[string]map[string]bool{
		`^\z$`: {"z": true, "": false}, `^\e$`: {"e": true, "\x1b": false}, `^\A$`: {"A": true, "": false},
		`^\Z\G\h$`: {"ZGh": true}, `^[\c_]$`: {"\x1f": true}, `^\c1$`: {`\c1`: true}, `^\k$`: {"k": true},
		`^a{$`: {"a{": true}, `^]$`: {"]": true}, `^\8$`: {"8": true}, `^\x4$`: {"x4": true},
	} {
		re, err := CompileRegexp(pat)
		if err != nil {
			t.Errorf("%q: %v", pat, err)
			continue
		}
		for s, want := range cases {
			if got, _ := re.Match(s); got != want {
				t.Errorf("%q on %q: %v, want %v", pat, s, got, want)
			}
		}
	}
}

// Draft-04's integer is a number written without a fraction or exponent part; later
// drafts' is any integral value. A document's declared draft decides.
func TestDraft04Integer(t *testing.T) {
	t.Parallel()
	compile := func(doc string) *jsonschema.Schema {
		d, err := jsonschema.UnmarshalJSON(strings.NewReader(doc))
		if err != nil {
			t.Fatal(err)
		}
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft2020)
		ConfigureDocument(c, d)
		if err := c.AddResource("urn:t", d); err != nil {
			t.Fatal(err)
		}
		s, err := c.Compile("urn:t")
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	const d4 = `"$schema":"http://json-schema.org/draft-04/schema#"`
	for _, c := range []struct {
		doc   string
		value string
		valid bool
	}{
		{`{` + d4 + `,"type":"integer"}`, "1", true},
		{`{` + d4 + `,"type":"integer"}`, "1.0", false},
		{`{` + d4 + `,"type":"integer"}`, "1e2", false},
		{`{` + d4 + `,"type":"integer"}`, "-0", true},
		{`{` + d4 + `,"properties":{"n":{"type":["integer","string"]}}}`, `{"n":2.0}`, false},
		{`{` + d4 + `,"type":["integer","number"]}`, "1.0", true},
		{`{` + d4 + `,"type":"number"}`, "1.0", true},
		{`{"$schema":"http://json-schema.org/draft-06/schema#","type":"integer"}`, "1.0", true},
		{`{"type":"integer"}`, "1.0", true},
	} {
		dec := json.NewDecoder(strings.NewReader(c.value))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		if got := compile(c.doc).Validate(v) == nil; got != c.valid {
			t.Errorf("%s with %s: valid = %v, want %v", c.doc, c.value, got, c.valid)
		}
	}
}
