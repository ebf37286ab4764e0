// Package strictyaml reads the YAML files toolgate owns (toolgate.yaml, owner.yaml,
// release-policy.yaml, contract cases, rule records, approvals, agents) so that nothing in
// them is silently ignored: an unknown field, a key set twice, a second document or a
// value of the wrong kind is a Problem naming the YAML path, the line and, for a
// misspelled field, the field that was probably meant. Messages never name a Go type.
//
// Parse finds syntax errors; Decode fills a Go value from the parsed node, guided by the
// value's `yaml:"name"` struct tags.
package strictyaml

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	goccy "github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/lexer"
	goccyparser "github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
	"github.com/toolgate/toolgate/internal/suggest"
	"go.yaml.in/yaml/v3"
)

// Problem is one thing wrong with a YAML document.
type Problem struct {
	// Path is the YAML path of the value: "bindings.crm.close_ticket.timeout",
	// "auth.keys[0].name"; "" for the document itself.
	Path string
	// Line is the 1-based line of the key (or of the list item) the problem is about.
	Line    int
	Message string
}

// String is "line N: path: message" (the path left out when empty).
func (p Problem) String() string {
	var b strings.Builder
	if p.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", p.Line)
	}
	if p.Path != "" {
		b.WriteString(p.Path + ": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// Parse reads exactly one YAML document and returns its root node (nil for an empty
// document). A syntax error is reported at the line where the mistake is; a second
// document ("---") is a problem too.
func Parse(data []byte) (*yaml.Node, *Problem) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		p := syntaxProblem(data, err)
		return nil, &p
	}
	var next yaml.Node
	if err := dec.Decode(&next); err == nil {
		return nil, &Problem{Line: next.Line, Message: "a second YAML document starts here; the file holds exactly one"}
	} else if !errors.Is(err, io.EOF) {
		p := syntaxProblem(data, err)
		return nil, &p
	}
	if doc.Kind == yaml.DocumentNode {
		if len(doc.Content) == 0 {
			return nil, nil
		}
		root := doc.Content[0]
		if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
			return nil, nil // a file of comments only
		}
		return root, nil
	}
	return &doc, nil
}

var v3LineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// syntaxProblem turns the YAML library's syntax error into a Problem with the right line.
// go.yaml.in/yaml reports a scanner error (a bad character, an unclosed quote, a value
// where none may start) at its line, but a parser error ("did not find expected key", a
// flow collection left open) at the 0-based line of the enclosing construct, which can be
// many lines away from the mistake. For those the position comes from a second parser
// (github.com/goccy/go-yaml), which reports the token where parsing failed; a flow
// collection left open is reported where its "[" or "{" stands.
func syntaxProblem(data []byte, err error) Problem {
	p := syntaxProblemAt(data, err)
	if line := lineText(data, p.Line); unquotedTemplate.MatchString(line) {
		p.Message += ` (a value with a "{…}" in it, such as a URL template, must be quoted: url: "http://host/items/{downstream_key}")`
	}
	return p
}

// unquotedTemplate finds a URL-template placeholder glued to the text before it
// ("by-key/{downstream_key}"), which YAML reads as the start of a flow mapping.
var unquotedTemplate = regexp.MustCompile(`[^\s"'{\[,:]\{[A-Za-z_][A-Za-z0-9_.]*\}`)

// lineText is the 1-based line n of data ("" past its end).
func lineText(data []byte, n int) string {
	lines := strings.Split(string(data), "\n")
	if n < 1 || n > len(lines) {
		return ""
	}
	return lines[n-1]
}

func syntaxProblemAt(data []byte, err error) Problem {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if m := v3LineRE.FindStringSubmatch(err.Error()); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	if !strings.HasPrefix(msg, "did not find expected") && line > 0 {
		return Problem{Line: line, Message: "invalid YAML: " + msg}
	}
	at, gmsg := goccyPosition(data)
	if at == 0 {
		return Problem{Line: max(line+1, 1), Message: "invalid YAML: " + msg}
	}
	if open := unclosedFlow(data, at); open != nil && (strings.Contains(msg, "']'") || strings.Contains(msg, "'}'")) {
		closer := "]"
		if open.Value == "{" {
			closer = "}"
		}
		return Problem{Line: open.Position.Line, Message: fmt.Sprintf("invalid YAML: the %q opened on this line is not closed (a \",\" or %q was expected by line %d)", open.Value, closer, at)}
	}
	if strings.Contains(gmsg, "not allowed in this context") {
		gmsg += " (check this line's indentation against the lines above)"
	}
	return Problem{Line: at, Message: "invalid YAML: " + gmsg}
}

// goccyPosition parses data with the second parser and returns the line of its syntax
// error and its message; 0 when it finds none.
func goccyPosition(data []byte) (int, string) {
	_, err := goccyparser.ParseBytes(data, 0)
	var ge goccy.Error
	if err == nil || !errors.As(err, &ge) || ge.GetToken() == nil || ge.GetToken().Position == nil {
		return 0, ""
	}
	return ge.GetToken().Position.Line, ge.GetMessage()
}

// unclosedFlow returns the innermost "[" or "{" still open before line, or nil.
func unclosedFlow(data []byte, line int) *token.Token {
	var stack []*token.Token
	for _, t := range lexer.Tokenize(string(data)) {
		if t.Position == nil || t.Position.Line >= line {
			break
		}
		switch t.Type {
		case token.SequenceStartType, token.MappingStartType:
			stack = append(stack, t)
		case token.SequenceEndType, token.MappingEndType:
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		}
	}
	if len(stack) == 0 {
		return nil
	}
	return stack[len(stack)-1]
}

// budget bounds the nodes Decode visits, so that aliases of aliases (a "billion laughs"
// document) cost a bounded amount of work.
const budget = 100_000

type decoder struct {
	problems []Problem
	lines    map[string]int
	visited  int
	over     bool
}

// Decode fills dst (a pointer) from node, checking every key against dst's struct tags and
// every scalar against the field's kind. It returns the line of every path it saw (for
// reporting later, semantic problems at the right line) and every problem; dst is filled
// as far as the document allows. A nil node leaves dst untouched.
func Decode(node *yaml.Node, dst any) (lines map[string]int, problems []Problem) {
	d := &decoder{lines: map[string]int{}}
	rv := reflect.ValueOf(dst)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		panic("strictyaml: Decode needs a non-nil pointer")
	}
	if node != nil {
		d.lines[""] = node.Line
		d.value(node, rv.Elem(), "")
	}
	return d.lines, d.problems
}

// MaxProblems is how many problems Decode reports at most; one more says there are more.
const MaxProblems = 100

func (d *decoder) bad(n *yaml.Node, path, format string, args ...any) {
	if len(d.problems) > MaxProblems {
		return
	}
	if len(d.problems) == MaxProblems {
		d.problems = append(d.problems, Problem{Path: path, Line: n.Line, Message: fmt.Sprintf("more problems follow; fix the first %d and check again", MaxProblems)})
		return
	}
	line := 0
	if n != nil {
		line = n.Line
	}
	d.problems = append(d.problems, Problem{Path: path, Line: line, Message: fmt.Sprintf(format, args...)})
}

var (
	durationType = reflect.TypeFor[time.Duration]()
	timeType     = reflect.TypeFor[time.Time]()
	nodeType     = reflect.TypeFor[yaml.Node]()
)

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

// value decodes n into v.
func (d *decoder) value(n *yaml.Node, v reflect.Value, path string) {
	if d.over {
		return
	}
	if d.visited++; d.visited > budget {
		d.over = true
		d.bad(n, path, "the document is too large or its aliases expand too far (more than %d values)", budget)
		return
	}
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			d.bad(n, path, "unknown alias *%s", n.Value)
			return
		}
		d.value(n.Alias, v, path)
		return
	}
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		d.value(n.Content[0], v, path)
		return
	}
	t := v.Type()
	switch {
	case t == nodeType:
		v.Set(reflect.ValueOf(*n))
		return
	case t.Kind() == reflect.Pointer && t.Elem() == nodeType:
		v.Set(reflect.ValueOf(n))
		return
	case t.Kind() == reflect.Pointer:
		if isNull(n) {
			return
		}
		if v.IsNil() {
			v.Set(reflect.New(t.Elem()))
		}
		d.value(n, v.Elem(), path)
		return
	case t.Kind() == reflect.Interface:
		var x any
		if err := n.Decode(&x); err != nil {
			d.bad(n, path, "cannot be read: %s", cleanDecodeError(err))
			return
		}
		if x != nil {
			v.Set(reflect.ValueOf(x))
		}
		return
	}
	if isNull(n) {
		return // an empty value keeps the default
	}
	switch {
	case t == durationType:
		d.duration(n, v, path)
	case t == timeType:
		d.timestamp(n, v, path)
	case t.Kind() == reflect.Struct:
		d.structure(n, v, path)
	case t.Kind() == reflect.Map:
		d.mapping(n, v, path)
	case t.Kind() == reflect.Slice:
		d.sequence(n, v, path)
	default:
		d.scalar(n, v, path)
	}
}

// pairs returns the key/value pairs of a mapping with merge keys ("<<: *base") resolved:
// explicit keys win over merged ones.
func (d *decoder) pairs(n *yaml.Node, path string) [][2]*yaml.Node {
	var explicit, merged [][2]*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
			srcs := []*yaml.Node{val}
			if resolve(val).Kind == yaml.SequenceNode {
				srcs = resolve(val).Content
			}
			for _, s := range srcs {
				if s = resolve(s); s.Kind != yaml.MappingNode {
					d.bad(k, path, "a merge key (<<) must name a mapping")
					continue
				}
				merged = append(merged, d.pairs(s, path)...)
			}
			continue
		}
		explicit = append(explicit, [2]*yaml.Node{k, val})
	}
	if len(merged) == 0 {
		return explicit
	}
	have := map[string]bool{}
	for _, p := range explicit {
		have[p[0].Value] = true
	}
	out := explicit
	for _, p := range merged {
		if !have[p[0].Value] {
			have[p[0].Value] = true
			out = append(out, p)
		}
	}
	return out
}

func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < 100; i++ {
		n = n.Alias
	}
	return n
}

// keyOf checks a mapping key: a plain scalar, set once.
func (d *decoder) keyOf(k *yaml.Node, path string, seen map[string]int) (string, bool) {
	k = resolve(k)
	if k.Kind != yaml.ScalarNode {
		d.bad(k, path, "a key must be a plain name, not a list or mapping")
		return "", false
	}
	if first, dup := seen[k.Value]; dup {
		d.bad(k, join(path, k.Value), "is set twice (first at line %d); remove one", first)
		return "", false
	}
	seen[k.Value] = k.Line
	return k.Value, true
}

// LineOf returns the line Decode recorded for a YAML path, or for its nearest ancestor
// (the document's line for a path with none); 0 when lines is empty. Map keys may contain
// dots ("bindings.crm.close_ticket"), so ancestors are tried by every "." and "[".
func LineOf(lines map[string]int, path string) int {
	for {
		if l, ok := lines[path]; ok {
			return l
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			return lines[""]
		}
		path = path[:i]
	}
}

// join appends a mapping key to a path.
func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

type field struct {
	name  string
	index []int
}

// fieldsOf lists the YAML names of a struct's fields (yaml tag, else the lowercased name).
func fieldsOf(t reflect.Type) []field {
	var out []field
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("yaml")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out = append(out, field{name, f.Index})
	}
	return out
}

func (d *decoder) structure(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.bad(n, path, "must be a mapping of fields, not %s", describe(n))
		return
	}
	fields := fieldsOf(v.Type())
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.name
	}
	d.eachKey(n, path, func(name, fpath string, k, val *yaml.Node) {
		var target *field
		for i := range fields {
			if fields[i].name == name {
				target = &fields[i]
				break
			}
		}
		if target == nil {
			d.bad(k, fpath, "%s", UnknownField(name, names))
			return
		}
		d.value(val, v.FieldByIndex(target.index), fpath)
	})
}

// eachKey calls each for every key of a mapping (merge keys resolved, a key set twice
// reported and skipped) with its path, after recording the line of that path.
func (d *decoder) eachKey(n *yaml.Node, path string, each func(name, kpath string, k, v *yaml.Node)) {
	seen := map[string]int{}
	for _, p := range d.pairs(n, path) {
		name, ok := d.keyOf(p[0], path, seen)
		if !ok {
			continue
		}
		kpath := join(path, name)
		d.lines[kpath] = p[0].Line
		each(name, kpath, p[0], p[1])
	}
}

// UnknownField is the message for a field, reported at its path, that is not one of
// known: a did-you-mean when a known field is close, else the list of known fields.
func UnknownField(name string, known []string) string {
	if s := suggest.Nearest(name, known, 2); len(s) > 0 {
		return "unknown field; " + suggest.DidYouMean(s...)
	}
	sorted := append([]string(nil), known...)
	sort.Strings(sorted)
	return "unknown field (known fields: " + strings.Join(sorted, ", ") + ")"
}

func (d *decoder) mapping(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.bad(n, path, "must be a mapping, not %s", describe(n))
		return
	}
	t := v.Type()
	if t.Key().Kind() != reflect.String {
		panic("strictyaml: only maps with string keys are supported")
	}
	if v.IsNil() {
		v.Set(reflect.MakeMap(t))
	}
	d.eachKey(n, path, func(name, kpath string, _, val *yaml.Node) {
		key := reflect.ValueOf(name).Convert(t.Key())
		elem := reflect.New(t.Elem()).Elem()
		if old := v.MapIndex(key); old.IsValid() {
			elem.Set(old)
		}
		d.value(val, elem, kpath)
		v.SetMapIndex(key, elem)
	})
}

func (d *decoder) sequence(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.SequenceNode {
		d.bad(n, path, "must be a list, not %s", describe(n))
		return
	}
	out := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, c := range n.Content {
		ipath := fmt.Sprintf("%s[%d]", path, i)
		d.lines[ipath] = c.Line
		d.value(c, out.Index(i), ipath)
	}
	v.Set(out)
}

func (d *decoder) scalar(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.ScalarNode {
		d.bad(n, path, "must be %s, not %s", kindWord(v.Type()), describe(n))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(n.Value)
	case reflect.Bool:
		switch {
		case n.Tag == "!!bool" && (n.Value == "true" || n.Value == "True" || n.Value == "TRUE"):
			v.SetBool(true)
		case n.Tag == "!!bool":
			v.SetBool(false)
		default:
			d.bad(n, path, "must be true or false, not %q", n.Value)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		i, err := strconv.ParseInt(strings.ReplaceAll(n.Value, "_", ""), 0, v.Type().Bits())
		if n.Tag != "!!int" || err != nil {
			if n.Tag == "!!int" {
				d.bad(n, path, "%s is out of range", n.Value)
			} else {
				d.bad(n, path, "must be a whole number, not %q", n.Value)
			}
			return
		}
		v.SetInt(i)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		u, err := strconv.ParseUint(strings.ReplaceAll(n.Value, "_", ""), 0, v.Type().Bits())
		if n.Tag != "!!int" || err != nil {
			d.bad(n, path, "must be a whole number of at least 0, not %q", n.Value)
			return
		}
		v.SetUint(u)
	case reflect.Float32, reflect.Float64:
		f, err := strconv.ParseFloat(n.Value, 64)
		if (n.Tag != "!!int" && n.Tag != "!!float") || err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			d.bad(n, path, "must be a number, not %q", n.Value)
			return
		}
		v.SetFloat(f)
	default:
		panic("strictyaml: unsupported field kind " + v.Kind().String())
	}
}

// DurationHint says how to write a duration; every duration problem ends with it.
const DurationHint = "write a number with a unit, such as 500ms, 5s, 15m or 168h"

func (d *decoder) duration(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.ScalarNode {
		d.bad(n, path, "must be a duration (%s), not %s", DurationHint, describe(n))
		return
	}
	s := strings.TrimSpace(n.Value)
	if s == "0" {
		v.SetInt(0)
		return
	}
	dur, err := time.ParseDuration(s)
	if err != nil {
		if n.Tag == "!!int" || n.Tag == "!!float" {
			d.bad(n, path, "%s has no unit: %s (%ss for seconds)", s, DurationHint, s)
		} else {
			d.bad(n, path, "%q is not a duration: %s", s, DurationHint)
		}
		return
	}
	v.SetInt(int64(dur))
}

func (d *decoder) timestamp(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind == yaml.ScalarNode {
		var t time.Time
		if n.Decode(&t) == nil && !t.IsZero() {
			v.Set(reflect.ValueOf(t))
			return
		}
		if t, err := time.Parse(time.RFC3339, n.Value); err == nil {
			v.Set(reflect.ValueOf(t))
			return
		}
	}
	d.bad(n, path, "must be a date and time such as 2026-08-11T09:30:00Z, not %s", describe(n))
}

// describe names what a node is, for "must be X, not Y".
func describe(n *yaml.Node) string {
	n = resolve(n)
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	switch n.Tag {
	case "!!null":
		return "empty"
	case "!!bool":
		return "true/false"
	case "!!int", "!!float":
		return "the number " + n.Value
	}
	return strconv.Quote(n.Value)
}

func kindWord(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "a whole number"
}

var goTypeRE = regexp.MustCompile(`into [\w.\[\]*]+`)

// cleanDecodeError strips Go type names from the YAML library's decode errors.
func cleanDecodeError(err error) string {
	s := strings.TrimPrefix(err.Error(), "yaml: ")
	s = strings.TrimPrefix(s, "unmarshal errors:\n")
	s = goTypeRE.ReplaceAllString(s, "here")
	return strings.Join(strings.Fields(s), " ")
}
