package invoke

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// Body modes of a binding: how the call's arguments go downstream.
const (
	BodyJSON = "json" // the arguments as a JSON object (the default)
	BodyForm = "form" // application/x-www-form-urlencoded (EncodeForm)
	BodyNone = "none" // no body: the arguments go only where the URL template puts them
)

// Form field styles (OpenAPI 3's encoding object).
const (
	StyleForm           = "form"
	StyleSpaceDelimited = "spaceDelimited"
	StylePipeDelimited  = "pipeDelimited"
	StyleDeepObject     = "deepObject"
)

// FormField is how one top-level argument is written in a form body
// (OpenAPI 3's encoding object). The zero value is OpenAPI's default for
// scalars and arrays of scalars (style form, explode true); an object, or an
// array holding objects or arrays, is written in the bracket convention
// unless Style says form.
type FormField struct {
	Style   string // form (default), spaceDelimited, pipeDelimited or deepObject
	Explode *bool  // default true for style form, false otherwise
	// ContentType application/json writes the value as JSON text.
	ContentType string
}

// ErrForm marks arguments that cannot be written as a form body; nothing
// is sent.
var ErrForm = errors.New("invoke: form body")

// EncodeForm writes a JSON object (decoded with json.Number, so a number is
// written as its JSON text, never rounded through a float) as an
// application/x-www-form-urlencoded body, its fields in name order:
//
//   - a string, number or boolean is name=value; null is name= (empty);
//   - an array of scalars (style form, explode true) repeats the name:
//     tags=a&tags=b; explode false joins the values with "," (or " ", "|"
//     for spaceDelimited and pipeDelimited): tags=a,b;
//   - an object, and an array holding objects or arrays, use the bracket
//     convention of Stripe and Rails: metadata[order_id]=7,
//     items[0][price]=5 (arrays nested in brackets are indexed);
//   - an object with an explicit style form is OpenAPI's: explode true
//     writes its members as fields of their own, explode false writes
//     name=k1,v1,k2,v2.
//
// Empty arrays and objects write nothing. A name holding "[" or "]" cannot
// be told from the convention's brackets, and is an error wrapping ErrForm.
func EncodeForm(args map[string]any, enc map[string]FormField) (string, error) {
	var b strings.Builder
	add := func(k, v string) {
		if b.Len() > 0 {
			b.WriteByte('&')
		}
		b.WriteString(escapeKey(k))
		b.WriteByte('=')
		b.WriteString(url.QueryEscape(v))
	}
	for _, name := range sortedKeys(args) {
		if strings.ContainsAny(name, "[]") {
			return "", fmt.Errorf("%w: the argument name %q holds a bracket, which a form field name cannot carry", ErrForm, name)
		}
		v := args[name]
		f := enc[name]
		if strings.Contains(f.ContentType, "json") {
			js, err := marshalJSON(v)
			if err != nil {
				return "", err
			}
			add(name, string(js))
			continue
		}
		explode := f.Style == "" || f.Style == StyleForm
		if f.Explode != nil {
			explode = *f.Explode
		}
		switch x := v.(type) {
		case []any:
			if f.Style != StyleDeepObject && allScalars(x) {
				if explode {
					for _, e := range x {
						add(name, scalar(e))
					}
					continue
				}
				sep := map[string]string{StyleSpaceDelimited: " ", StylePipeDelimited: "|"}[f.Style]
				if sep == "" {
					sep = ","
				}
				parts := make([]string, len(x))
				for i, e := range x {
					parts[i] = scalar(e)
				}
				if len(parts) > 0 {
					add(name, strings.Join(parts, sep))
				}
				continue
			}
			if err := brackets(name, x, add); err != nil {
				return "", err
			}
		case map[string]any:
			if f.Style == StyleForm && allScalarValues(x) {
				if explode {
					for _, k := range sortedKeys(x) {
						if _, taken := args[k]; taken || strings.ContainsAny(k, "[]") {
							return "", fmt.Errorf("%w: the member %q of %q would be a form field that another argument has, or holds a bracket", ErrForm, k, name)
						}
						add(k, scalar(x[k]))
					}
					continue
				}
				var parts []string
				for _, k := range sortedKeys(x) {
					parts = append(parts, k, scalar(x[k]))
				}
				if len(parts) > 0 {
					add(name, strings.Join(parts, ","))
				}
				continue
			}
			if err := brackets(name, x, add); err != nil {
				return "", err
			}
		default:
			add(name, scalar(v))
		}
	}
	return b.String(), nil
}

// brackets writes a value under prefix in the bracket convention.
func brackets(prefix string, v any, add func(k, v string)) error {
	switch x := v.(type) {
	case map[string]any:
		for _, k := range sortedKeys(x) {
			if strings.ContainsAny(k, "[]") {
				return fmt.Errorf("%w: the member name %q holds a bracket, which a form field name cannot carry", ErrForm, k)
			}
			if err := brackets(prefix+"["+k+"]", x[k], add); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range x {
			if err := brackets(prefix+"["+strconv.Itoa(i)+"]", e, add); err != nil {
				return err
			}
		}
	default:
		add(prefix, scalar(v))
	}
	return nil
}

// escapeKey query-escapes a field name but keeps its brackets readable.
func escapeKey(k string) string {
	e := url.QueryEscape(k)
	return strings.NewReplacer("%5B", "[", "%5D", "]").Replace(e)
}

func scalar(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case json.Number:
		return x.String()
	case bool:
		return strconv.FormatBool(x)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	return fmt.Sprint(v)
}

func allScalars(l []any) bool {
	for _, e := range l {
		switch e.(type) {
		case map[string]any, []any:
			return false
		}
	}
	return true
}

func allScalarValues(m map[string]any) bool {
	for _, e := range m {
		switch e.(type) {
		case map[string]any, []any:
			return false
		}
	}
	return true
}

func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func marshalJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrForm, err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// DecodeForm reads a form body written in the bracket convention back into
// a JSON object of strings: metadata[k]=v is {"metadata":{"k":"v"}}, an
// object whose members are 0..n-1 is an array, and a top-level name in
// arrays (or one given more than once) is an array of its values. It is
// EncodeForm's inverse for its default encoding, up to the values' types
// (a form carries text only) and an object whose members are named 0..n-1,
// which reads back as an array (the bracket convention cannot tell them
// apart).
func DecodeForm(body string, arrays map[string]bool) (map[string]any, error) {
	vals, err := url.ParseQuery(body)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrForm, err)
	}
	out := map[string]any{}
	for _, key := range sortedStrings(vals) {
		name, path, err := splitKey(key)
		if err != nil {
			return nil, err
		}
		vs := vals[key]
		if len(path) == 0 {
			if arrays[name] || len(vs) > 1 {
				l := make([]any, len(vs))
				for i, v := range vs {
					l[i] = v
				}
				out[name] = l
			} else {
				out[name] = vs[0]
			}
			continue
		}
		m, _ := out[name].(map[string]any)
		if m == nil {
			if _, taken := out[name]; taken {
				return nil, fmt.Errorf("%w: %q is both a value and an object", ErrForm, name)
			}
			m = map[string]any{}
			out[name] = m
		}
		for i, p := range path {
			if i == len(path)-1 {
				if _, taken := m[p]; taken || len(vs) > 1 {
					return nil, fmt.Errorf("%w: %q is given twice", ErrForm, key)
				}
				m[p] = vs[0]
				break
			}
			next, _ := m[p].(map[string]any)
			if next == nil {
				if _, taken := m[p]; taken {
					return nil, fmt.Errorf("%w: %q is both a value and an object", ErrForm, key)
				}
				next = map[string]any{}
				m[p] = next
			}
			m = next
		}
	}
	for k, v := range out {
		out[k] = arraysOf(v)
	}
	return out, nil
}

func splitKey(key string) (string, []string, error) {
	i := strings.IndexByte(key, '[')
	if i < 0 {
		if strings.Contains(key, "]") {
			return "", nil, fmt.Errorf("%w: the field name %q has an unmatched \"]\"", ErrForm, key)
		}
		return key, nil, nil
	}
	name, rest := key[:i], key[i:]
	var path []string
	for rest != "" {
		if rest[0] != '[' {
			return "", nil, fmt.Errorf("%w: the field name %q is not NAME[K]...", ErrForm, key)
		}
		j := strings.IndexByte(rest, ']')
		if j < 0 || strings.ContainsRune(rest[1:j], '[') {
			return "", nil, fmt.Errorf("%w: the field name %q has an unmatched \"[\"", ErrForm, key)
		}
		path = append(path, rest[1:j])
		rest = rest[j+1:]
	}
	return name, path, nil
}

// arraysOf turns each object whose members are exactly 0..n-1 into an array.
func arraysOf(v any) any {
	if l, ok := v.([]any); ok {
		for i, e := range l {
			l[i] = arraysOf(e)
		}
		return l
	}
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	for k, e := range m {
		m[k] = arraysOf(e)
	}
	if len(m) == 0 {
		return m
	}
	l := make([]any, len(m))
	for k, e := range m {
		i, err := strconv.Atoi(k)
		if err != nil || i < 0 || i >= len(m) || strconv.Itoa(i) != k {
			return m
		}
		l[i] = e
	}
	return l
}

func sortedStrings(v url.Values) []string {
	out := make([]string, 0, len(v))
	for k := range v {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// requestBody shapes the call's arguments (the canonical JSON object the
// ledger digests) into the body the binding sends: BodyArg picks one
// argument, BodyOmit leaves some out, and Body says JSON, form or none. It
// returns the body and its Content-Type ("" to keep the caller's).
func requestBody(b *Binding, args []byte) ([]byte, string, error) {
	if b.Body == BodyNone {
		return nil, "", nil
	}
	if (b.Body == "" || b.Body == BodyJSON) && b.BodyArg == "" && len(b.BodyOmit) == 0 {
		return args, "", nil
	}
	if len(bytes.TrimSpace(args)) == 0 {
		return nil, "", nil
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, "", fmt.Errorf("%w: the arguments are not JSON: %v", ErrForm, err)
	}
	obj, isObj := v.(map[string]any)
	if b.BodyArg != "" {
		if !isObj {
			return nil, "", nil
		}
		bv, ok := obj[b.BodyArg]
		if !ok {
			return nil, "", nil // the body is optional and was not given
		}
		v = bv
		obj, isObj = v.(map[string]any)
	} else if isObj && len(b.BodyOmit) > 0 {
		obj = maps(obj)
		for _, k := range b.BodyOmit {
			delete(obj, k)
		}
		v = obj
	}
	if b.Body == BodyForm {
		if !isObj {
			return nil, "", fmt.Errorf("%w: the body is not an object, so it cannot be a form", ErrForm)
		}
		s, err := EncodeForm(obj, b.FormEncoding)
		if err != nil {
			return nil, "", err
		}
		return []byte(s), "application/x-www-form-urlencoded", nil
	}
	js, err := marshalJSON(v)
	return js, "", err
}

func maps(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
