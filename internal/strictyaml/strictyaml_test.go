package strictyaml

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestSyntaxErrorLines: every syntax error names the line where the mistake is.
func TestSyntaxErrorLines(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, doc string
		line      int
	}{
		{"unclosed flow sequence", "listen: a\nledger: b\nbindings:\n  x:\n    url: [a, b\n    method: GET\n", 5},
		{"over-indented key", "a: 1\nb: 2\n  c: 3\n", 3},
		{"unterminated double quote", "a: 1\nb: \"unterminated\nc: 2\n", 2},
		{"tab indentation", "a: 1\n\tb: 2\n", 2},
		{"unclosed flow mapping", "a: {b: 1\nc: 2\n", 1},
		{"unclosed flow sequence at the end", "owner: a\nrisk_level: low\nconsumers: [a, b\n", 3},
		{"unclosed flow mapping before a key", "owner: a\nconsumers: {a\nrisk_level: low\n", 2},
		{"multi-line flow left open", "keys: [\n  a,\n  b\nc: 1\n", 1},
		{"reserved character", "a: 1\nb: @x\n", 2},
		{"key after a list", "a:\n  - 1\n  b: 2\n", 3},
		{"under-indented key", "listen: x\nbindings:\n  crm.close_ticket:\n    url: http://x\n   method: POST\n", 5},
		{"value continued on an indented line", "listen: x\nbindings:\n  crm.close_ticket:\n    url: http://x\n      method: POST\n", 5},
		{"list then key", "listen: x\nretention: 1h\nbindings:\n  - a\n  b: c\n", 5},
		{"unclosed flow mapping in a list", "listen: x\nauth:\n  keys:\n    - {name: a, key: b\n    - {name: c}\n", 4},
		{"unterminated single quote", "a: 1\nb: 2\nc: 'x\nd: 4\n", 3},
		{"extra closing bracket", "a: 1\nb: [1, 2]]\n", 2},
		{"two colons", "a: 1\nb: c: d\n", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, p := Parse([]byte(tt.doc))
			if p == nil {
				t.Fatal("no problem reported")
			}
			if p.Line != tt.line || !strings.HasPrefix(p.Message, "invalid YAML: ") {
				t.Fatalf("got %s, want line %d", p, tt.line)
			}
		})
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{"", "# only a comment\n", "---\n"} {
		n, p := Parse([]byte(doc))
		if n != nil || p != nil {
			t.Fatalf("%q: node %v, problem %v", doc, n, p)
		}
	}
	_, p := Parse([]byte("a: 1\n---\nb: 2\n"))
	if p == nil || p.Line != 2 || !strings.Contains(p.Message, "second YAML document") {
		t.Fatalf("second document: %v", p)
	}
}

type endpoint struct {
	URL string `yaml:"url"`
}

type binding struct {
	URL      string        `yaml:"url"`
	Timeout  time.Duration `yaml:"timeout"`
	Attempts int           `yaml:"max_attempts"`
	Statuses []int         `yaml:"not_started_statuses"`
	Approval bool          `yaml:"require_approval"`
	Lookup   endpoint      `yaml:"lookup"`
	Rate     float64       `yaml:"rate"`
	Extra    any           `yaml:"extra"`
}

type doc struct {
	Listen   string             `yaml:"listen"`
	Bindings map[string]binding `yaml:"bindings"`
	Keys     []struct {
		Name string `yaml:"name"`
	} `yaml:"keys"`
	When  time.Time `yaml:"when"`
	Label *string   `yaml:"label"`
}

func decode(t *testing.T, src string) (doc, map[string]int, []Problem) {
	t.Helper()
	n, p := Parse([]byte(src))
	if p != nil {
		t.Fatalf("syntax: %v", p)
	}
	var d doc
	lines, problems := Decode(n, &d)
	return d, lines, problems
}

func TestDecode(t *testing.T) {
	t.Parallel()
	d, lines, problems := decode(t, `listen: 127.0.0.1:1
base: &base
  timeout: 2s
  max_attempts: 4
bindings:
  crm.close_ticket:
    <<: *base
    url: http://x/{args.id}
    max_attempts: 5
    not_started_statuses: [502, 503]
    require_approval: true
    lookup: {url: "http://x/k/{downstream_key}"}
    rate: 0.5
    extra: {a: [1, 2]}
keys:
  - name: a
  - name: b
when: 2026-08-11T09:30:00Z
label: hi
`)
	// "base" is unknown: the only problem
	if len(problems) != 1 || problems[0].Path != "base" || problems[0].Line != 2 {
		t.Fatalf("problems %v", problems)
	}
	b := d.Bindings["crm.close_ticket"]
	if d.Listen != "127.0.0.1:1" || b.Timeout != 2*time.Second || b.Attempts != 5 || !b.Approval || len(b.Statuses) != 2 ||
		b.Lookup.URL == "" || b.Rate != 0.5 || b.Extra == nil || len(d.Keys) != 2 || d.Keys[1].Name != "b" ||
		d.When.IsZero() || d.Label == nil || *d.Label != "hi" {
		t.Fatalf("decoded %+v", d)
	}
	for path, line := range map[string]int{"bindings.crm.close_ticket.url": 8, "keys[1]": 17, "keys[1].name": 17, "bindings.crm.close_ticket.lookup.url": 12} {
		if lines[path] != line {
			t.Errorf("line of %s = %d, want %d", path, lines[path], line)
		}
	}
}

func TestDecodeProblems(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, doc, want string
	}{
		{"unknown field with did-you-mean", "bindings:\n  crm.close_ticket:\n    url: http://x\n    timout: 5s\n",
			`line 4: bindings.crm.close_ticket.timout: unknown field; did you mean "timeout"?`},
		{"unknown field without a near name", "zzzzzz: 1\n",
			`line 1: zzzzzz: unknown field (known fields: bindings, keys, label, listen, when)`},
		{"duration without unit", "bindings: {a: {timeout: 5}}\n",
			`line 1: bindings.a.timeout: 5 has no unit: write a number with a unit, such as 500ms, 5s, 15m or 168h (5s for seconds)`},
		{"duration that is a word", "bindings:\n  a:\n    timeout: soon\n",
			`line 3: bindings.a.timeout: "soon" is not a duration: write a number with a unit, such as 500ms, 5s, 15m or 168h`},
		{"key set twice", "listen: a\nlisten: b\n", `line 2: listen: is set twice (first at line 1); remove one`},
		{"bool as a word", "bindings: {a: {require_approval: yes}}\n", `line 1: bindings.a.require_approval: must be true or false, not "yes"`},
		{"int that is a word", "bindings: {a: {max_attempts: three}}\n", `line 1: bindings.a.max_attempts: must be a whole number, not "three"`},
		{"list where a mapping is", "bindings: [a]\n", `line 1: bindings: must be a mapping, not a list`},
		{"mapping where a string is", "listen: {a: 1}\n", `line 1: listen: must be a string, not a mapping`},
		{"list item of the wrong kind", "bindings: {a: {not_started_statuses: [503, x]}}\n", `line 1: bindings.a.not_started_statuses[1]: must be a whole number, not "x"`},
		{"struct in list", "keys:\n  - nme: a\n", `line 2: keys[0].nme: unknown field; did you mean "name"?`},
		{"not a mapping at all", "- a\n", `line 1: must be a mapping of fields, not a list`},
		{"bad time", "when: tomorrow\n", `line 1: when: must be a date and time such as 2026-08-11T09:30:00Z, not "tomorrow"`},
		{"nan rate", "bindings: {a: {rate: .nan}}\n", `line 1: bindings.a.rate: must be a number, not ".nan"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, _, problems := decode(t, tt.doc)
			if len(problems) != 1 || problems[0].String() != tt.want {
				t.Fatalf("problems:\n%v\nwant:\n%s", problems, tt.want)
			}
			if problems[0].Line == 0 {
				t.Fatal("problem without a line")
			}
			for _, goName := range []string{"time.Duration", "strictyaml.", "struct", "int64"} {
				if strings.Contains(problems[0].Message, goName) && !strings.Contains(tt.doc, goName) {
					t.Fatalf("message names a Go type: %s", problems[0].Message)
				}
			}
		})
	}
}

// TestAliasBomb: aliases of aliases cost bounded work and end in a problem, not a hang.
func TestAliasBomb(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("a0: &a0 [[], [], [], [], [], [], [], [], [], []]\n")
	for i := 1; i < 12; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [", i, i)
		for j := 0; j < 10; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*a%d", i-1)
		}
		b.WriteString("]\n")
	}
	n, p := Parse([]byte(b.String()))
	if p != nil {
		t.Fatal(p)
	}
	var d map[string]tree
	_, problems := Decode(n, &d)
	if len(problems) != 1 || !strings.Contains(problems[0].Message, "aliases expand too far") {
		t.Fatalf("problems for an alias bomb: %v", problems)
	}
}

type tree []tree

// TestProblemCap: a document with thousands of mistakes reports a bounded number of them.
func TestProblemCap(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for i := 0; i < 5000; i++ {
		fmt.Fprintf(&b, "k%d: 1\n", i)
	}
	n, _ := Parse([]byte(b.String()))
	var d struct{}
	_, problems := Decode(n, &d)
	if len(problems) != MaxProblems+1 || !strings.Contains(problems[MaxProblems].Message, "more problems") {
		t.Fatalf("%d problems, last %v", len(problems), problems[len(problems)-1])
	}
}

// FuzzDecode: any bytes parse or fail with a problem at a line; decoding never panics and
// every problem names a line.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{"", "listen: a\n", "bindings: {a: {timeout: 5, url: x}}\n", "keys: [{name: a}, {nme: b}]\n",
		"a: &x {b: *x}\n", "<<: {listen: a}\n", "when: 2026-01-01T00:00:00Z\n", "- 1\n- 2\n", "{[: ]}", "bindings:\n  a:\n    lookup: {url: x}\n   state: y\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		n, p := Parse(data)
		if p != nil {
			if p.Line <= 0 || p.Message == "" {
				t.Fatalf("syntax problem without a line: %+v", p)
			}
			return
		}
		var d doc
		_, problems := Decode(n, &d)
		for _, p := range problems {
			if p.Line <= 0 || p.Message == "" {
				t.Fatalf("problem without a line: %+v", p)
			}
		}
	})
}
