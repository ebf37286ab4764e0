package schemadiff

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/url"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"github.com/toolgate/toolgate/internal/jsonschemax"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// validator is one schema document compiled the way toolgate's contract loader compiles
// parameters and results: draft 2020-12 unless `$schema` names another draft, `format`
// asserted, no external references. Counterexamples are shown only after this validator
// has accepted them under one version and refused them under the other, and the
// subschema check asks it whether a value is valid at a location of the document.
type validator struct {
	c     *jsonschema.Compiler
	url   string
	err   error // the root does not compile: nothing can be validated
	byPtr map[string]*jsonschema.Schema
	bad   map[string]error
}

// noRemote refuses every external reference, as the contract loader does.
type noRemote struct{}

func (noRemote) Load(url string) (any, error) {
	return nil, fmt.Errorf("external reference %q is not loaded", url)
}

// newValidator compiles doc (decoded by encoding/json, with float64 or json.Number
// numbers). name keeps the two documents' URLs apart in error texts.
func newValidator(doc any, name string) *validator {
	v := &validator{url: "urn:toolgate:schemadiff:" + name, byPtr: map[string]*jsonschema.Schema{}, bad: map[string]error{}}
	data, err := json.Marshal(doc)
	if err != nil {
		v.err = err
		return v
	}
	parsed, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		v.err = err
		return v
	}
	v.c = jsonschema.NewCompiler()
	v.c.DefaultDraft(jsonschema.Draft2020)
	jsonschemax.ConfigureDocument(v.c, parsed)
	v.c.UseLoader(noRemote{})
	if err := v.c.AddResource(v.url, parsed); err != nil {
		v.err = err
		return v
	}
	if _, err := v.schema(""); err != nil {
		v.err = err
	}
	return v
}

// schema compiles (once) the subschema at a JSON pointer of the document.
func (v *validator) schema(ptr string) (s *jsonschema.Schema, err error) {
	if s, ok := v.byPtr[ptr]; ok {
		return s, nil
	}
	if err, ok := v.bad[ptr]; ok {
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("compile %s: %v", ptr, r)
		}
		if err != nil {
			v.bad[ptr] = err
		} else {
			v.byPtr[ptr] = s
		}
	}()
	if v.c == nil {
		return nil, v.err
	}
	return v.c.Compile(v.url + "#" + fragment(ptr))
}

// fragment percent-encodes a JSON pointer for use as a URL fragment.
func fragment(ptr string) string {
	var b strings.Builder
	for _, r := range []byte(ptr) {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.IndexByte("-._~/", r) >= 0:
			b.WriteByte(r)
		default:
			fmt.Fprintf(&b, "%%%02X", r)
		}
	}
	return b.String()
}

// valid reports whether x is valid against the subschema at ptr; ok is false when that
// location cannot be compiled or the validator gives up.
func (v *validator) valid(ptr string, x any) (valid, ok bool) {
	s, err := v.schema(ptr)
	if err != nil {
		return false, false
	}
	defer func() {
		if recover() != nil {
			valid, ok = false, false
		}
	}()
	err = s.Validate(x)
	if err == nil {
		return true, true
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return false, false
	}
	return false, true
}

var errPrinter = message.NewPrinter(language.Und)

// refusal explains, in one line, why the whole document refuses x: the failing keyword
// at site (the refusing schema's pointer and keyword, "/properties/a/maximum") when it is
// among the errors, else the first one; with the number of other errors.
func (v *validator) refusal(x any, site string) string {
	s, err := v.schema("")
	if err != nil {
		return ""
	}
	defer func() { _ = recover() }()
	var ve *jsonschema.ValidationError
	if !errors.As(s.Validate(x), &ve) {
		return ""
	}
	jsonschemax.FixLocations(x, ve)
	var leaves []*jsonschema.ValidationError
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			leaves = append(leaves, e)
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	if len(leaves) == 0 {
		return ""
	}
	pick := leaves[0]
	if site != "" {
		for _, l := range leaves {
			if loc := leafLocation(l); loc == site || strings.HasPrefix(loc, site+"/") {
				pick = l
				break
			}
		}
	}
	at := "/" + strings.Join(escapeAll(pick.InstanceLocation), "/")
	if len(pick.InstanceLocation) == 0 {
		at = "(root)"
	}
	out := at + ": " + leafMessage(pick.ErrorKind)
	switch n := len(leaves) - 1; {
	case n == 1:
		out += " (and 1 more error)"
	case n > 1:
		out += " (and " + strconv.Itoa(n) + " more errors)"
	}
	return out
}

// leafMessage is the library's message, except that numbers are written as JSON writes
// them (its printer groups digits: "100,000").
func leafMessage(k jsonschema.ErrorKind) string {
	rat := func(r *big.Rat) string {
		if j, ok := ratJSON(r); ok {
			return string(j)
		}
		return r.RatString()
	}
	switch x := k.(type) {
	case *kind.Minimum:
		return "minimum: got " + rat(x.Got) + ", want " + rat(x.Want)
	case *kind.Maximum:
		return "maximum: got " + rat(x.Got) + ", want " + rat(x.Want)
	case *kind.ExclusiveMinimum:
		return "exclusiveMinimum: got " + rat(x.Got) + ", want more than " + rat(x.Want)
	case *kind.ExclusiveMaximum:
		return "exclusiveMaximum: got " + rat(x.Got) + ", want less than " + rat(x.Want)
	case *kind.MultipleOf:
		return "multipleOf: got " + rat(x.Got) + ", want a multiple of " + rat(x.Want)
	case *kind.MinLength:
		return counts("minLength", x.Got, x.Want)
	case *kind.MaxLength:
		return counts("maxLength", x.Got, x.Want)
	case *kind.MinItems:
		return counts("minItems", x.Got, x.Want)
	case *kind.MaxItems:
		return counts("maxItems", x.Got, x.Want)
	case *kind.MinProperties:
		return counts("minProperties", x.Got, x.Want)
	case *kind.MaxProperties:
		return counts("maxProperties", x.Got, x.Want)
	}
	return oneLine(k.LocalizedString(errPrinter))
}

func counts(kw string, got, want int) string {
	return kw + ": got " + strconv.Itoa(got) + ", want " + strconv.Itoa(want)
}

// leafLocation is the document pointer of the keyword an error is about.
func leafLocation(e *jsonschema.ValidationError) string {
	loc := e.SchemaURL
	if i := strings.IndexByte(loc, '#'); i >= 0 {
		loc = loc[i+1:]
	} else {
		loc = ""
	}
	if un, err := url.PathUnescape(loc); err == nil {
		loc = un
	}
	for _, k := range e.ErrorKind.KeywordPath() {
		loc += "/" + escape(k)
	}
	return loc
}

// errorCount counts the leaf errors the whole document reports for x.
func (v *validator) errorCount(x any) (n int) {
	s, err := v.schema("")
	if err != nil {
		return 0
	}
	defer func() { _ = recover() }()
	var ve *jsonschema.ValidationError
	if !errors.As(s.Validate(x), &ve) {
		return 0
	}
	var count func(e *jsonschema.ValidationError)
	count = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			n++
		}
		for _, c := range e.Causes {
			count(c)
		}
	}
	count(ve)
	return n
}

func escapeAll(segs []string) []string {
	out := make([]string, len(segs))
	for i, s := range segs {
		out[i] = escape(s)
	}
	return out
}

// assertedFormats are the format names the validator checks; any other format is an
// annotation and accepts every value.
var assertedFormats = map[string]bool{
	"json-pointer": true, "relative-json-pointer": true, "uuid": true, "duration": true, "period": true,
	"ipv4": true, "ipv6": true, "hostname": true, "email": true, "date": true, "time": true,
	"date-time": true, "uri": true, "iri": true, "uri-reference": true, "iri-reference": true,
	"uri-template": true, "semver": true, "regex": true,
}

// formatChecker validates single values against {"format": name} with the same library,
// for reasoning about strings outside any document.
type formatChecker struct {
	byName map[string]*jsonschema.Schema
}

func (f *formatChecker) check(name string, s string) (valid, ok bool) {
	if f.byName == nil {
		f.byName = map[string]*jsonschema.Schema{}
	}
	sch, seen := f.byName[name]
	if !seen {
		c := jsonschema.NewCompiler()
		jsonschemax.Configure(c)
		c.UseLoader(noRemote{})
		url := "urn:toolgate:schemadiff:format"
		if err := c.AddResource(url, map[string]any{"format": name}); err == nil {
			sch, _ = c.Compile(url)
		}
		f.byName[name] = sch
	}
	if sch == nil {
		return false, false
	}
	return sch.Validate(s) == nil, true
}
