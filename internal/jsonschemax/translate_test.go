package jsonschemax

import (
	"math/rand"
	"regexp"
	"strings"
	"testing"

	"github.com/dlclark/regexp2/v2"
)

// TestTranslationExact is a differential property: for random ECMA-262 patterns built
// from the translated grammar and random strings (ECMA's white space, line terminators,
// astral characters), the RE2 translation and regexp2 in ECMAScript Unicode mode agree.
func TestTranslationExact(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewSource(7))
	atoms := []string{`a`, `b`, `.`, `\s`, `\S`, `\d`, `\D`, `\w`, `\W`, `[a-c]`, `[^a]`, `[\s_]`, `[\d-]`, `\u00e9`,
		`\u{1F600}`, `\x41`, `\cJ`, `\t`, `\v`, `[^]`, `[]`, `\.`, `\/`, `\-`, `\uFEFF`, `[\u2028x]`, `\0`}
	quants := []string{``, ``, `*`, `+`, `?`, `{2}`, `{1,3}`, `{0,}`, `*?`, `+?`}
	var gen func(depth int) string
	gen = func(depth int) string {
		var b strings.Builder
		for i := 1 + r.Intn(3); i > 0; i-- {
			switch {
			case depth < 2 && r.Intn(5) == 0:
				b.WriteString("(" + gen(depth+1) + "|" + gen(depth+1) + ")")
			case depth < 2 && r.Intn(6) == 0:
				b.WriteString("(?:" + gen(depth+1) + ")")
			default:
				b.WriteString(atoms[r.Intn(len(atoms))])
			}
			b.WriteString(quants[r.Intn(len(quants))])
		}
		return b.String()
	}
	chars := []string{"a", "b", "c", "A", "_", "-", "0", "9", " ", "\t", "\n", "\r", "\v", "\f", "\u00a0", "\u1680", "\u2000",
		"\u2028", "\u2029", "\u202f", "\u3000", "\ufeff", "\u0085", "\u200b", "\u00e9", "\U0001F600", ".", "/", "\x00", "\x01"}
	checked := 0
	for i := 0; i < 1500; i++ {
		pat := gen(0)
		switch r.Intn(4) {
		case 0:
			pat = "^" + pat
		case 1:
			pat = "^" + pat + "$"
		case 2:
			pat = pat + "$"
		}
		goPat, why := TranslateToRE2(pat)
		if why != "" {
			continue
		}
		want, err := regexp2.Compile(pat, Options)
		if err != nil {
			t.Fatalf("%s translated but regexp2 refuses it: %v", pat, err)
		}
		got := regexp.MustCompile(goPat)
		for j := 0; j < 20; j++ {
			var s strings.Builder
			for k := r.Intn(6); k > 0; k-- {
				s.WriteString(chars[r.Intn(len(chars))])
			}
			w, err := want.MatchString(s.String())
			if err != nil {
				t.Fatal(err)
			}
			if g := got.MatchString(s.String()); g != w {
				t.Fatalf("%s (RE2 %s) on %q: RE2 says %v, ECMA-262 says %v", pat, goPat, s.String(), g, w)
			}
			checked++
		}
	}
	if checked < 10000 {
		t.Fatalf("only %d matches compared", checked)
	}
}
