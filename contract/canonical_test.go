package contract

import (
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/canon"
)

var canonLong = flag.Bool("canon-long", false, "TestDecodeCanonicalSameAsDecodeJSON: a million generated instances instead of 20,000")

// numberAt is the pointer in checkNumbers' error. With several numbers out
// of range DecodeJSON names one of them in map order, which varies from run
// to run; such input never reaches the call path's decode (the canonicalizer
// refuses it first, 422 number_not_exact), so only the rest of the error is
// compared: that there is one.
var numberAt = regexp.MustCompile(`the number at ".*$`)

func sameError(a, b string, strict bool) bool {
	if strict {
		return a == b
	}
	return numberAt.ReplaceAllString(a, "") == numberAt.ReplaceAllString(b, "")
}

// sameDecode fails t unless DecodeCanonical and DecodeJSON agree on data:
// the same value (json.Number text included) or the same error text
// (exactly, when strict).
func sameDecode(t testing.TB, data []byte, strict bool) {
	t.Helper()
	want, werr := DecodeJSON(data)
	got, gerr := DecodeCanonical(data)
	if (werr == nil) != (gerr == nil) || werr != nil && !sameError(werr.Error(), gerr.Error(), strict) {
		t.Fatalf("%.2000q: DecodeJSON error %v, DecodeCanonical error %v", data, werr, gerr)
	}
	if !reflect.DeepEqual(want, got) {
		t.Fatalf("%.2000q: DecodeJSON %#v, DecodeCanonical %#v", data, want, got)
	}
}

// oddKeys and oddStrings are the corners a contract's error details and
// templates meet: empty, percent signs, pointer characters, JSON Schema and
// CEL keywords, escapes, non-ASCII.
var (
	oddKeys    = []string{"", "%", "%25", "a/b", "~0", "~1", "type", "properties", "$ref", "in", "has", "size", "null", "true", "int", "args", "é", "\u2028", "\x7f", "a\"b", "a\\b", "tab\t", "nl\n", "\x01", "😀", "order_id", "amount_minor"}
	oddStrings = []string{"", "%", "%s", "\"", "\\", "\b\f\n\r\t", "\x00\x1f", "\u00e9", "\u2028\u2029", "😀", "</script>", "a b", "1.50", "-0", "1e400", "null"}
	oddNumbers = []string{"0", "-0", "1", "-1", "1.50", "1.5", "1.0", "1e0", "1E+2", "1e-7", "0.1", "0.10000000000000001", "1e21", "1e+21", "123456789012345", "1234567890123456", "9007199254740993", "9007199254740992",
		"1e400", "-1e400", "1e-400", "4.9e-324", "1.7976931348623157e308", "1e308", "100000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000001", "2.5e-5", "-0.0", "0e10"}
)

// genJSON writes a random JSON value with odd corners: whitespace (raw
// text only), every escape form, duplicate keys, deep nesting.
func genJSON(r *rand.Rand, b *strings.Builder, depth int, raw bool) {
	ws := func() {
		if raw && r.Intn(4) == 0 {
			b.WriteString([]string{" ", "\n", "\t", "\r\n "}[r.Intn(4)])
		}
	}
	ws()
	k := r.Intn(10)
	if depth > 4 {
		k = 4 + r.Intn(6)
	}
	switch {
	case k < 2:
		b.WriteByte('{')
		n := r.Intn(6)
		for i := 0; i < n; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			ws()
			genString(r, b, oddKeys, raw)
			ws()
			b.WriteByte(':')
			genJSON(r, b, depth+1, raw)
		}
		ws()
		b.WriteByte('}')
	case k < 4:
		b.WriteByte('[')
		n := r.Intn(8)
		for i := 0; i < n; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			genJSON(r, b, depth+1, raw)
		}
		b.WriteByte(']')
	case k < 6:
		genString(r, b, oddStrings, raw)
	case k < 8:
		if r.Intn(3) == 0 {
			fmt.Fprintf(b, "%g", r.NormFloat64()*float64(r.Int63n(1<<uint(r.Intn(60)+1))))
		} else {
			b.WriteString(oddNumbers[r.Intn(len(oddNumbers))])
		}
	default:
		b.WriteString([]string{"true", "false", "null"}[r.Intn(3)])
	}
	ws()
}

func genString(r *rand.Rand, b *strings.Builder, pool []string, raw bool) {
	s := pool[r.Intn(len(pool))]
	b.WriteByte('"')
	for _, c := range s {
		switch {
		case raw && r.Intn(8) == 0:
			if c > 0xffff {
				hi, lo := (c-0x10000)>>10+0xd800, (c-0x10000)&0x3ff+0xdc00
				fmt.Fprintf(b, `\u%04X\u%04x`, hi, lo)
			} else {
				fmt.Fprintf(b, `\u%04x`, c)
			}
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteRune(c)
		case c < ' ':
			fmt.Fprintf(b, `\u%04x`, c)
		default:
			b.WriteRune(c)
		}
	}
	b.WriteByte('"')
}

// TestDecodeCanonicalSameAsDecodeJSON compares the two decoders on generated
// instances, as sent and in their canonical form (what the call path
// decodes), and on the corners one by one.
func TestDecodeCanonicalSameAsDecodeJSON(t *testing.T) {
	for _, s := range []string{"", " ", "{}", "[]", `""`, `"%"`, "{", `{"a":1}x`, `{"a":1} `, `{"a":1,"a":2}`, `{"a":01}`, `{"a":1.}`, `{"a":-}`, `{"a":1e}`, `{"a":tru}`, `{"a":"\u00zz"}`, "{\"a\":\"\x01\"}",
		`{"a":"\ud800"}`, `{"a":"\u0080"}`, `{"a":"\/"}`, "\"\xff\"", `[1,]`, `{"a":1,}`, `{,}`, strings.Repeat("[", 300) + strings.Repeat("]", 300), strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
		`{"n":1e400}`, `{"n":` + strings.Repeat("1", 101) + `}`, `{"n":1e-401}`, `[-0,0.0,1.50,1e21]`} {
		sameDecode(t, []byte(s), false)
	}
	n := 20000
	if *canonLong {
		n = 1000000
	}
	r := rand.New(rand.NewSource(32))
	canonical := 0
	for i := 0; i < n; i++ {
		var b strings.Builder
		genJSON(r, &b, 0, true)
		sameDecode(t, []byte(b.String()), false)
		c, err := canon.TransformExact([]byte(b.String()))
		var ne *canon.NotExactError
		if err != nil && !errors.As(err, &ne) {
			continue // duplicate keys and the like: refused before any decode
		}
		if err == nil {
			canonical++
			sameDecode(t, c, true)
		}
	}
	if canonical < n/10 {
		t.Fatalf("only %d of %d generated instances were canonicalizable: the comparison of the call path's input checked too little", canonical, n)
	}
}

func FuzzDecodeCanonical(f *testing.F) {
	for _, s := range []string{`{"a":[1,"x",null,true,{"b":-0.5e-7}]}`, `{"":"\u001f\n"}`, `[1.50]`, `"%"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sameDecode(t, data, false)
		if c, err := canon.Transform(data); err == nil {
			sameDecode(t, c, true)
		}
	})
}

func BenchmarkDecodeArguments(b *testing.B) {
	args, err := canon.Transform([]byte(`{"order_id":"ord_8Xk2Lm9Q","amount_minor":1500,"currency":"EUR","reason":"customer_request","customer_email":"jane@example.com"}`))
	if err != nil {
		b.Fatal(err)
	}
	for _, d := range []struct {
		name string
		fn   func([]byte) (any, error)
	}{{"DecodeJSON", DecodeJSON}, {"DecodeCanonical", DecodeCanonical}} {
		b.Run(d.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := d.fn(args); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
