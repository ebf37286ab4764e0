package invoke

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
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

// FormLimit is the largest form body a call's arguments (their canonical
// JSON, argsLen bytes) may become: 64 KiB plus eight times the arguments.
// The bracket convention repeats a field's whole path for every value under
// it, so a form can be much larger than its arguments (long member names
// nested deep); a body past the limit is refused before it is built
// (FormError, code form_too_large), never sent in part.
func FormLimit(argsLen int) int { return 64<<10 + 8*argsLen }

// Codes of a FormError.
const (
	// FormAmbiguous: the value would not read back as itself under the
	// binding's encoding (a delimiter inside a delimited value, an empty
	// array or object, which a form cannot write).
	FormAmbiguous = "form_ambiguous"
	// FormName: a name a form field cannot carry ("", "[" or "]"), or one
	// that another field of the same body has.
	FormName = "form_name"
	// FormTooLarge: the form body would pass FormLimit.
	FormTooLarge = "form_too_large"
)

// FormError is arguments a form body cannot carry exactly: nothing is sent.
// Pointer is the JSON pointer of the argument at fault. It wraps ErrForm.
type FormError struct {
	Pointer string
	Code    string
	Detail  string
}

func (e *FormError) Error() string {
	return fmt.Sprintf("%v: %s: %s", ErrForm, pointerText(e.Pointer), e.Detail)
}

func (e *FormError) Unwrap() error { return ErrForm }

func pointerText(p string) string {
	if p == "" {
		return "the arguments"
	}
	return p
}

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
// What it writes reads back, under the same encoding, as exactly the
// arguments (as text: a form has no types), or it writes nothing and
// returns a *FormError: a name that is empty or holds "[" or "]"; a value
// holding its own delimiter (explode false); an empty array or object
// (which would read back as absent); an exploded member that is another
// field's name; a style form object or a delimited array holding objects
// or arrays; or a body past FormLimit of the arguments' size (the size is
// counted before anything is built). EncodeForm itself applies no limit.
func EncodeForm(args map[string]any, enc map[string]FormField) (string, error) {
	return encodeForm(args, enc, -1)
}

// EncodeFormLimit is EncodeForm refusing (FormTooLarge) a body of more than
// max bytes, counted before it is built.
func EncodeFormLimit(args map[string]any, enc map[string]FormField, max int) (string, error) {
	return encodeForm(args, enc, max)
}

// FormSize is the size of the form EncodeForm would write, without writing
// it, or the error it would return (FormTooLarge past max; max < 0: no limit).
func FormSize(args map[string]any, enc map[string]FormField, max int) (int, error) {
	w := formWriter{args: args, enc: enc}
	err := w.count(max)
	return w.size, err
}

func encodeForm(args map[string]any, enc map[string]FormField, max int) (string, error) {
	w := formWriter{args: args, enc: enc}
	return w.encode(max)
}

// count walks the arguments counting the body's size: the error the
// encoding would give, or FormTooLarge past max (max < 0: no limit).
func (w *formWriter) count(max int) error {
	w.out = nil
	if err := w.run(); err != nil {
		return err
	}
	if max >= 0 && w.size > max {
		return w.tooLarge(max)
	}
	return nil
}

// encode counts, then writes the body into a buffer of its exact size.
func (w *formWriter) encode(max int) (string, error) {
	if err := w.count(max); err != nil {
		return "", err
	}
	size := w.size
	w.out = &strings.Builder{}
	w.out.Grow(size)
	if err := w.run(); err != nil {
		return "", err
	}
	return w.out.String(), nil
}

// formWriter walks the arguments once per pass: the first counts the
// body's size (out nil), the second writes it. A field's name is kept as
// the escaped parts of its path, never joined per value, so the walk itself
// allocates in proportion to the arguments, not to the body.
type formWriter struct {
	args     map[string]any
	enc      map[string]FormField
	reserved map[string]any // names an exploded member must not take (nil: args)
	out      *strings.Builder

	size     int
	fields   int
	keyParts []string // escaped: name, "[member]", ...
	keyLen   int
	path     []string // the JSON pointer's segments, for errors
	sizeOf   map[string]int
	top      string
	members  map[string]string // exploded members written, by the argument that wrote them
}

func (w *formWriter) fail(code, format string, a ...any) error {
	var b strings.Builder
	for _, s := range w.path {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(s))
	}
	return &FormError{Pointer: b.String(), Code: code, Detail: fmt.Sprintf(format, a...)}
}

func (w *formWriter) tooLarge(max int) error {
	top, most := "", -1
	for _, name := range sortedKeys(w.args) {
		if w.sizeOf[name] > most {
			top, most = name, w.sizeOf[name]
		}
	}
	w.path = []string{top}
	return w.fail(FormTooLarge, "the form body would be %d bytes, more than the %d a call of this size may become (64 KiB plus eight times the arguments): the bracket convention repeats a field's whole path for every value under it, so long member names nested deep multiply", w.size, max)
}

func (w *formWriter) push(seg, escaped string) {
	w.path = append(w.path, seg)
	w.keyParts = append(w.keyParts, escaped)
	w.keyLen += len(escaped)
}

func (w *formWriter) pop() {
	last := w.keyParts[len(w.keyParts)-1]
	w.keyLen -= len(last)
	w.keyParts = w.keyParts[:len(w.keyParts)-1]
	w.path = w.path[:len(w.path)-1]
}

// emit writes (or counts) one field: the current key, then value.
func (w *formWriter) emit(value string) {
	n := w.keyLen + 1 + queryEscapedLen(value)
	if w.fields > 0 {
		n++
	}
	w.size += n
	w.sizeOf[w.top] += n
	if w.out != nil {
		if w.fields > 0 {
			w.out.WriteByte('&')
		}
		for _, p := range w.keyParts {
			w.out.WriteString(p)
		}
		w.out.WriteByte('=')
		w.out.WriteString(url.QueryEscape(value))
	}
	w.fields++
}

// emitJoined writes one field whose value is parts joined by sep.
func (w *formWriter) emitJoined(parts []string, sep string) {
	w.emit(strings.Join(parts, sep))
}

func badName(k string) bool { return k == "" || strings.ContainsAny(k, "[]") }

func (w *formWriter) run() error {
	w.size, w.fields = 0, 0
	if w.reserved == nil {
		w.reserved = w.args
	}
	w.sizeOf = make(map[string]int, len(w.args))
	w.members = map[string]string{}
	for _, name := range sortedKeys(w.args) {
		w.top = name
		w.path = w.path[:0]
		w.keyParts, w.keyLen = w.keyParts[:0], 0
		w.push(name, url.QueryEscape(name))
		if badName(name) {
			return w.fail(FormName, "the argument name %q cannot be a form field's name (empty, or holding \"[\" or \"]\", which the bracket convention reads as a path)", name)
		}
		if err := w.field(name, w.args[name], w.enc[name]); err != nil {
			return err
		}
	}
	return nil
}

func (w *formWriter) field(name string, v any, f FormField) error {
	if strings.Contains(f.ContentType, "json") {
		js, err := marshalJSON(v)
		if err != nil {
			return err
		}
		w.emit(string(js))
		return nil
	}
	explode := f.Style == "" || f.Style == StyleForm
	if f.Explode != nil {
		explode = *f.Explode
	}
	switch x := v.(type) {
	case []any:
		if len(x) == 0 {
			return w.fail(FormAmbiguous, "an empty array writes nothing in a form, so the downstream would read the argument as absent: leave it out")
		}
		delimited := f.Style != StyleDeepObject && !explode
		if f.Style != StyleDeepObject && allScalars(x) {
			if !delimited {
				for _, e := range x {
					w.emit(scalar(e))
				}
				return nil
			}
			sep := map[string]string{StyleSpaceDelimited: " ", StylePipeDelimited: "|"}[f.Style]
			if sep == "" {
				sep = ","
			}
			parts := make([]string, len(x))
			for i, e := range x {
				parts[i] = scalar(e)
				if strings.Contains(parts[i], sep) {
					w.path = append(w.path, strconv.Itoa(i))
					return w.fail(FormAmbiguous, "the item holds %q, the delimiter this binding joins the array's items with, so the downstream would read more items than the contract checked", sep)
				}
			}
			w.emitJoined(parts, sep)
			return nil
		}
		if delimited {
			return w.fail(FormAmbiguous, "a delimited array (style %s, explode false) carries text items only; this one holds an object or an array", styleName(f.Style))
		}
		return w.brackets(x)
	case map[string]any:
		if len(x) == 0 {
			return w.fail(FormAmbiguous, "an empty object writes nothing in a form, so the downstream would read the argument as absent: leave it out")
		}
		if f.Style != StyleForm {
			return w.brackets(x)
		}
		keys := sortedKeys(x)
		for _, k := range keys {
			switch x[k].(type) {
			case map[string]any, []any:
				w.path = append(w.path, k)
				return w.fail(FormAmbiguous, "style form writes an object's members as plain values; this member is an object or an array (use style deepObject)")
			}
		}
		if explode {
			for _, k := range keys {
				w.path = append(w.path[:1], k)
				if badName(k) {
					return w.fail(FormName, "the member %q cannot be a form field's name (empty, or holding \"[\" or \"]\")", k)
				}
				if _, taken := w.reserved[k]; taken {
					return w.fail(FormName, "the member %q would be written as the field %q, which the argument %q is too", k, k, k)
				}
				if other, taken := w.members[k]; taken {
					return w.fail(FormName, "the member %q would be written as the field %q, which a member of %q is too", k, k, other)
				}
				w.members[k] = name
				w.keyParts[0], w.keyLen = url.QueryEscape(k), len(url.QueryEscape(k))
				w.emit(scalar(x[k]))
			}
			return nil
		}
		parts := make([]string, 0, 2*len(x))
		for _, k := range keys {
			s := scalar(x[k])
			if strings.Contains(k, ",") || strings.Contains(s, ",") {
				w.path = append(w.path, k)
				return w.fail(FormAmbiguous, "style form with explode false writes the object as name=k1,v1,k2,v2: a member name or value holding \",\" would read back as other members")
			}
			parts = append(parts, k, s)
		}
		w.emitJoined(parts, ",")
		return nil
	}
	w.emit(scalar(v))
	return nil
}

func styleName(s string) string {
	if s == "" {
		return StyleForm
	}
	return s
}

// brackets writes a value under the current key in the bracket convention.
func (w *formWriter) brackets(v any) error {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 {
			return w.fail(FormAmbiguous, "an empty object writes nothing in a form, so the downstream would not see it")
		}
		for _, k := range sortedKeys(x) {
			w.push(k, "["+url.QueryEscape(k)+"]")
			if badName(k) {
				return w.fail(FormName, "the member name %q cannot stand in a form field's brackets (empty is an array append to Rails, PHP and Rack; \"[\" and \"]\" read as a path)", k)
			}
			if err := w.brackets(x[k]); err != nil {
				return err
			}
			w.pop()
		}
	case []any:
		if len(x) == 0 {
			return w.fail(FormAmbiguous, "an empty array writes nothing in a form, so the downstream would not see it")
		}
		for i, e := range x {
			is := strconv.Itoa(i)
			w.push(is, "["+is+"]")
			if err := w.brackets(e); err != nil {
				return err
			}
			w.pop()
		}
	default:
		w.emit(scalar(v))
	}
	return nil
}

// queryEscapedLen is len(url.QueryEscape(s)) without building it.
func queryEscapedLen(s string) int {
	n := len(s)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !unreservedQuery(c) && c != ' ' {
			n += 2
		}
	}
	return n
}

// unreservedQuery: the bytes url.QueryEscape writes as they are.
func unreservedQuery(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~'
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

// formBody is the object a form binding writes: the arguments, or the
// body_arg argument, less the body_omit ones; prefix is the JSON pointer of
// that object in the arguments. ok is false when there is no body (body_arg
// not given); err when the body is not an object.
func formBody(b *Binding, v any) (obj map[string]any, prefix string, ok bool, err error) {
	obj, isObj := v.(map[string]any)
	if b.BodyArg != "" {
		if !isObj {
			return nil, "", false, nil
		}
		bv, given := obj[b.BodyArg]
		if !given {
			return nil, "", false, nil // the body is optional and was not given
		}
		obj, isObj = bv.(map[string]any)
		prefix = "/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(b.BodyArg)
	} else if isObj && len(b.BodyOmit) > 0 {
		obj = maps(obj)
		for _, k := range b.BodyOmit {
			delete(obj, k)
		}
	}
	if !isObj {
		return nil, "", true, &FormError{Pointer: prefix, Code: FormAmbiguous, Detail: "the body is not an object, so it cannot be a form"}
	}
	return obj, prefix, true, nil
}

// CheckForm is what a form binding (body: form) would refuse of a call's
// arguments (decoded by contract.DecodeJSON; argsLen the size of their
// canonical JSON), before anything is claimed or sent: a *FormError whose
// pointer is the argument's, or nil. Any other binding, and a GET or HEAD
// (which sends no body), checks nothing.
func CheckForm(b *Binding, args any, argsLen int) *FormError {
	if b.Body != BodyForm || b.Method == http.MethodGet || b.Method == http.MethodHead {
		return nil // a GET or HEAD carries no body (Call)
	}
	obj, prefix, ok, err := formBody(b, args)
	if !ok {
		return nil
	}
	if err == nil {
		reserved, _ := args.(map[string]any)
		if b.BodyArg != "" {
			reserved = obj
		}
		w := formWriter{args: obj, enc: b.FormEncoding, reserved: reserved}
		err = w.count(FormLimit(argsLen))
	}
	var fe *FormError
	if errors.As(err, &fe) {
		fe.Pointer = prefix + fe.Pointer
		return fe
	}
	if err != nil {
		return &FormError{Pointer: prefix, Code: FormAmbiguous, Detail: err.Error()}
	}
	return nil
}

// requestBody shapes the call's arguments (the canonical JSON object the
// ledger digests) into the body the binding sends: BodyArg picks one
// argument, BodyOmit leaves some out, and Body says JSON, form or none. It
// returns the body and its Content-Type ("" to keep the caller's). A form
// past FormLimit of the arguments' size is refused before it is built.
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
	if b.Body == BodyForm {
		obj, _, ok, err := formBody(b, v)
		if !ok || err != nil {
			return nil, "", err
		}
		reserved, _ := v.(map[string]any)
		if b.BodyArg != "" {
			reserved = obj
		}
		w := formWriter{args: obj, enc: b.FormEncoding, reserved: reserved}
		s, err := w.encode(FormLimit(len(args)))
		if err != nil {
			return nil, "", err
		}
		return []byte(s), "application/x-www-form-urlencoded", nil
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
	} else if isObj && len(b.BodyOmit) > 0 {
		obj = maps(obj)
		for _, k := range b.BodyOmit {
			delete(obj, k)
		}
		v = obj
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
