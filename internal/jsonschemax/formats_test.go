package jsonschemax

import (
	"strings"
	"testing"
)

// Each case is an example from the format's RFC (or a value its grammar plainly
// allows or forbids), in both directions.
func TestFormats(t *testing.T) {
	t.Parallel()
	type tc struct {
		in    string
		valid bool
	}
	long := strings.Repeat("a", 63)
	cases := map[string][]tc{
		"hostname": {
			{"example.com", true}, {"a", true}, {"3com.com", true}, // RFC 1123 §2.1: a label may start with a digit
			{"1.2.3.4a", true}, {"xn--bcher-kva.example", true}, {"a-b.c", true}, {"example.com.", false}, {"1.2.3.4", false},
			{"ab--c.com", false}, {"xn--abc-.com", false}, {"xn--X", false},
			{long + ".com", true}, {strings.Repeat(long+".", 3) + strings.Repeat("a", 61), true},
			{"", false}, {".", false}, {".example.com", false}, {"example..com", false},
			{"-a.com", false}, {"a-.com", false}, {"a_b.com", false}, {"a b", false}, {"ex\u00e4mple.com", false},
			{long + "a.com", false}, {strings.Repeat(long+".", 3) + strings.Repeat("a", 62), false},
		},
		"email": {
			{"user@example.com", true}, {"first.last@example.com", true}, {"a+tag@b.co", true},
			{`"john doe"@example.com`, true}, {`"a\"b"@example.com`, true}, {"user@[192.0.2.1]", true},
			{"user@[IPv6:2001:db8::1]", true}, {"!#$%&'*+-/=?^_`{|}~@example.com", true},
			{"@example.com", false}, {"user@", false}, {"user", false}, {".user@example.com", false},
			{"user.@example.com", false}, {"us..er@example.com", false}, {"us er@example.com", false},
			{"user@-example.com", false}, {"user@[300.0.0.1]", false}, {"user@[IPv6:zz]", false},
			{"j\u00f6rg@example.com", false}, {strings.Repeat("a", 65) + "@example.com", false},
		},
		"uri": {
			// RFC 3986 §1.1.2 examples
			{"ftp://ftp.is.co.za/rfc/rfc1808.txt", true}, {"http://www.ietf.org/rfc/rfc2396.txt", true},
			{"ldap://[2001:db8::7]/c=GB?objectClass?one", true}, {"mailto:John.Doe@example.com", true},
			{"news:comp.infosystems.www.servers.unix", true}, {"tel:+1-816-555-1212", true},
			{"telnet://192.0.2.16:80/", true}, {"urn:oasis:names:specification:docbook:dtd:xml:4.1.2", true},
			{"foo://example.com:8042/over/there?name=ferret#nose", true}, {"http://a/b%20c", true},
			{"http://[v7.fe80::a]/", true}, {"http://user:pw@host:8080/p?q=1&r=[x]#f", false},
			{"http://a/b c", false}, {`http://a/"b"`, false}, {"http://a/<b>", false}, {`http://a/b\c`, false},
			{"http://a/b^c", false}, {"http://a/b`c", false}, {"http://a/{b}", false}, {"http://a/b|c", false},
			{"http://a/\u00e9", false}, {"/relative", false}, {"//host/p", false}, {"1http://a", false},
			{"http://a/%zz", false}, {"http://[::1%25eth0]/", false}, {"http://a:b:c/", false},
		},
		"uri-reference": {
			{"/relative", true}, {"//host/p", true}, {"../a/b", true}, {"?q", true}, {"#f", true}, {"", true},
			{"g;x=1/../y", true}, {"http://a/b", true},
			{"a b", false}, {`\\host\share`, false}, {"a:b c", false}, {"1a:b", false}, {"/\u00e9", false}, {"#a#b", false},
		},
		"iri": {
			{"http://example.com/\u00e9t\u00e9", true}, {"http://r\u00e9sum\u00e9.example.org", true},
			{"http://example.com/?q=\ue000", true}, {"http://example.com/a", true},
			{"http://example.com/\ue000", false}, {"http://example.com/a b", false}, {"/\u00e9", false},
		},
		"iri-reference": {
			{"/\u00e9t\u00e9", true}, {"#\u00e9", true}, {"\u00e9", true}, {"a b", false}, {"/<", false},
		},
		"uri-template": {
			// RFC 6570 §1.2 and §3.2 examples: every level and operator, prefix and explode
			{"http://example.com/~{username}/", true}, {"http://example.com/dictionary/{term:1}/{term}", true},
			{"http://example.com/search{?q,lang}", true}, {"{var}", true}, {"{+path}/here", true},
			{"here?ref={+path}", true}, {"X{#var}", true}, {"X{.x,y}", true}, {"{/var:1,var}", true},
			{"{;x,y,empty}", true}, {"{?x,y,undef}", true}, {"?fixed=yes{&x}", true}, {"{/list*,path:4}", true},
			{"{var:30}", true}, {"{keys*}", true}, {"{a.b}", true}, {"{a%20b}", true}, {"plain", true}, {"", true},
			{"{var:9999}", true},
			{"{", false}, {"}", false}, {"{}", false}, {"{var", false}, {"{{var}}", false}, {"{=var}", false},
			{"{!var}", false}, {"{@var}", false}, {"{|var}", false}, {"{,var}", false}, {"{var:0}", false},
			{"{var:10000}", false}, {"{var:}", false}, {"{var**}", false}, {"{var*:3}", false}, {"{.a.}", false},
			{"{a..b}", false}, {"{a-b}", false}, {"a b", false}, {"a<b", false}, {`a"b`, false}, {"a|b", false},
			{"{var}{", false},
		},
		"duration": {
			// RFC 3339 Appendix A
			{"P1Y", true}, {"P1M", true}, {"P1D", true}, {"P1W", true}, {"PT1H", true}, {"PT1M", true},
			{"PT1S", true}, {"P1Y2M3DT4H5M6S", true}, {"P1Y2M", true}, {"P2M3D", true}, {"PT4H5M", true},
			{"PT5M6S", true}, {"P3DT4H", true}, {"P0D", true}, {"PT36H", true},
			{"", false}, {"P", false}, {"PT", false}, {"P1", false}, {"1D", false}, {"P1YT", false},
			{"P1Y2D", false}, {"PT1H5S", false}, {"P2D1Y", false}, {"PT1D", false}, {"P1W2D", false},
			{"P1Y2W", false}, {"P1WT1H", false}, {"P1.5D", false}, {"PT0.5S", false}, {"P\u0661D", false},
			{"p1d", false}, {"P1DT", false},
		},
	}
	checks := map[string]func(string) error{
		"hostname": Hostname, "email": Email, "uri": URI, "uri-reference": URIReference, "iri": IRI,
		"iri-reference": IRIReference, "uri-template": URITemplate, "duration": Duration,
	}
	for name, list := range cases {
		for _, c := range list {
			err := checks[name](c.in)
			if (err == nil) != c.valid {
				t.Errorf("%s %q: valid = %v, want %v (%v)", name, c.in, err == nil, c.valid, err)
			}
		}
	}
	if len(Formats()) != len(FormatNames) {
		t.Fatalf("Formats and FormatNames disagree")
	}
}
