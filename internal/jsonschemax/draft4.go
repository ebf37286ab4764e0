package jsonschemax

import (
	"encoding/json"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// Draft-04 defines an integer as "a JSON number without a fraction or exponent part"
// (draft-04 core §3.5): 1.0 and 1e2 are numbers there, not integers. Later drafts
// define an integer by its value (1.0 is one). The schema library reads every draft
// the later way, so a document that declares draft-04 gets one more keyword check: a
// `type` that allows integers but not numbers refuses an integral value written with
// a fraction or exponent part.

// draft04Vocab names the vocabulary that adds draft-04's integer rule.
const draft04Vocab = "urn:toolgate:vocab:draft-04-integer"

// ConfigureDocument is Configure for a compiler that compiles doc (a decoded schema
// document): it also applies the type rules of the draft doc declares.
func ConfigureDocument(c *jsonschema.Compiler, doc any) {
	Configure(c)
	if IsDraft04(doc) {
		c.RegisterVocabulary(&jsonschema.Vocabulary{URL: draft04Vocab, Compile: compileDraft04Integer})
	}
}

// IsDraft04 reports whether a document's root declares draft-04 in `$schema`.
func IsDraft04(doc any) bool {
	m, _ := doc.(map[string]any)
	s, _ := m["$schema"].(string)
	s = strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(s, "https://"), "http://"), "#")
	return s == "json-schema.org/draft-04/schema"
}

type draft04Integer struct{ want []string }

func compileDraft04Integer(_ *jsonschema.CompilerContext, obj map[string]any) (jsonschema.SchemaExt, error) {
	var types []string
	switch t := obj["type"].(type) {
	case string:
		types = []string{t}
	case []any:
		for _, e := range t {
			if s, ok := e.(string); ok {
				types = append(types, s)
			}
		}
	}
	hasInt, hasNum := false, false
	for _, t := range types {
		hasInt = hasInt || t == "integer"
		hasNum = hasNum || t == "number"
	}
	if !hasInt || hasNum {
		return nil, nil
	}
	return &draft04Integer{want: types}, nil
}

func (d *draft04Integer) Validate(ctx *jsonschema.ValidatorContext, v any) {
	if NumberWithFraction(v) {
		ctx.AddError(&kind.Type{Got: "number", Want: d.want})
	}
}

// NumberWithFraction reports whether v is a number whose JSON text has a fraction or
// exponent part (a float64 is read through the text encoding/json writes for it).
func NumberWithFraction(v any) bool {
	var s string
	switch x := v.(type) {
	case json.Number:
		s = string(x)
	case float64:
		b, err := json.Marshal(x)
		if err != nil {
			return false
		}
		s = string(b)
	default:
		return false
	}
	return strings.ContainsAny(s, ".eE")
}
