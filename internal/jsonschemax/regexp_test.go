package jsonschemax

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

func TestECMARegexp(t *testing.T) {
	t.Parallel()
	// ECMA-262 WhiteSpace and LineTerminator: what \s matches, unlike Go's RE2 [\t\n\f\r ].
	ecmaSpace := []string{"\t", "\n", "\v", "\f", "\r", " ", "\u00a0", "\u1680", "\u2000", "\u200a",
		"\u2028", "\u2029", "\u202f", "\u205f", "\u3000", "\ufeff"}
	notSpace := []string{"\u0085", "\u200b", "\u180e", "x", "0", "_"}
	cases := []struct {
		pat string
		yes []string
		no  []string
	}{
		{`^\s$`, ecmaSpace, notSpace},
		{`^\S$`, notSpace, ecmaSpace},
		{`^(?=.*[A-Z])(?=.*\d).{8,}$`, []string{"Passw0rdX"}, []string{"password1", "PASSWORD", "Pa1"}},
		{`^(?!admin$)[a-z]+$`, []string{"alice", "admins"}, []string{"admin"}},
		{`^\cC$`, []string{"\x03"}, []string{"cC", "C"}},
		{`^\d+$`, []string{"0123"}, []string{"\u0663", "\uff11"}}, // \d is ASCII only in ECMA-262
		{`^\w+$`, []string{"a_Z9"}, []string{"\u00e9", "-"}},
		{`^.$`, []string{"a", "\u00e9", "\U0001F600"}, []string{"\n", "\r", "\u2028", "\u2029"}},
		{`^\p{Letter}+$`, []string{"\u00e9t\u00e9"}, []string{"1"}},
		{`^\u{1F600}$`, []string{"\U0001F600"}, []string{"u"}},
		{`^[^]$`, []string{"\n"}, []string{""}},
		{`(?<y>\d{4})-\k<y>`, []string{"2020-2020"}, []string{"2020-2021"}},
		{`ab`, []string{"xaby"}, []string{"a"}}, // unanchored, as JSON Schema patterns are
	}
	for _, c := range cases {
		re, err := CompileRegexp(c.pat)
		if err != nil {
			t.Errorf("%q does not compile: %v", c.pat, err)
			continue
		}
		for _, s := range c.yes {
			if !re.MatchString(s) {
				t.Errorf("%q does not match %q", c.pat, s)
			}
		}
		for _, s := range c.no {
			if re.MatchString(s) {
				t.Errorf("%q matches %q", c.pat, s)
			}
		}
	}
	for _, bad := range []string{`(`, `[a-`, `a{2,1}`, `*`, `(?<n>a)(?<n>b)`} {
		if _, err := CompileRegexp(bad); err == nil {
			t.Errorf("%q compiles", bad)
		}
	}
}

func TestPatternTimeout(t *testing.T) {
	t.Parallel()
	// A regular pattern runs on its RE2 translation: linear, exact, no limit needed.
	lin, err := CompileRegexp(`^(a+)+$`)
	if err != nil || !lin.Linear() {
		t.Fatalf("^(a+)+$ is not matched in linear time (%v)", err)
	}
	if m, err := lin.Match(strings.Repeat("a", 5000) + "!"); m || err != nil {
		t.Fatalf("^(a+)+$ on a's and !: %v %v", m, err)
	}
	// A lookahead needs the backtracking engine, under the time limit.
	re, err := CompileRegexp(`^(?=(a+)+$)`)
	if err != nil {
		t.Fatal(err)
	}
	if re.Linear() {
		t.Fatal("a lookahead was translated to RE2")
	}
	hostile := strings.Repeat("a", 40) + "!"
	if _, err := re.Match(hostile); err == nil {
		t.Fatalf("a catastrophic match finished without an error")
	}
	func() {
		defer func() {
			r := recover()
			pt, ok := Recovered(r)
			if !ok || pt.Pattern != `^(?=(a+)+$)` {
				t.Errorf("MatchString panicked with %v, want a *PatternTimeout", r)
			}
			var as *PatternTimeout
			if !errors.As(error(pt), &as) {
				t.Errorf("PatternTimeout is not an error")
			}
		}()
		re.MatchString(hostile)
	}()
}

func compile(t *testing.T, schema string) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	Configure(c)
	if err := c.AddResource("urn:t", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("urn:t")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The compiler takes the ECMA patterns, and format "regex" is ECMA-262 too.
func TestConfigureCompiler(t *testing.T) {
	t.Parallel()
	s := compile(t, `{"properties": {"p": {"pattern": "^(?=.*[A-Z])"}, "r": {"format": "regex"}, "h": {"format": "hostname"}},
		"patternProperties": {"^\\cC": {"type": "integer"}}}`)
	for _, c := range []struct {
		doc   string
		valid bool
	}{
		{`{"p": "aB"}`, true}, {`{"p": "ab"}`, false}, {`{"r": "^(?=a)"}`, true}, {`{"r": "("}`, false},
		{`{"h": "3com.com"}`, true}, {`{"h": "a_b"}`, false}, {"{\"\\u0003x\": 1}", true}, {"{\"\\u0003x\": \"1\"}", false},
	} {
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(c.doc))
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Validate(v) == nil; got != c.valid {
			t.Errorf("%s: valid = %v, want %v", c.doc, got, c.valid)
		}
	}
}

// The library records a propertyNames error with its location slice uncopied; a
// sibling validated later overwrote it in about one run out of five. FixLocations
// must give the same, right pointer every time, under parallel validation.
func TestPropertyNamesLocationStable(t *testing.T) {
	t.Parallel()
	s := compile(t, `{"properties": {
		"a": {"properties": {"x": {"propertyNames": {"maxLength": 2}}, "y": {}, "z": {}}},
		"b": {"additionalProperties": {"propertyNames": {"pattern": "^[a-z]+$"}}},
		"c": {"type": "object"}, "d": {}, "e": {}}}`)
	doc := `{"a": {"x": {"long": 1, "ok": 2}, "y": {"p": 1}, "z": {"q": {"r": 1}}},
		"b": {"m": {"BAD": 1, "good": 2}, "n": {"fine": 1}, "o": {"ALSO": 1}},
		"c": {"k": 1}, "d": {"k": [1, 2, {"k": 3}]}, "e": 1}`
	want := "/a/x long|/b/m BAD|/b/o ALSO"
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				v, _ := jsonschema.UnmarshalJSON(strings.NewReader(doc))
				var ve *jsonschema.ValidationError
				if !errors.As(s.Validate(v), &ve) {
					errs <- "no error"
					return
				}
				FixLocations(v, ve)
				if got := propertyNameErrors(ve); got != want {
					errs <- got
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Errorf("propertyNames pointers = %s, want %s", e, want)
	}
}

func propertyNameErrors(e *jsonschema.ValidationError) string {
	var out []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if k, ok := e.ErrorKind.(interface{ KeywordPath() []string }); ok && len(k.KeywordPath()) == 1 && k.KeywordPath()[0] == "propertyNames" {
			var b bytes.Buffer
			for _, s := range e.InstanceLocation {
				b.WriteString("/" + s)
			}
			out = append(out, fmt.Sprintf("%s %s", b.String(), propName(e)))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(e)
	sortStrings(out)
	return strings.Join(out, "|")
}

// Two objects hold the refused name and only one is under propertyNames: the schema's
// location picks it; when nothing can tell them apart, the error stays at the nearest
// certain ancestor without naming a member.
func TestPropertyNamesLocationAmbiguous(t *testing.T) {
	t.Parallel()
	s := compile(t, `{"properties": {"a": {"propertyNames": {"maxLength": 2}}, "b": {}}}`)
	for i := 0; i < 50; i++ {
		v, _ := jsonschema.UnmarshalJSON(strings.NewReader(`{"a": {"long": 1}, "b": {"long": 1}}`))
		var ve *jsonschema.ValidationError
		if !errors.As(s.Validate(v), &ve) {
			t.Fatal("no error")
		}
		FixLocations(v, ve)
		if got := propertyNameErrors(ve); got != "/a long" {
			t.Fatalf("pointers = %s, want /a long", got)
		}
	}
	// under patternProperties nothing in the schema's location tells the objects apart
	s = compile(t, `{"patternProperties": {"^a$": {"propertyNames": {"maxLength": 2}}}, "properties": {"b": {}}}`)
	v, _ := jsonschema.UnmarshalJSON(strings.NewReader(`{"a": {"long": 1}, "b": {"long": 1}}`))
	var ve *jsonschema.ValidationError
	if !errors.As(s.Validate(v), &ve) {
		t.Fatal("no error")
	}
	FixLocations(v, ve)
	var kinds []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if u, ok := e.ErrorKind.(*UnplacedPropertyName); ok {
			kinds = append(kinds, fmt.Sprintf("%v %s", e.InstanceLocation, u.Property))
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	if len(kinds) != 1 || kinds[0] != "[] long" {
		t.Fatalf("unplaced errors = %v", kinds)
	}
}
