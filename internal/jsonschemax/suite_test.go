package jsonschemax

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The JSON-Schema-Test-Suite's optional format and ECMA-262 regex files decide what a
// validator that asserts formats accepts. The cases below restate, as (schema, value,
// valid) triples, the string cases of the files for the formats this package defines
// or repairs (hostname, ipv4, uri-template, regex) and of optional/ecmascript-regex.json,
// run through a compiler configured as the gateway configures its own. With
// TOOLGATE_JSON_SCHEMA_TEST_SUITE set to a checkout of the suite, TestSuiteFiles runs
// the files themselves, for every format toolgate asserts.

type suiteCase struct {
	schema string // a JSON schema
	data   any
	valid  bool
}

func fmtCases(format string, valid []string, invalid []string) []suiteCase {
	var out []suiteCase
	s := `{"format":"` + format + `"}`
	for _, v := range valid {
		out = append(out, suiteCase{s, v, true})
	}
	for _, v := range invalid {
		out = append(out, suiteCase{s, v, false})
	}
	return out
}

func patCases(pattern string, valid []string, invalid []string) []suiteCase {
	b, _ := json.Marshal(map[string]any{"pattern": pattern})
	var out []suiteCase
	for _, v := range valid {
		out = append(out, suiteCase{string(b), v, true})
	}
	for _, v := range invalid {
		out = append(out, suiteCase{string(b), v, false})
	}
	return out
}

func propCases(pattern string, valid []string, invalid []string) []suiteCase {
	b, _ := json.Marshal(map[string]any{"type": "object", "patternProperties": map[string]any{pattern: true}, "additionalProperties": false})
	var out []suiteCase
	for _, v := range valid {
		out = append(out, suiteCase{string(b), map[string]any{v: "x"}, true})
	}
	for _, v := range invalid {
		out = append(out, suiteCase{string(b), map[string]any{v: "x"}, false})
	}
	return out
}

func suiteCases() map[string][]suiteCase {
	const ecole = "l'ecole"
	accented := "l'\u00e9cole"
	upper := "L'\u00c9COLE"
	regexFormat := fmtCases("regex",
		[]string{`([abc])+\s+$`, ``, `a|b`, `a{2,3}`, `[^a-z]`, `a+?`, `(?<name>x)`, `(?<n>a)\k<n>`, `(?<=a+)b`, `[]`, `[^]`, `\cA`},
		[]string{`^(abc]`, `*a`, `[z-a]`, `\`, `a)`, `[abc`, `\a`, `(?P<name>x)`, `(?P<n>a)(?P=n)`, `(?#comment)a`, `(?i)abc`, `(?ims)abc`})
	var ecma []suiteCase
	for _, c := range [][]any{
		{`^abc$`, []string{"abc"}, []string{"abc\n"}},
		{`^\t$`, []string{"\t"}, []string{`\t`}},
		{`^\cC$`, []string{"\x03"}, []string{`\cC`}},
		{`^\cc$`, []string{"\x03"}, []string{`\cc`}},
		{`^\d$`, []string{"0"}, []string{"\u07c0"}},
		{`^\D$`, []string{"\u07c0"}, []string{"0"}},
		{`^\w$`, []string{"a"}, []string{"\u00e9"}},
		{`^\W$`, []string{"\u00e9"}, []string{"a"}},
		{`^\s$`, []string{" ", "\t", "\v", "\f", "\u00a0", "\ufeff", "\n", "\u2029", "\u2003"}, []string{"\x01", "\u2013"}},
		{`^\S$`, []string{"\x01", "\u2013"}, []string{" ", "\t", "\v", "\f", "\u00a0", "\ufeff", "\n", "\u2029", "\u2003"}},
		{`\p{Letter}cole`, []string{ecole, accented}, []string{upper}},
		{`\wcole`, []string{ecole}, []string{accented, upper}},
		{`[a-z]cole`, []string{ecole}, []string{accented}},
		{`^\d+$`, []string{"42"}, []string{"-%#", "\u09ea\u09e8"}},
		{`^\p{digit}+$`, []string{"42", "\u09ea\u09e8"}, []string{"-%#"}},
	} {
		ecma = append(ecma, patCases(c[0].(string), c[1].([]string), c[2].([]string))...)
	}
	for _, c := range [][]any{
		{`\p{Letter}cole`, []string{ecole, accented}, []string{upper}},
		{`\wcole`, []string{ecole}, []string{accented, upper}},
		{`[a-z]cole`, []string{ecole}, []string{accented}},
		{`^\d+$`, []string{"42"}, []string{"-%#", "\u09ea\u09e8"}},
		{`^\p{digit}+$`, []string{"42", "\u09ea\u09e8"}, []string{"-%#"}},
	} {
		ecma = append(ecma, propCases(c[0].(string), c[1].([]string), c[2].([]string))...)
	}
	// \a as a pattern of a schema, checked by the meta-schema's format "regex"
	ecma = append(ecma, suiteCase{`{"$ref":"https://json-schema.org/draft/2020-12/schema"}`, map[string]any{"pattern": `\a`}, false})
	long := "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijk"
	return map[string][]suiteCase{
		"format/hostname": fmtCases("hostname",
			[]string{"www.example.com", "xn--4gbwdl.xn--wgbh1c", "hostname", "h0stn4me", "1host", "hostnam3", "host-name",
				long + ".com", "123.example.com", "192.168.0.1a", "a192.168.0.1",
				"xn--9n2bp8q.xn--9t4b11yi5a", "xn--zca29lwxobi7a", "xn--qmbc", "xn--ll-0ea", "xn--wva3je", "xn--4dbc5h", "xn--4dbc8h",
				"xn--k8j5u", "xn--bck0j", "xn--vek778f", "xn--ngba1o", "xn--0-gyc", "xn--11b2ezcw70k", "xn--11b2ezcs70k", "xn--ngba5hb2804a"},
			[]string{"-a-host-name-that-starts-with--", "not_a_valid_host_name",
				"a-vvvvvvvvvvvvvvvveeeeeeeeeeeeeeeerrrrrrrrrrrrrrrryyyyyyyyyyyyyyyy-long-host-name-component",
				"-hostname", "hostname-", "_hostname", "hostname_", "host_name", long + "l.com", "", ".", ".example", "example.",
				"example\uff0ecom", "XN--aa---o47jg78q", strings.Repeat(long+".", 4) + "com", "192.168.0.1",
				"xn--X", "xn--07jt112bpxg.xn--9t4b11yi5a", "xn--hello-txk", "xn--hello-zed", "xn--hello-6bf", "xn--chb89f",
				"xn--07jceefgh4c", "xn--al-0ea", "xn--l-fda", "xn--la-0ea", "xn--l-gda", "xn--S-jib3p", "xn--wva3j", "xn--A-2hc5h",
				"xn--5db1e", "xn--A-2hc8h", "xn--5db3e", "xn--defabc-k64e", "xn--vek", "xn--ngb6iyr", "xn--11b2er09f", "xn--02b508i"}),
		"format/ipv4": fmtCases("ipv4",
			[]string{"192.168.0.1", "087.10.0.1", "87.10.0.1", "192.168.0.01", "0.0.0.0", "255.255.255.255"},
			[]string{"127.0.0.0.1", "256.256.256.256", "127.0", "0x7f000001", "2130706433", "1\u09e87.0.0.1", "192.168.1.0/24",
				" 192.168.0.1", "192.168.0.1 ", "192.168.0.1\n", "0x7f.0.0.1", "0o10.0.0.1", "192.168..1", ".192.168.0.1",
				"192.168.0.1.", "", "+1.2.3.4", "-1.2.3.4", "1e2.0.0.1", "192.168.a.1", "192. 168.0.1", "192.168.0.1\t",
				"192.168.0.1:80", "192.168.0.256"}),
		"format/uri-template": fmtCases("uri-template",
			[]string{"http://example.com/dictionary/{term:1}/{term}", "http://example.com/dictionary", "dictionary/{term:1}/{term}",
				"", "a%41b", "a\U0001F600b", "{+var}", "{#var}", "{.var}", "{/var}", "{;var}", "{?var}", "{&var}", "{var*}",
				"{x,y}", "{a.b}", "{%41}", "{v:1000}", "a'b"},
			[]string{"http://example.com/dictionary/{term:1}/{term", "{}", "{a,,b}", "{v:0}", "{v:10000}", "foo}bar", "{a..b}",
				"{v:01}", "a b", "a\x7fb", "{a,}", "{var=def}", "{,+var}"}),
		"format/regex":              regexFormat,
		"optional/ecmascript-regex": ecma,
	}
}

func compileSuiteSchema(t *testing.T, schema string) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	ConfigureDocument(c, doc)
	if err := c.AddResource("urn:suite", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("urn:suite")
	if err != nil {
		t.Fatalf("%s: %v", schema, err)
	}
	return s
}

func suiteValid(s *jsonschema.Schema, v any) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return s.Validate(v) == nil
}

// TestSuiteCases runs the restated cases and prints the table; every case must pass.
func TestSuiteCases(t *testing.T) {
	t.Parallel()
	cases := suiteCases()
	names := make([]string, 0, len(cases))
	for n := range cases {
		names = append(names, n)
	}
	sort.Strings(names)
	var table strings.Builder
	fmt.Fprintf(&table, "%-28s %6s %6s %8s\n", "file", "cases", "pass", "percent")
	total, passed := 0, 0
	for _, n := range names {
		pass := 0
		for _, c := range cases[n] {
			if suiteValid(compileSuiteSchema(t, c.schema), c.data) == c.valid {
				pass++
			} else {
				t.Errorf("%s: %s with %q: want valid=%v", n, c.schema, c.data, c.valid)
			}
		}
		total += len(cases[n])
		passed += pass
		fmt.Fprintf(&table, "%-28s %6d %6d %7.1f%%\n", n, len(cases[n]), pass, 100*float64(pass)/float64(len(cases[n])))
	}
	fmt.Fprintf(&table, "%-28s %6d %6d %7.1f%%\n", "total", total, passed, 100*float64(passed)/float64(total))
	t.Logf("JSON-Schema-Test-Suite cases (restated):\n%s", table.String())
	if total < 200 {
		t.Fatalf("only %d cases", total)
	}
}

// assertedFormatFiles are the suite's optional/format files of the formats toolgate
// asserts.
var assertedFormatFiles = []string{"date-time", "date", "time", "duration", "email", "hostname", "ipv4", "ipv6", "uri",
	"uri-reference", "iri", "iri-reference", "uri-template", "uuid", "json-pointer", "relative-json-pointer", "regex",
	"ecmascript-regex"}

// TestSuiteFiles runs the suite's own files when TOOLGATE_JSON_SCHEMA_TEST_SUITE names a
// checkout of it (the directory holding tests/), and prints the table.
func TestSuiteFiles(t *testing.T) {
	dir := os.Getenv("TOOLGATE_JSON_SCHEMA_TEST_SUITE")
	if dir == "" {
		t.Skip("TOOLGATE_JSON_SCHEMA_TEST_SUITE is not set (a checkout of the JSON-Schema-Test-Suite)")
	}
	base := filepath.Join(dir, "tests", "draft2020-12", "optional")
	files := []string{filepath.Join(base, "ecmascript-regex.json")}
	for _, f := range assertedFormatFiles {
		files = append(files, filepath.Join(base, "format", f+".json"))
	}
	var table strings.Builder
	fmt.Fprintf(&table, "%-28s %6s %6s %8s\n", "file", "cases", "pass", "percent")
	total, passed := 0, 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Logf("%s: %v", f, err)
			continue
		}
		var groups []struct {
			Description string          `json:"description"`
			Schema      json.RawMessage `json:"schema"`
			Tests       []struct {
				Description string          `json:"description"`
				Data        json.RawMessage `json:"data"`
				Valid       bool            `json:"valid"`
			} `json:"tests"`
		}
		if err := json.Unmarshal(data, &groups); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		n, pass := 0, 0
		for _, g := range groups {
			s := compileSuiteSchema(t, string(g.Schema))
			for _, c := range g.Tests {
				v, err := jsonschema.UnmarshalJSON(bytes.NewReader(c.Data))
				if err != nil {
					t.Fatal(err)
				}
				n++
				if suiteValid(s, v) == c.Valid {
					pass++
				} else {
					t.Errorf("%s: %s / %s: want valid=%v", filepath.Base(f), g.Description, c.Description, c.Valid)
				}
			}
		}
		rel, _ := filepath.Rel(base, f)
		total += n
		passed += pass
		fmt.Fprintf(&table, "%-28s %6d %6d %7.1f%%\n", strings.TrimSuffix(rel, ".json"), n, pass, 100*float64(pass)/float64(max(n, 1)))
	}
	fmt.Fprintf(&table, "%-28s %6d %6d %7.1f%%\n", "total", total, passed, 100*float64(passed)/float64(max(total, 1)))
	t.Logf("JSON-Schema-Test-Suite (%s):\n%s", dir, table.String())
}
