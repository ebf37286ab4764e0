// Package secret scrubs configured secret values (the credentials of an
// upstream's mcp.headers, a URL's password or query) from the texts toolgate
// writes: logs, /readyz, error texts and what they become (a problem's
// detail, an action's history). A secret is replaced in every form it is
// commonly written in (as is, quoted, JSON-escaped, URL-escaped, and the
// token of an "Authorization: Bearer …" or "Basic …" value), and wherever a
// reader would decode it: behind backslash escapes (JSON's \u0074, \/ and
// \\, Go's and JavaScript's \x74, \u{74} and \U00000074), percent-encoding
// and HTML character references, mixed and nested (Replacer). Base64 and
// other encodings of a whole value are out of scope: nobody reads them by
// eye, and a search for every one would mask ordinary text.
package secret

import (
	"encoding/base64"
	"encoding/json"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
)

// Mask replaces a secret.
const Mask = "[secret]"

// MinLength is the shortest value scrubbed: a shorter one ("1", "on") is no
// credential and would blank ordinary words.
const MinLength = 4

// Set is a set of secret values. The zero value and nil scrub nothing. It is
// safe for concurrent use once built.
type Set struct {
	mu       sync.Mutex
	forms    map[string]bool
	replacer *Replacer
}

// Add adds values (and, for an Authorization-style value, its token).
func (s *Set) Add(values ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range values {
		s.add(v)
		scheme, token, ok := strings.Cut(strings.TrimSpace(v), " ")
		if !ok {
			continue
		}
		token = strings.TrimSpace(token)
		s.add(token)
		if strings.EqualFold(scheme, "basic") {
			if raw, err := base64.StdEncoding.DecodeString(token); err == nil {
				s.add(string(raw))
				if _, pass, ok := strings.Cut(string(raw), ":"); ok {
					s.add(pass)
				}
			}
		}
	}
}

func (s *Set) add(v string) {
	if len(v) < MinLength {
		return
	}
	if s.forms == nil {
		s.forms = map[string]bool{}
	}
	q, a := strconv.Quote(v), strconv.QuoteToASCII(v)
	j, _ := json.Marshal(v)
	for _, f := range []string{v, url.PathEscape(v), url.QueryEscape(v), q[1 : len(q)-1], a[1 : len(a)-1], string(j[1 : len(j)-1])} {
		if len(f) >= MinLength {
			s.forms[f] = true
		}
	}
	s.replacer = nil
}

// AddURL adds a URL's password and its query's values.
func (s *Set) AddURL(raw string) {
	u, err := url.Parse(raw)
	if err != nil {
		return
	}
	if u.User != nil {
		if p, ok := u.User.Password(); ok {
			s.Add(p)
		}
	}
	for _, vs := range u.Query() {
		s.Add(vs...)
	}
}

// Empty reports a set with nothing to scrub.
func (s *Set) Empty() bool {
	if s == nil {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.forms) == 0
}

// Scrub returns t with every secret replaced by Mask.
func (s *Set) Scrub(t string) string {
	if s == nil || t == "" {
		return t
	}
	s.mu.Lock()
	if len(s.forms) == 0 {
		s.mu.Unlock()
		return t
	}
	if s.replacer == nil {
		s.replacer = NewReplacer(s.forms, Mask)
	}
	r := s.replacer
	s.mu.Unlock()
	return r.Replace(t)
}

// Replacer replaces values in text in every form a reader would decode:
// as they are, and behind escapes (decode). It is safe for concurrent use.
type Replacer struct {
	plain  *strings.Replacer
	values []string
	mask   string
}

// NewReplacer returns a Replacer of every value of values by mask, the
// longer values first, so that a value that contains another is replaced
// whole.
func NewReplacer(values map[string]bool, mask string) *Replacer {
	forms := make([]string, 0, len(values))
	for f := range values {
		if f != "" {
			forms = append(forms, f)
		}
	}
	sort.Slice(forms, func(i, j int) bool {
		if len(forms[i]) != len(forms[j]) {
			return len(forms[i]) > len(forms[j])
		}
		return forms[i] < forms[j]
	})
	pairs := make([]string, 0, 2*len(forms))
	for _, f := range forms {
		pairs = append(pairs, f, mask)
	}
	return &Replacer{plain: strings.NewReplacer(pairs...), values: forms, mask: mask}
}

// maxDecodeLayers bounds how many layers of escapes are decoded (a JSON
// string inside a JSON string inside a URL is three).
const maxDecodeLayers = 4

// Replace returns t with every value replaced by the mask: where it stands
// as it is, and where the text decodes to it. The shortest run of t that
// decodes to a value (whole escape sequences) is replaced, so an escaped
// value inside a JSON string leaves a valid JSON string.
func (r *Replacer) Replace(t string) string {
	if r == nil || len(r.values) == 0 {
		return t
	}
	t = r.plain.Replace(t)
	if !strings.ContainsAny(t, "\\%&") {
		return t
	}
	v := identity(t)
	var spans [][2]int
	for range maxDecodeLayers {
		next, changed := decodeLayer(t, v)
		if !changed {
			break
		}
		v = next
		spans = append(spans, r.find(v)...)
	}
	if len(spans) == 0 {
		return t
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i][0] < spans[j][0] })
	var b strings.Builder
	b.Grow(len(t))
	at := 0
	for i := 0; i < len(spans); {
		start, end := spans[i][0], spans[i][1]
		for i++; i < len(spans) && spans[i][0] <= end; i++ {
			end = max(end, spans[i][1])
		}
		if start < at {
			start = at
		}
		b.WriteString(t[at:start])
		b.WriteString(r.mask)
		at = end
	}
	b.WriteString(t[at:])
	return b.String()
}

// view is decoded text: each byte with the run of the original text it
// came from.
type view struct {
	b          []byte
	start, end []int
}

func identity(t string) view {
	v := view{b: []byte(t), start: make([]int, len(t)), end: make([]int, len(t))}
	for i := range t {
		v.start[i], v.end[i] = i, i+1
	}
	return v
}

// find returns the original runs of every occurrence of a value in v.
func (r *Replacer) find(v view) [][2]int {
	var out [][2]int
	s := string(v.b)
	for _, val := range r.values {
		for off := 0; ; {
			i := strings.Index(s[off:], val)
			if i < 0 {
				break
			}
			i += off
			out = append(out, [2]int{v.start[i], v.end[i+len(val)-1]})
			off = i + 1
		}
	}
	return out
}

// decodeLayer decodes one layer of escapes of v: backslash escapes (\uXXXX
// with surrogate pairs, \u{X…}, \UXXXXXXXX, \xXX, \n \t \r \b \f \v \a \0,
// and a backslash before any other character stands for it), %XX and
// &#N; / &#xH;. It reports whether anything was decoded.
func decodeLayer(t string, v view) (view, bool) {
	out := view{b: make([]byte, 0, len(v.b)), start: make([]int, 0, len(v.b)), end: make([]int, 0, len(v.b))}
	changed := false
	emit := func(p []byte, from, to int) {
		for _, c := range p {
			out.b = append(out.b, c)
			out.start = append(out.start, v.start[from])
			out.end = append(out.end, v.end[to-1])
		}
	}
	b := v.b
	for i := 0; i < len(b); {
		if n, dec := decodeAt(b, i); n > 0 {
			emit(dec, i, i+n)
			i += n
			changed = true
			continue
		}
		emit(b[i:i+1], i, i+1)
		i++
	}
	return out, changed
}

// decodeAt decodes the escape that starts at b[i]: its length and bytes,
// or 0 when none starts there.
func decodeAt(b []byte, i int) (int, []byte) {
	switch b[i] {
	case '%':
		if h, ok := hexAt(b, i+1, 2); ok {
			return 3, []byte{byte(h)}
		}
	case '&':
		if i+3 < len(b) && b[i+1] == '#' {
			j, base := i+2, 10
			if b[j] == 'x' || b[j] == 'X' {
				j, base = j+1, 16
			}
			k := j
			for k < len(b) && k-j < 8 && isDigit(b[k], base) {
				k++
			}
			if k > j && k < len(b) && b[k] == ';' {
				if n, err := strconv.ParseUint(string(b[j:k]), base, 32); err == nil {
					return k + 1 - i, runeBytes(rune(n))
				}
			}
		}
	case '\\':
		if i+1 >= len(b) {
			return 0, nil
		}
		switch c := b[i+1]; c {
		case 'u':
			if i+2 < len(b) && b[i+2] == '{' {
				k := i + 3
				for k < len(b) && k-i-3 < 8 && isDigit(b[k], 16) {
					k++
				}
				if k > i+3 && k < len(b) && b[k] == '}' {
					n, _ := strconv.ParseUint(string(b[i+3:k]), 16, 32)
					return k + 1 - i, runeBytes(rune(n))
				}
				return 0, nil
			}
			h, ok := hexAt(b, i+2, 4)
			if !ok {
				return 0, nil
			}
			if utf16.IsSurrogate(rune(h)) && i+11 < len(b) && b[i+6] == '\\' && b[i+7] == 'u' {
				if l, ok := hexAt(b, i+8, 4); ok {
					if r := utf16.DecodeRune(rune(h), rune(l)); r != utf8.RuneError {
						return 12, runeBytes(r)
					}
				}
			}
			return 6, runeBytes(rune(h))
		case 'U':
			if h, ok := hexAt(b, i+2, 8); ok {
				return 10, runeBytes(rune(h))
			}
		case 'x':
			if h, ok := hexAt(b, i+2, 2); ok {
				return 4, []byte{byte(h)}
			}
		case 'n':
			return 2, []byte{'\n'}
		case 't':
			return 2, []byte{'\t'}
		case 'r':
			return 2, []byte{'\r'}
		case 'b':
			return 2, []byte{'\b'}
		case 'f':
			return 2, []byte{'\f'}
		case 'v':
			return 2, []byte{'\v'}
		case 'a':
			return 2, []byte{'\a'}
		case '0':
			return 2, []byte{0}
		default:
			return 2, []byte{c}
		}
	}
	return 0, nil
}

func hexAt(b []byte, i, n int) (uint64, bool) {
	if i+n > len(b) {
		return 0, false
	}
	for _, c := range b[i : i+n] {
		if !isDigit(c, 16) {
			return 0, false
		}
	}
	h, err := strconv.ParseUint(string(b[i:i+n]), 16, 32)
	return h, err == nil
}

func isDigit(c byte, base int) bool {
	switch {
	case c >= '0' && c <= '9':
		return true
	case base == 16 && (c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'):
		return true
	}
	return false
}

func runeBytes(r rune) []byte {
	if !utf8.ValidRune(r) {
		r = utf8.RuneError
	}
	return utf8.AppendRune(nil, r)
}
