package textsafe

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEscape(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, one, lines string }{
		{"alice", "alice", "alice"},
		{"\u202eecila", `\u202eecila`, `\u202eecila`},
		{"al\u200bice\u200d", `al\u200bice\u200d`, `al\u200bice\u200d`},
		{"a\u2028b\u2029c\u0085d", `a\u2028b\u2029c\u0085d`, `a\u2028b\u2029c\u0085d`},
		{"a\nb\x1b[31mc\td", `a\nb\x1b[31mc\td`, "a\nb\\x1b[31mc\td"},
		{"no\u00a0break\u3164", `no\u00a0break\u3164`, `no\u00a0break\u3164`},
		{"bad\xffbyte", `bad\xffbyte`, `bad\xffbyte`},
		{"José ✓ 日本 \uFFFD", "José ✓ 日本 \uFFFD", "José ✓ 日本 \uFFFD"},
		{"tag\U000E0041", `tag\U000e0041`, `tag\U000e0041`},
	} {
		if got := Escape(tc.in); got != tc.one {
			t.Errorf("Escape(%q) = %q, want %q", tc.in, got, tc.one)
		}
		if got := EscapeLines(tc.in); got != tc.lines {
			t.Errorf("EscapeLines(%q) = %q, want %q", tc.in, got, tc.lines)
		}
	}
}

func TestCheckName(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"alice", "José García", "小林", "bob-2 (night)"} {
		if err := CheckName(ok); err != nil {
			t.Errorf("CheckName(%q): %v", ok, err)
		}
	}
	for in, want := range map[string]string{
		"\u202eecila": "U+202E at byte 0", "al\u200bice": "U+200B at byte 2", "a\u2028": "U+2028 at byte 1",
		"a\x00": "U+0000 at byte 1", "x\xff": "byte 1 is not valid UTF-8", "a\u00a0b": "U+00A0", "\u3164": "U+3164",
		"a\u2066b": "U+2066", "a\ufeff": "U+FEFF",
	} {
		if err := CheckName(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckName(%q) = %v, want %q", in, err, want)
		}
	}
}

// Whatever the text, Escape's result holds no hidden character and no
// invalid UTF-8, is one line, and reads back (as a Go string literal) to
// the text; a name CheckName accepts escapes to itself.
func FuzzEscape(f *testing.F) {
	for _, s := range []string{"alice", "\u202eecila", "a\nb\x1b", "\xff\xfe", "\u3164\u200b", `\u202e`, "\uFFFD"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e := Escape(s)
		if !utf8.ValidString(e) || strings.ContainsAny(e, "\n\r") {
			t.Fatalf("Escape(%q) = %q", s, e)
		}
		for _, r := range e {
			if Hidden(r) {
				t.Fatalf("Escape(%q) = %q holds %U", s, e, r)
			}
		}
		if CheckName(s) == nil && e != s {
			t.Fatalf("a clean name %q escaped to %q", s, e)
		}
		if !strings.Contains(s, `\`) && !strings.Contains(s, `"`) {
			if back, err := strconv.Unquote(`"` + e + `"`); err != nil || back != s {
				t.Fatalf("Escape(%q) = %q reads back as %q, %v", s, e, back, err)
			}
		}
	})
}
