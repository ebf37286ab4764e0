package jsonschemax

import (
	"errors"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/idna"
	"golang.org/x/text/unicode/norm"
)

// IDNA2008 (RFC 5890–5893) for the A-labels of a host name: an "xn--" label is valid only
// when its Punycode decodes to a valid U-label. golang.org/x/net/idna decodes and applies
// the registration rules (NFC, the code points IDNA2008 permits, CONTEXTJ for the
// zero-width joiners, the Bidi rule, hyphens); the CONTEXTO rules of RFC 5892 Appendix A
// and the exceptions of RFC 5892 §2.6 that are DISALLOWED are checked here.

var idnaCheck = idna.New(idna.ValidateForRegistration(), idna.CheckHyphens(true), idna.CheckJoiners(true))

// aLabel checks one label that starts with "xn--" (any case).
func aLabel(label string) error {
	u, err := idna.Punycode.ToUnicode(strings.ToLower(label))
	if err != nil || u == "" {
		return errors.New("an A-label whose Punycode does not decode")
	}
	ascii := true
	for i := 0; i < len(u); i++ {
		if u[i] >= utf8.RuneSelf {
			ascii = false
		}
	}
	if ascii {
		return errors.New("an A-label that decodes to plain ASCII")
	}
	if back, err := idna.Punycode.ToASCII(u); err != nil || !strings.EqualFold(back, label) {
		return errors.New("an A-label that is not the canonical encoding of its U-label")
	}
	if !norm.NFC.IsNormalString(u) {
		return errors.New("an A-label whose U-label is not in NFC")
	}
	rs := []rune(u)
	if len(rs) >= 4 && rs[2] == '-' && rs[3] == '-' {
		return errors.New(`a U-label with "--" in its third and fourth positions`)
	}
	if rs[0] == '-' || rs[len(rs)-1] == '-' {
		return errors.New("a U-label that starts or ends with a hyphen")
	}
	if unicode.Is(unicode.M, rs[0]) {
		return errors.New("a U-label that begins with a combining mark")
	}
	for i, r := range rs {
		if disallowedException(r) {
			return errors.New("a U-label with a code point IDNA2008 disallows")
		}
		if err := contextO(rs, i); err != nil {
			return err
		}
	}
	if _, err := idnaCheck.ToASCII(u); err != nil {
		return errors.New("an A-label whose U-label IDNA2008 does not permit")
	}
	return nil
}

// disallowedException: the exceptions RFC 5892 §2.6 makes DISALLOWED.
func disallowedException(r rune) bool {
	switch r {
	case 0x0640, 0x07FA, 0x302E, 0x302F, 0x3031, 0x3032, 0x3033, 0x3034, 0x3035, 0x303B:
		return true
	}
	return false
}

// contextO applies the CONTEXTO rules of RFC 5892 Appendix A.3–A.9 to rs[i].
func contextO(rs []rune, i int) error {
	r := rs[i]
	switch {
	case r == 0x00B7: // MIDDLE DOT: between two l
		if i == 0 || i == len(rs)-1 || rs[i-1] != 'l' || rs[i+1] != 'l' {
			return errors.New("a MIDDLE DOT not between two l")
		}
	case r == 0x0375: // GREEK LOWER NUMERAL SIGN (KERAIA): followed by Greek
		if i == len(rs)-1 || !unicode.Is(unicode.Greek, rs[i+1]) {
			return errors.New("a Greek KERAIA not followed by a Greek character")
		}
	case r == 0x05F3 || r == 0x05F4: // GERESH, GERSHAYIM: preceded by Hebrew
		if i == 0 || !unicode.Is(unicode.Hebrew, rs[i-1]) {
			return errors.New("a Hebrew GERESH or GERSHAYIM not preceded by a Hebrew character")
		}
	case r == 0x30FB: // KATAKANA MIDDLE DOT: with Hiragana, Katakana or Han in the label
		for _, o := range rs {
			if o != 0x30FB && (unicode.Is(unicode.Hiragana, o) || unicode.Is(unicode.Katakana, o) || unicode.Is(unicode.Han, o)) {
				return nil
			}
		}
		return errors.New("a KATAKANA MIDDLE DOT without Hiragana, Katakana or Han in the label")
	case r >= 0x0660 && r <= 0x0669: // ARABIC-INDIC DIGITS: not mixed with the extended ones
		for _, o := range rs {
			if o >= 0x06F0 && o <= 0x06F9 {
				return errors.New("Arabic-Indic digits mixed with Extended Arabic-Indic digits")
			}
		}
	case r >= 0x06F0 && r <= 0x06F9:
		for _, o := range rs {
			if o >= 0x0660 && o <= 0x0669 {
				return errors.New("Extended Arabic-Indic digits mixed with Arabic-Indic digits")
			}
		}
	}
	return nil
}
