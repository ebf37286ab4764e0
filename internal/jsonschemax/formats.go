package jsonschemax

import (
	"errors"
	"net/netip"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Formats are the formats toolgate defines itself, each from its RFC's grammar; they
// replace the library's functions of the same names. The other asserted formats (date,
// time, date-time, ipv4, ipv6, uuid, json-pointer, ...) are the library's.
func Formats() []*jsonschema.Format {
	str := func(f func(string) error) func(any) error {
		return func(v any) error {
			s, ok := v.(string)
			if !ok {
				return nil
			}
			return f(s)
		}
	}
	return []*jsonschema.Format{
		{Name: "hostname", Validate: str(Hostname)},
		{Name: "email", Validate: str(Email)},
		{Name: "uri", Validate: str(func(s string) error { return uriCheck(s, false, false) })},
		{Name: "uri-reference", Validate: str(func(s string) error { return uriCheck(s, true, false) })},
		{Name: "iri", Validate: str(func(s string) error { return uriCheck(s, false, true) })},
		{Name: "iri-reference", Validate: str(func(s string) error { return uriCheck(s, true, true) })},
		{Name: "uri-template", Validate: str(URITemplate)},
		{Name: "duration", Validate: str(Duration)},
		{Name: "ipv4", Validate: str(IPv4)},
	}
}

// FormatNames lists the names of Formats.
var FormatNames = []string{"hostname", "email", "uri", "uri-reference", "iri", "iri-reference", "uri-template", "duration", "ipv4"}

// IPv4 checks RFC 2673 §3.2 dotted-quad: four decbytes of one to three ASCII digits
// (1*3DIGIT, so a leading zero is allowed, as the JSON Schema test suite reads it), each
// at most 255, and nothing else (no sign, no spaces, no hex, no port, no netmask).
func IPv4(s string) error {
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return errors.New("not four dot-separated numbers")
	}
	for _, p := range parts {
		if p == "" || len(p) > 3 {
			return errors.New("a part is not a number of one to three digits")
		}
		n := 0
		for i := 0; i < len(p); i++ {
			if !isDigit(p[i]) {
				return errors.New("a part has a character other than an ASCII digit")
			}
			n = n*10 + int(p[i]-'0')
		}
		if n > 255 {
			return errors.New("a part is greater than 255")
		}
	}
	return nil
}

// URI reports whether s is an absolute URI (RFC 3986 §3, "URI").
func URI(s string) error { return uriCheck(s, false, false) }

// URIReference reports whether s is a URI or a relative reference (RFC 3986 §4.1).
func URIReference(s string) error { return uriCheck(s, true, false) }

// IRI reports whether s is an IRI (RFC 3987 §2.2, "IRI").
func IRI(s string) error { return uriCheck(s, false, true) }

// IRIReference reports whether s is an IRI reference (RFC 3987 §2.2).
func IRIReference(s string) error { return uriCheck(s, true, true) }

// Hostname checks RFC 1123 §2.1 host names (RFC 952 as amended): dot-separated labels
// of 1 to 63 letters, digits and hyphens, not starting or ending with a hyphen (a label
// may start with a digit), at most 253 characters in all. A name ending in a dot (the
// absolute form of a domain name) is not a host name, nor is the dotted-decimal form
// #.#.#.# (RFC 1123 §2.1: the highest-level label of a host name is never numeric in
// that form). A label with "--" in its third and fourth positions is reserved (RFC 5891
// §4.2.3.1) unless it is an A-label ("xn--"), and an A-label must be IDNA2008's: its
// Punycode decodes to a valid U-label (see aLabel).
func Hostname(s string) error {
	if s == "" {
		return errors.New("empty host name")
	}
	if strings.HasSuffix(s, ".") {
		return errors.New("a trailing dot (the absolute form of a domain name) is not part of a host name")
	}
	if len(s) > 253 {
		return errors.New("longer than 253 characters")
	}
	labels := strings.Split(s, ".")
	numeric := len(labels) == 4
	for _, label := range labels {
		if err := ldhLabel(label); err != nil {
			return err
		}
		if len(label) >= 4 && label[2] == '-' && label[3] == '-' {
			if !strings.EqualFold(label[:2], "xn") {
				return errors.New(`a label with "--" in its third and fourth positions is reserved for A-labels (xn--)`)
			}
			if err := aLabel(label); err != nil {
				return err
			}
		}
		for i := 0; i < len(label); i++ {
			if !isDigit(label[i]) {
				numeric = false
			}
		}
	}
	if numeric {
		return errors.New("the dotted-decimal form of an IPv4 address is not a host name")
	}
	return nil
}

func ldhLabel(label string) error {
	if label == "" {
		return errors.New("empty label")
	}
	if len(label) > 63 {
		return errors.New("a label is longer than 63 characters")
	}
	if label[0] == '-' || label[len(label)-1] == '-' {
		return errors.New("a label starts or ends with a hyphen")
	}
	for i := 0; i < len(label); i++ {
		if !isAlnum(label[i]) && label[i] != '-' {
			return errors.New("a label has a character other than a letter, digit or hyphen")
		}
	}
	return nil
}

func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isAlnum(c byte) bool { return isAlpha(c) || isDigit(c) }
func isHex(c byte) bool   { return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// Email checks an RFC 5321 §4.1.2 Mailbox: a Dot-string or Quoted-string local part
// (at most 64 octets), "@", and a domain (sub-domains of letters, digits and hyphens)
// or an address literal ([IPv4], [IPv6:...] or [tag:content]); at most 254 octets.
// Non-ASCII addresses are idn-email's, not email's.
func Email(s string) error {
	if len(s) > 254 {
		return errors.New("longer than 254 octets")
	}
	at := strings.LastIndexByte(s, '@')
	if at <= 0 {
		return errors.New("no local part and domain separated by @")
	}
	local, domain := s[:at], s[at+1:]
	if len(local) > 64 {
		return errors.New("the local part is longer than 64 octets")
	}
	if err := emailLocal(local); err != nil {
		return err
	}
	if strings.HasPrefix(domain, "[") {
		return addressLiteral(domain)
	}
	if domain == "" || len(domain) > 253 {
		return errors.New("the domain is empty or too long")
	}
	for _, label := range strings.Split(domain, ".") {
		if err := ldhLabel(label); err != nil {
			return err
		}
	}
	return nil
}

const atext = "!#$%&'*+-/=?^_`{|}~"

func emailLocal(l string) error {
	if strings.HasPrefix(l, `"`) {
		if len(l) < 2 || !strings.HasSuffix(l, `"`) {
			return errors.New("an unterminated quoted local part")
		}
		body := l[1 : len(l)-1]
		for i := 0; i < len(body); i++ {
			c := body[i]
			switch {
			case c == '\\':
				i++
				if i >= len(body) || body[i] < 32 || body[i] > 126 {
					return errors.New("a bad quoted pair in the local part")
				}
			case c == 32 || c == 33 || c >= 35 && c <= 91 || c >= 93 && c <= 126:
			default:
				return errors.New("a character not allowed in a quoted local part")
			}
		}
		return nil
	}
	for _, atom := range strings.Split(l, ".") {
		if atom == "" {
			return errors.New("an empty atom in the local part (leading, trailing or double dot)")
		}
		for i := 0; i < len(atom); i++ {
			if !isAlnum(atom[i]) && strings.IndexByte(atext, atom[i]) < 0 {
				return errors.New("a character not allowed in the local part")
			}
		}
	}
	return nil
}

func addressLiteral(d string) error {
	if !strings.HasSuffix(d, "]") {
		return errors.New("an unterminated address literal")
	}
	body := d[1 : len(d)-1]
	if rest, ok := strings.CutPrefix(body, "IPv6:"); ok {
		if a, err := netip.ParseAddr(rest); err != nil || !a.Is6() || a.Zone() != "" {
			return errors.New("not an IPv6 address literal")
		}
		return nil
	}
	if a, err := netip.ParseAddr(body); err == nil && a.Is4() {
		return nil
	}
	tag, content, ok := strings.Cut(body, ":")
	if !ok || content == "" {
		return errors.New("not an address literal")
	}
	if err := ldhLabel(tag); err != nil {
		return errors.New("not an address literal")
	}
	for i := 0; i < len(content); i++ {
		if c := content[i]; c < 33 || c > 126 || c == '[' || c == ']' || c == '\\' {
			return errors.New("not an address literal")
		}
	}
	return nil
}

const subDelims = "!$&'()*+,;="

// uriCheck parses RFC 3986 (or, with iri, RFC 3987) URIs; with ref, relative references
// too. Every character must belong to its component's grammar: space, ", <, >, \, ^,
// backtick, {, }, | and (for URIs) non-ASCII characters appear only percent-encoded.
func uriCheck(s string, ref, iri bool) error {
	if !utf8.ValidString(s) {
		return errors.New("not valid UTF-8")
	}
	rest := s
	frag, hasFrag := "", false
	if i := strings.IndexByte(rest, '#'); i >= 0 {
		rest, frag, hasFrag = rest[:i], rest[i+1:], true
	}
	query, hasQuery := "", false
	if i := strings.IndexByte(rest, '?'); i >= 0 {
		rest, query, hasQuery = rest[:i], rest[i+1:], true
	}
	scheme := ""
	if i := strings.IndexByte(rest, ':'); i >= 0 && !strings.ContainsRune(rest[:i], '/') {
		scheme, rest = rest[:i], rest[i+1:]
		if err := uriScheme(scheme); err != nil {
			return err
		}
	} else if !ref {
		return errors.New("no scheme: a relative reference, not a URI")
	}
	if strings.HasPrefix(rest, "//") {
		auth := rest[2:]
		path := ""
		if i := strings.IndexByte(auth, '/'); i >= 0 {
			auth, path = auth[:i], auth[i:]
		}
		if err := uriAuthority(auth, iri); err != nil {
			return err
		}
		rest = path
	}
	if err := chars(rest, ":@/", iri, false); err != nil {
		return err
	}
	if hasQuery {
		if err := chars(query, ":@/?", iri, true); err != nil {
			return err
		}
	}
	if hasFrag {
		if err := chars(frag, ":@/?", iri, false); err != nil {
			return err
		}
	}
	return nil
}

func uriScheme(s string) error {
	if s == "" || !isAlpha(s[0]) {
		return errors.New("a scheme must start with a letter")
	}
	for i := 1; i < len(s); i++ {
		if !isAlnum(s[i]) && s[i] != '+' && s[i] != '-' && s[i] != '.' {
			return errors.New("a character not allowed in a scheme")
		}
	}
	return nil
}

func uriAuthority(a string, iri bool) error {
	if i := strings.LastIndexByte(a, '@'); i >= 0 {
		if err := chars(a[:i], ":", iri, false); err != nil {
			return err
		}
		a = a[i+1:]
	}
	host := a
	if strings.HasPrefix(a, "[") {
		end := strings.IndexByte(a, ']')
		if end < 0 {
			return errors.New("an unterminated IP literal")
		}
		host, a = a[1:end], a[end+1:]
		if err := ipLiteral(host); err != nil {
			return err
		}
		if a != "" && a[0] != ':' {
			return errors.New("characters after an IP literal")
		}
		return port(strings.TrimPrefix(a, ":"))
	}
	if i := strings.LastIndexByte(a, ':'); i >= 0 {
		host = a[:i]
		if err := port(a[i+1:]); err != nil {
			return err
		}
	}
	return chars(host, "", iri, false)
}

func port(p string) error {
	for i := 0; i < len(p); i++ {
		if !isDigit(p[i]) {
			return errors.New("a port must be digits")
		}
	}
	return nil
}

func ipLiteral(h string) error {
	if len(h) > 0 && (h[0] == 'v' || h[0] == 'V') {
		dot := strings.IndexByte(h, '.')
		if dot < 2 || dot == len(h)-1 {
			return errors.New("a bad IPvFuture literal")
		}
		for i := 1; i < dot; i++ {
			if !isHex(h[i]) {
				return errors.New("a bad IPvFuture literal")
			}
		}
		for i := dot + 1; i < len(h); i++ {
			if c := h[i]; !unreserved(c) && strings.IndexByte(subDelims+":", c) < 0 {
				return errors.New("a bad IPvFuture literal")
			}
		}
		return nil
	}
	a, err := netip.ParseAddr(h)
	if err != nil || !a.Is6() || a.Zone() != "" {
		return errors.New("an IP literal that is not an IPv6 address")
	}
	return nil
}

func unreserved(c byte) bool { return isAlnum(c) || c == '-' || c == '.' || c == '_' || c == '~' }

// chars checks that s holds only unreserved characters, percent-encodings, sub-delims
// and the extra characters given; with iri also RFC 3987 ucschar (and iprivate where
// private is set: in a query).
func chars(s, extra string, iri, private bool) error {
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '%':
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				return errors.New("a % not followed by two hex digits")
			}
			i += 3
			continue
		case c < utf8.RuneSelf:
			if !unreserved(c) && strings.IndexByte(subDelims, c) < 0 && strings.IndexByte(extra, c) < 0 {
				return errors.New("the character " + quoteChar(c) + " must be percent-encoded")
			}
		default:
			r, n := utf8.DecodeRuneInString(s[i:])
			if !iri || !(ucschar(r) || private && iprivate(r)) {
				return errors.New("a non-ASCII character must be percent-encoded")
			}
			i += n
			continue
		}
		i++
	}
	return nil
}

func quoteChar(c byte) string {
	if c < 32 || c == 127 {
		return "control character"
	}
	return "'" + string(rune(c)) + "'"
}

func ucschar(r rune) bool {
	switch {
	case r >= 0xA0 && r <= 0xD7FF, r >= 0xF900 && r <= 0xFDCF, r >= 0xFDF0 && r <= 0xFFEF:
		return true
	case r >= 0x10000 && r <= 0xEFFFD:
		return r&0xFFFF <= 0xFFFD && (r < 0xE0000 || r >= 0xE1000)
	}
	return false
}

func iprivate(r rune) bool {
	return r >= 0xE000 && r <= 0xF8FF || r >= 0xF0000 && r <= 0xFFFFD || r >= 0x100000 && r <= 0x10FFFD
}

// URITemplate checks RFC 6570 §2: literals (no space, ", ', %, <, >, \, ^, backtick,
// {, |, } outside percent-encodings; ucschar and iprivate allowed) and expressions
// "{" [operator] varspec *("," varspec) "}" with the level 2 (+ #) and level 3
// (. / ; ? &) operators, varnames of ALPHA, DIGIT, "_", percent-encodings and inner
// dots, and a prefix (":" 1 to 9999) or explode ("*") modifier. The operators RFC 6570
// reserves for future extensions (= , ! @ |) are invalid.
func URITemplate(s string) error {
	if !utf8.ValidString(s) {
		return errors.New("not valid UTF-8")
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '{':
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				return errors.New("an expression without its closing brace")
			}
			if err := templateExpr(s[i+1 : i+end]); err != nil {
				return err
			}
			i += end + 1
			continue
		case c == '}':
			return errors.New("a closing brace without its expression")
		case c == '%':
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				return errors.New("a % not followed by two hex digits")
			}
			i += 3
			continue
		case c < utf8.RuneSelf:
			// RFC 6570 §2.1 leaves "'" out of literals; the JSON Schema test suite (and
			// the URI templates in use) take it as a literal, so it is accepted here
			if c <= 0x20 || c == 0x7F || strings.IndexByte(`"<>\^`+"`|", c) >= 0 {
				return errors.New("the character " + quoteChar(c) + " is not allowed in a template literal")
			}
		default:
			r, n := utf8.DecodeRuneInString(s[i:])
			if !ucschar(r) && !iprivate(r) {
				return errors.New("a character not allowed in a template literal")
			}
			i += n
			continue
		}
		i++
	}
	return nil
}

func templateExpr(e string) error {
	if e == "" {
		return errors.New("an empty expression")
	}
	switch e[0] {
	case '+', '#', '.', '/', ';', '?', '&':
		e = e[1:]
	case '=', ',', '!', '@', '|':
		return errors.New("the operator " + string(e[0]) + " is reserved by RFC 6570")
	}
	for _, spec := range strings.Split(e, ",") {
		name, mod := spec, ""
		if i := strings.IndexAny(spec, ":*"); i >= 0 {
			name, mod = spec[:i], spec[i:]
		}
		if err := varname(name); err != nil {
			return err
		}
		switch {
		case mod == "" || mod == "*":
		case mod[0] == ':':
			n := mod[1:]
			if n == "" || len(n) > 4 || n[0] < '1' || n[0] > '9' {
				return errors.New("a prefix modifier must be 1 to 9999")
			}
			for i := 1; i < len(n); i++ {
				if !isDigit(n[i]) {
					return errors.New("a prefix modifier must be 1 to 9999")
				}
			}
		default:
			return errors.New("a bad modifier " + mod)
		}
	}
	return nil
}

func varname(n string) error {
	if n == "" {
		return errors.New("an empty variable name")
	}
	prevDot := true
	for i := 0; i < len(n); i++ {
		c := n[i]
		switch {
		case c == '.':
			if prevDot {
				return errors.New("a dot at the start, end or doubled in a variable name")
			}
			prevDot = true
			continue
		case c == '%':
			if i+2 >= len(n) || !isHex(n[i+1]) || !isHex(n[i+2]) {
				return errors.New("a % not followed by two hex digits")
			}
			i += 2
		case isAlnum(c) || c == '_':
		default:
			return errors.New("a character not allowed in a variable name")
		}
		prevDot = false
	}
	if prevDot {
		return errors.New("a dot at the start, end or doubled in a variable name")
	}
	return nil
}

// Duration checks RFC 3339 Appendix A's grammar exactly:
//
//	duration = "P" (dur-date / dur-time / dur-week)
//	dur-date = (dur-day / dur-month / dur-year) [dur-time]
//	dur-year = 1*DIGIT "Y" [dur-month]; dur-month = 1*DIGIT "M" [dur-day]; dur-day = 1*DIGIT "D"
//	dur-time = "T" (dur-hour / dur-minute / dur-second)
//	dur-hour = 1*DIGIT "H" [dur-minute]; dur-minute = 1*DIGIT "M" [dur-second]; dur-second = 1*DIGIT "S"
//	dur-week = 1*DIGIT "W"
//
// so units come in order, without gaps (P1Y2D and PT1H5S are not durations), with no
// fractions, and weeks stand alone.
func Duration(s string) error {
	bad := errors.New("not an RFC 3339 duration")
	rest, ok := strings.CutPrefix(s, "P")
	if !ok || rest == "" {
		return bad
	}
	// units in a run must be consecutive in the sequence
	run := func(part, units string) bool {
		if part == "" {
			return false
		}
		next := -1 // index in units of the last unit read
		for part != "" {
			j := 0
			for j < len(part) && isDigit(part[j]) {
				j++
			}
			if j == 0 || j == len(part) {
				return false
			}
			u := strings.IndexByte(units, part[j])
			if u < 0 || next >= 0 && u != next+1 {
				return false
			}
			next = u
			part = part[j+1:]
		}
		return true
	}
	date, tm, hasT := strings.Cut(rest, "T")
	if hasT && !run(tm, "HMS") {
		return bad
	}
	if date == "" {
		if !hasT {
			return bad
		}
		return nil
	}
	if strings.HasSuffix(date, "W") {
		if hasT || !run(date, "W") {
			return bad
		}
		return nil
	}
	if !run(date, "YMD") {
		return bad
	}
	return nil
}
