// Package textsafe keeps text that people type (an assignee's name, an
// operator's note) from showing as something else where people read it: a
// bidi override ("\u202Eecila" shows as "alice" and reverses the rest of
// its line), a zero-width character, a line separator or a terminal escape.
//
// One rule decides what is hidden (Hidden); names are refused when they
// hold any (CheckName); free text is shown with each escaped (Escape,
// EscapeLines). The dashboard applies the same rule in JavaScript
// (gateway/ui/app.js, userText), and JSON carries the text as it is.
package textsafe

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Hidden reports whether r does not show as itself: a control character
// (C0, DEL, C1), a format character (Cf: bidi embeddings, overrides,
// isolates and marks, zero-width spaces and joiners, the byte order mark,
// the soft hyphen, tag characters), a line or paragraph separator, any
// space but U+0020, a surrogate, a private-use or unassigned code point,
// and the Hangul fillers, which print as blank.
func Hidden(r rune) bool {
	switch r {
	case ' ':
		return false
	case 0x115F, 0x1160, 0x3164, 0xFFA0:
		return true
	}
	return !unicode.IsPrint(r) || unicode.Is(unicode.Cf, r)
}

// CheckName returns an error naming the first character of a name that is
// not valid UTF-8 or is Hidden, with its byte offset; nil when it has none.
func CheckName(s string) error {
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			return fmt.Errorf("byte %d is not valid UTF-8", i)
		case Hidden(r):
			return fmt.Errorf("holds %s at byte %d, a character that does not show as itself (a control, format, bidi, zero-width or separator character)", name(r), i)
		}
	}
	return nil
}

// name is "U+202E" for r.
func name(r rune) string { return fmt.Sprintf("U+%04X", r) }

// Escape returns s with every Hidden character written as its Go escape
// (\n, \t, \x1b, \u202e, \U000e0041) and every byte that is not UTF-8 as
// \xNN; everything else stays as it is. The result is one line, and shows
// in a terminal and a page as exactly what it holds.
func Escape(s string) string { return escape(s, false) }

// EscapeLines is Escape keeping newlines and tabs, for text shown on lines
// of its own (a downstream's body).
func EscapeLines(s string) string { return escape(s, true) }

func escape(s string, lines bool) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || Hidden(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case lines && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case Hidden(r) && strconv.IsPrint(r): // the Hangul fillers
			fmt.Fprintf(&b, `\u%04x`, r)
		case Hidden(r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
