package invoke

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// The rule a form binding holds: what reaches the downstream decodes, under
// the binding's own encoding, to exactly the arguments the contract
// validated (as text: a form has no types), or the call is refused with a
// FormError that names the argument. decodeAs is that decoding, written
// from the encoding's definition (OpenAPI 3 styles, the bracket convention)
// and told only what a downstream knows from its own API: each top-level
// field's kind and the member names of an exploded object.

type fieldKind struct {
	kind    string   // scalar, array, object
	members []string // of an exploded style form object
}

func kindsOf(args map[string]any) map[string]fieldKind {
	out := map[string]fieldKind{}
	for k, v := range args {
		switch x := v.(type) {
		case []any:
			out[k] = fieldKind{kind: "array"}
		case map[string]any:
			out[k] = fieldKind{kind: "object", members: sortedKeys(x)}
		default:
			out[k] = fieldKind{kind: "scalar"}
		}
	}
	return out
}

// decodeAs reads a form body back into arguments under enc.
func decodeAs(body string, enc map[string]FormField, kinds map[string]fieldKind) (map[string]any, error) {
	vals, err := url.ParseQuery(body)
	if err != nil {
		return nil, err
	}
	used := map[string]bool{}
	take := func(key string) ([]string, bool) {
		vs, ok := vals[key]
		if ok {
			if used[key] {
				return nil, false
			}
			used[key] = true
		}
		return vs, ok
	}
	one := func(key string) (string, error) {
		vs, ok := take(key)
		if !ok || len(vs) != 1 {
			return "", fmt.Errorf("field %q: %d values", key, len(vs))
		}
		return vs[0], nil
	}
	out := map[string]any{}
	for _, name := range sortedKeys(anyMap(kinds)) {
		k, f := kinds[name], enc[name]
		explode := f.Style == "" || f.Style == StyleForm
		if f.Explode != nil {
			explode = *f.Explode
		}
		if strings.Contains(f.ContentType, "json") {
			s, err := one(name)
			if err != nil {
				return nil, err
			}
			v, err := decodeNumber(s)
			if err != nil {
				return nil, err
			}
			out[name] = textOf(v)
			continue
		}
		switch {
		case k.kind == "scalar":
			s, err := one(name)
			if err != nil {
				return nil, err
			}
			out[name] = s
		case k.kind == "array" && f.Style != StyleDeepObject && vals.Has(name):
			if !explode {
				s, err := one(name)
				if err != nil {
					return nil, err
				}
				sep := map[string]string{StyleSpaceDelimited: " ", StylePipeDelimited: "|"}[f.Style]
				if sep == "" {
					sep = ","
				}
				out[name] = toAny(strings.Split(s, sep))
				continue
			}
			vs, _ := take(name)
			out[name] = toAny(vs)
		case k.kind == "object" && f.Style == StyleForm:
			m := map[string]any{}
			if explode {
				for _, mem := range k.members {
					s, err := one(mem)
					if err != nil {
						return nil, err
					}
					m[mem] = s
				}
			} else {
				s, err := one(name)
				if err != nil {
					return nil, err
				}
				parts := strings.Split(s, ",")
				if len(parts)%2 != 0 {
					return nil, fmt.Errorf("%q: an odd number of parts", s)
				}
				for i := 0; i < len(parts); i += 2 {
					if _, dup := m[parts[i]]; dup {
						return nil, fmt.Errorf("%q: member %q twice", s, parts[i])
					}
					m[parts[i]] = parts[i+1]
				}
			}
			out[name] = m
		default: // the bracket convention
			var v any
			for key, vs := range vals {
				rest, ok := strings.CutPrefix(key, name+"[")
				if !ok {
					continue
				}
				used[key] = true
				path, err := bracketPath("[" + rest)
				if err != nil {
					return nil, err
				}
				if len(vs) != 1 {
					return nil, fmt.Errorf("%q given %d times", key, len(vs))
				}
				if v, err = setPath(v, path, vs[0]); err != nil {
					return nil, err
				}
			}
			if v == nil {
				return nil, fmt.Errorf("%s: nothing written", name)
			}
			out[name] = arraysOf(v)
		}
	}
	for key := range vals {
		if !used[key] {
			return nil, fmt.Errorf("the body has a field %q that no argument wrote", key)
		}
	}
	return out, nil
}

func anyMap(m map[string]fieldKind) map[string]any {
	out := map[string]any{}
	for k := range m {
		out[k] = nil
	}
	return out
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func decodeNumber(s string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

// bracketPath reads "[a][b]" as ["a","b"].
func bracketPath(s string) ([]string, error) {
	var out []string
	for s != "" {
		if s[0] != '[' {
			return nil, fmt.Errorf("%q is not [K]...", s)
		}
		j := strings.IndexByte(s, ']')
		if j < 0 {
			return nil, fmt.Errorf("%q: unmatched [", s)
		}
		out = append(out, s[1:j])
		s = s[j+1:]
	}
	return out, nil
}

func setPath(v any, path []string, val string) (any, error) {
	if len(path) == 0 {
		if v != nil {
			return nil, errors.New("a value given twice")
		}
		return val, nil
	}
	m, _ := v.(map[string]any)
	if m == nil {
		if v != nil {
			return nil, errors.New("both a value and an object")
		}
		m = map[string]any{}
	}
	sub, err := setPath(m[path[0]], path[1:], val)
	if err != nil {
		return nil, err
	}
	m[path[0]] = sub
	return m, nil
}

// textOf is what a form carries of a JSON value: each scalar as its text,
// an object whose members are 0..n-1 as an array (the bracket convention
// cannot tell them apart).
func textOf(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			out[k] = textOf(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = textOf(e)
		}
		return out
	}
	return scalar(v)
}

// holds checks the rule for one call: refused with a FormError naming an
// argument that exists, or decoding back to exactly the arguments.
func holds(t *testing.T, args map[string]any, enc map[string]FormField) {
	t.Helper()
	body, err := EncodeForm(args, enc)
	if err != nil {
		var fe *FormError
		if !errors.As(err, &fe) || !errors.Is(err, ErrForm) {
			t.Fatalf("%s: %v is not a FormError", show(args, enc), err)
		}
		if !pointsInto(args, fe.Pointer) {
			t.Fatalf("%s: the error's pointer %q names no argument", show(args, enc), fe.Pointer)
		}
		return
	}
	got, err := decodeAs(body, enc, kindsOf(args))
	if err != nil {
		t.Fatalf("%s: the body %q does not decode under its own encoding: %v", show(args, enc), body, err)
	}
	want := map[string]any{}
	for k, v := range args {
		if strings.Contains(enc[k].ContentType, "json") {
			want[k] = textOf(v) // JSON text: its containers are what they are
			continue
		}
		want[k] = arraysOf(textOf(v))
	}
	if !reflect.DeepEqual(got, want) {
		gj, _ := json.Marshal(got)
		wj, _ := json.Marshal(want)
		t.Fatalf("%s: the body %q decodes to %s, want %s", show(args, enc), body, gj, wj)
	}
}

func show(args map[string]any, enc map[string]FormField) string {
	a, _ := json.Marshal(args)
	var parts []string
	for _, k := range sortedKeys(anyMapF(enc)) {
		f := enc[k]
		ex := "-"
		if f.Explode != nil {
			ex = fmt.Sprint(*f.Explode)
		}
		parts = append(parts, fmt.Sprintf("%s:{%s %s %s}", k, f.Style, ex, f.ContentType))
	}
	return string(a) + " " + strings.Join(parts, " ")
}

func anyMapF(m map[string]FormField) map[string]any {
	out := map[string]any{}
	for k := range m {
		out[k] = nil
	}
	return out
}

func pointsInto(v any, ptr string) bool {
	if ptr == "" {
		return true
	}
	for _, seg := range strings.Split(ptr[1:], "/") {
		seg = strings.NewReplacer("~1", "/", "~0", "~").Replace(seg)
		switch x := v.(type) {
		case map[string]any:
			e, ok := x[seg]
			if !ok {
				return false
			}
			v = e
		case []any:
			var i int
			if _, err := fmt.Sscan(seg, &i); err != nil || i < 0 || i >= len(x) {
				return false
			}
			v = x[i]
		default:
			return false
		}
	}
	return true
}

// oddStrings are the corners: empty, escapes, every delimiter and bracket,
// keywords, unicode, line breaks and huge numbers' text.
var oddStrings = []string{"", "a", "%", "%25", "%2C", ",", "a,b", " ", "a b", "|", "a|b", "+", "&", "=", "a=b&c=d",
	"[", "]", "[]", "a[b]", "a[0]", "0", "1", "true", "null", "false", "1e400", "-0", "ü", "😀", "\u2028", "\r\n", "\x00",
	"a@x,b@y", "k,v", "to", "tags", "opts"}

func oddValue(r *rand.Rand, depth int) any {
	switch n := r.IntN(10); {
	case n < 4 || depth > 3:
		switch r.IntN(6) {
		case 0:
			return nil
		case 1:
			return r.IntN(2) == 0
		case 2:
			return json.Number([]string{"0", "-1", "12345678901234567891", "1e400", "0.1", "-0"}[r.IntN(6)])
		}
		return oddStrings[r.IntN(len(oddStrings))]
	case n < 7:
		l := make([]any, r.IntN(4))
		for i := range l {
			l[i] = oddValue(r, depth+1)
		}
		return l
	default:
		m := map[string]any{}
		for range r.IntN(4) {
			m[oddStrings[r.IntN(len(oddStrings))]] = oddValue(r, depth+1)
		}
		return m
	}
}

func oddEncoding(r *rand.Rand) FormField {
	var f FormField
	f.Style = []string{"", StyleForm, StyleSpaceDelimited, StylePipeDelimited, StyleDeepObject}[r.IntN(5)]
	switch r.IntN(3) {
	case 0:
		t := true
		f.Explode = &t
	case 1:
		fa := false
		f.Explode = &fa
	}
	if r.IntN(8) == 0 {
		f.ContentType = "application/json"
	}
	return f
}

// TestFormCarriesExactlyTheArguments is the property over generated
// arguments and encodings.
func TestFormCarriesExactlyTheArguments(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(38, 2))
	refused, sent := 0, 0
	for range 20000 {
		args := map[string]any{}
		enc := map[string]FormField{}
		for range 1 + r.IntN(4) {
			name := oddStrings[r.IntN(len(oddStrings))]
			args[name] = oddValue(r, 0)
			if r.IntN(2) == 0 {
				enc[name] = oddEncoding(r)
			}
		}
		if _, err := EncodeForm(args, enc); err != nil {
			refused++
		} else {
			sent++
		}
		holds(t, args, enc)
	}
	// A property that refuses everything holds on nothing.
	if sent < 2000 || refused < 2000 {
		t.Fatalf("%d sent, %d refused: the generator must exercise both", sent, refused)
	}
}

// The findings' own cases, each refused with a pointer to the argument.
func TestFormRefusesAmbiguousValues(t *testing.T) {
	t.Parallel()
	f := false
	tr := true
	for _, tc := range []struct {
		name, args string
		enc        map[string]FormField
		ptr, code  string
	}{
		{"a comma inside a non-exploded item", `{"to":["a@x,b@y"]}`, map[string]FormField{"to": {Explode: &f}}, "/to/0", FormAmbiguous},
		{"a space inside a spaceDelimited item", `{"to":["a@x b@y"]}`, map[string]FormField{"to": {Style: StyleSpaceDelimited}}, "/to/0", FormAmbiguous},
		{"a pipe inside a pipeDelimited item", `{"to":["a|b"]}`, map[string]FormField{"to": {Style: StylePipeDelimited}}, "/to/0", FormAmbiguous},
		{"a comma inside a non-exploded object's value", `{"p":{"k":"v,w"}}`, map[string]FormField{"p": {Style: StyleForm, Explode: &f}}, "/p/k", FormAmbiguous},
		{"a comma inside a non-exploded object's name", `{"p":{"k,v":"w"}}`, map[string]FormField{"p": {Style: StyleForm, Explode: &f}}, "/p/k,v", FormAmbiguous},
		{"an exploded member that is another argument", `{"opts":{"to":"x"},"to":"y"}`, map[string]FormField{"opts": {Style: StyleForm, Explode: &tr}}, "/opts/to", FormName},
		{"an empty member name is an array append", `{"data":{"":"x"}}`, nil, "/data/", FormName},
		{"an empty array", `{"to":[]}`, nil, "/to", FormAmbiguous},
		{"an object in a delimited array", `{"to":[{"a":"b"}]}`, map[string]FormField{"to": {Explode: &f}}, "/to", FormAmbiguous},
		{"an object in a style form object", `{"p":{"k":{"a":"b"}}}`, map[string]FormField{"p": {Style: StyleForm}}, "/p/k", FormAmbiguous},
	} {
		_, err := EncodeForm(decodeJSON(t, tc.args), tc.enc)
		var fe *FormError
		if !errors.As(err, &fe) || fe.Pointer != tc.ptr || fe.Code != tc.code {
			t.Errorf("%s: %v, want %s at %q", tc.name, err, tc.code, tc.ptr)
		}
	}
	// The exploded member is refused even when the argument it would
	// shadow is left out of the body (body_omit): the arguments decide.
	b := &Binding{Body: BodyForm, BodyOmit: []string{"to"}, FormEncoding: map[string]FormField{"opts": {Style: StyleForm, Explode: &tr}}}
	if fe := CheckForm(b, decodeJSON(t, `{"opts":{"to":"x"},"to":"y"}`), 30); fe == nil || fe.Pointer != "/opts/to" {
		t.Errorf("body_omit: %v", fe)
	}
	// body_arg: the pointer is the argument's.
	b = &Binding{Body: BodyForm, BodyArg: "doc"}
	if fe := CheckForm(b, decodeJSON(t, `{"doc":{"x":[]}}`), 30); fe == nil || fe.Pointer != "/doc/x" {
		t.Errorf("body_arg: %v", fe)
	}
}

// longChain is the attack of the fourth review: member names of n bytes
// nested depth deep, with leaves at the bottom, so the bracket prefix
// (depth*n bytes) is repeated per leaf.
func longChain(n, depth, leaves int) (map[string]any, int) {
	bottom := map[string]any{}
	for i := range leaves {
		bottom[fmt.Sprint(i)] = "x"
	}
	var v any = bottom
	for i := range depth {
		v = map[string]any{strings.Repeat(string(rune('a'+i%26)), n): v}
	}
	args := map[string]any{"data": v}
	js, _ := json.Marshal(args)
	return args, len(js)
}

// A form body is bounded before it is built: the attack is refused
// (form_too_large), and refusing it costs memory in proportion to the
// arguments, not to the body they would have made.
func TestFormSizeIsBoundedBeforeItIsBuilt(t *testing.T) {
	args, n := longChain(300, 300, 1000)
	js, _ := json.Marshal(args)
	size, err := FormSize(args, nil, -1)
	if err != nil {
		t.Fatal(err)
	}
	if size < 50*n {
		t.Fatalf("the attack makes a %d-byte body of %d bytes of arguments: not the attack", size, n)
	}
	b := &Binding{Body: BodyForm}
	var fe *FormError
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, _, err = requestBody(b, js)
	runtime.ReadMemStats(&after)
	if !errors.As(err, &fe) || fe.Code != FormTooLarge || fe.Pointer != "/data" {
		t.Fatalf("a %d-byte body: %v, want form_too_large at /data", size, err)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("arguments %d bytes, body would be %d bytes; refusing it allocated %d bytes", n, size, alloc)
	if alloc > uint64(8*n) {
		t.Fatalf("refusing allocated %d bytes for %d bytes of arguments (more than 8 times)", alloc, n)
	}
	if fe := CheckForm(b, args, n); fe == nil || fe.Code != FormTooLarge {
		t.Fatalf("CheckForm: %v", fe)
	}
	// Below the limit the body is built once, at its exact size.
	small, sn := longChain(20, 5, 30)
	sjs, _ := json.Marshal(small)
	runtime.GC()
	runtime.ReadMemStats(&before)
	body, _, err := requestBody(b, sjs)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(8*(len(body)+sn)) {
		t.Fatalf("a %d-byte body allocated %d bytes", len(body), alloc)
	}
}

// FuzzFormBinding: any arguments, under any encoding of one field, are
// sent exactly or refused.
func FuzzFormBinding(f *testing.F) {
	f.Add(`{"to":["a@x,b@y"]}`, "to", uint8(0), uint8(2), false)
	f.Add(`{"opts":{"to":"x"},"to":"y"}`, "opts", uint8(1), uint8(1), false)
	f.Add(`{"data":{"":"x","a":[1,{"b":null}]}}`, "data", uint8(4), uint8(0), false)
	f.Add(`{"p":{"k,v":"w"}}`, "p", uint8(1), uint8(2), true)
	f.Fuzz(func(t *testing.T, src, field string, style, explode uint8, json bool) {
		args, err := decodeArgs(src)
		if err != nil {
			return
		}
		ff := FormField{Style: []string{"", StyleForm, StyleSpaceDelimited, StylePipeDelimited, StyleDeepObject}[style%5]}
		switch explode % 3 {
		case 1:
			t := true
			ff.Explode = &t
		case 2:
			fa := false
			ff.Explode = &fa
		}
		if json {
			ff.ContentType = "application/json"
		}
		holds(t, args, map[string]FormField{field: ff})
	})
}

func decodeArgs(src string) (map[string]any, error) {
	dec := json.NewDecoder(strings.NewReader(src))
	dec.UseNumber()
	var args map[string]any
	if err := dec.Decode(&args); err != nil || args == nil {
		return nil, errors.New("not an object")
	}
	return args, nil
}

// A GET sends no body, so its form has nothing to refuse.
func TestCheckFormSkipsABodilessMethod(t *testing.T) {
	t.Parallel()
	args := decodeJSON(t, `{"to":[]}`)
	if fe := CheckForm(&Binding{Body: BodyForm, Method: http.MethodGet}, args, 9); fe != nil {
		t.Fatalf("GET: %v", fe)
	}
	if fe := CheckForm(&Binding{Body: BodyForm}, args, 9); fe == nil {
		t.Fatal("POST: nothing refused")
	}
}
