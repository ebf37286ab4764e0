package secret

import (
	"encoding/json"
	"fmt"
	"html"
	"math/rand/v2"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var pctEscape = regexp.MustCompile(`%[0-9A-Fa-f]{2}`)

// readings are the texts a reader could decode from s, up to depth layers:
// s, the strings of s as JSON, s as the body of a JSON or Go string, s
// percent-decoded and HTML-unescaped, and theirs in turn (each once).
func readings(s string, depth int) []string {
	seen := map[string]bool{}
	var out []string
	var read func(s string, depth int)
	read = func(s string, depth int) {
		if seen[s] {
			return
		}
		seen[s] = true
		out = append(out, s)
		if depth == 0 {
			return
		}
		for _, n := range decodings(s) {
			read(n, depth-1)
		}
	}
	read(s, depth)
	return out
}

// decodings are the texts one layer of decoding makes of s.
func decodings(s string) []string {
	var next []string
	var v any
	if json.Unmarshal([]byte(s), &v) == nil {
		var walk func(any)
		walk = func(v any) {
			switch x := v.(type) {
			case string:
				next = append(next, x)
			case map[string]any:
				for k, e := range x {
					next = append(next, k)
					walk(e)
				}
			case []any:
				for _, e := range x {
					walk(e)
				}
			}
		}
		walk(v)
	}
	var js string
	if json.Unmarshal([]byte(`"`+s+`"`), &js) == nil {
		next = append(next, js)
	}
	if u, err := strconv.Unquote(`"` + s + `"`); err == nil {
		next = append(next, u)
	}
	// A reader decodes the percent escapes that are valid, whatever else
	// the text holds ("100% %74ok").
	next = append(next, pctEscape.ReplaceAllStringFunc(s, func(m string) string {
		u, _ := url.PathUnescape(m)
		return u
	}))
	return append(next, html.UnescapeString(s))
}

// decodesTo reports whether a reader could read secret in s.
func decodesTo(s, secret string) bool {
	for _, r := range readings(s, maxDecodeLayers) {
		if strings.Contains(r, secret) {
			return true
		}
	}
	return false
}

// encodeChar writes one character of a secret in a form a reader decodes
// in the given context.
func encodeChar(r *rand.Rand, kind int, c rune) string {
	if r.IntN(3) == 0 {
		return string(c)
	}
	switch kind {
	case 0:
		return fmt.Sprintf(`\u%04x`, c)
	case 1:
		return fmt.Sprintf(`\u%04X`, c)
	case 2:
		var b strings.Builder
		for _, x := range []byte(string(c)) {
			fmt.Fprintf(&b, "%%%02X", x)
		}
		return b.String()
	case 3:
		return fmt.Sprintf("&#%d;", c)
	}
	return string(c)
}

// The finding: an upstream's answer repeats a secret with its first
// letter JSON-escaped, after the plain form is scrubbed elsewhere.
func TestReplaceEscapedForms(t *testing.T) {
	t.Parallel()
	const tok = "tok-5ecret-value-91"
	rp := NewReplacer(map[string]bool{tok: true}, Mask)
	for _, in := range []string{
		`error: \u0074ok-5ecret-value-91 refused`,
		`{"error":"\u0074ok-5ecret-value-91 refused"}`,
		`{"error":"{\"token\":\"\\u0074ok-5ecret-value-91\"}"}`,
		`token=%74ok%2D5ecret-value-91&x=1`,
		`token=%2574ok-5ecret-value-91`,
		`\x74ok-5ecret\u{2d}value-91`,
		`&#116;ok-5ecret-value-91`,
		`\ud83d\ude00 \u0074\u006f\u006b-5ecret-value-91`,
	} {
		got := rp.Replace(in)
		if decodesTo(got, tok) || !strings.Contains(got, Mask) {
			t.Errorf("Replace(%q) = %q", in, got)
		}
		if json.Valid([]byte(in)) && !json.Valid([]byte(got)) {
			t.Errorf("Replace(%q) = %q is no longer JSON", in, got)
		}
	}
	for _, keep := range []string{`100% \u0041 plain`, `C:\path\to\file`, `&#38; &amp;`} {
		if got := rp.Replace(keep); got != keep {
			t.Errorf("Replace(%q) = %q, want it unchanged", keep, got)
		}
	}
}

// Property: a marker secret written with its characters in a random form
// (raw, or \u, \U-case \u, %XX or &#N; — one kind per case), inside text, put in a JSON string, that in a JSON
// document, possibly again in a JSON string: after Replace no reading of
// the document holds the secret, and the document is still JSON.
func TestReplacePropertyRandomEscapings(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(38, 17))
	const secret = "mk-SECRET-7Q2z"
	rp := NewReplacer(map[string]bool{secret: true}, Mask)
	for i := range 3000 {
		var enc strings.Builder
		kind := r.IntN(4) // one form per case: the oracle reads one kind of escape per layer
		for _, c := range secret {
			enc.WriteString(encodeChar(r, kind, c))
		}
		text := []string{"", "error ", "token=", "100% "}[r.IntN(4)] + enc.String() + []string{"", " refused", "&x=1", " %"}[r.IntN(4)]
		doc := text
		for range 1 + r.IntN(2) {
			b, _ := json.Marshal(map[string]string{"message": doc})
			doc = string(b)
		}
		if !decodesTo(doc, secret) {
			t.Fatalf("case %d: the oracle does not read the secret in %q", i, doc)
		}
		got := rp.Replace(doc)
		if decodesTo(got, secret) {
			t.Fatalf("case %d: Replace(%q) = %q still reads as the secret", i, doc, got)
		}
		if !json.Valid([]byte(got)) {
			t.Fatalf("case %d: Replace(%q) = %q is no longer JSON", i, doc, got)
		}
	}
}

// Whatever the text, no reading of Replace's result holds the secret.
func FuzzReplace(f *testing.F) {
	f.Add(`error: \u0054OKEN42 refused`, "TOKEN42")
	f.Add(`{"m":"{\"t\":\"\\u0054OKEN42\"}"}`, "TOKEN42")
	f.Add(`%2554OKEN42`, "TOKEN42")
	f.Add(`&#x54;OKEN42 \x54OKEN42 \u{54}OKEN42`, "TOKEN42")
	f.Fuzz(func(t *testing.T, text, secret string) {
		// A secret of capitals and digits: the mask ("[secret]") cannot
		// form or join into one.
		if len(secret) < 6 || len(secret) > 32 || strings.Trim(secret, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") != "" || len(text) > 512 {
			return
		}
		got := NewReplacer(map[string]bool{secret: true}, Mask).Replace(text)
		if decodesTo(got, secret) {
			t.Fatalf("Replace(%q) = %q still reads as %q", text, got, secret)
		}
	})
}
