package importer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/toolgate/toolgate/internal/textsafe"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Snippet is the bindings: section for the imported tools, as YAML. Every
// byte of it comes from the YAML encoder, never from joining strings: each
// string is a double-quoted scalar (so a line break, NEL or U+2028 in a
// name the document chose is an escape inside its quotes, never the start
// of a key of its own), and what a terminal would not show as itself (a
// bidi override, a zero-width or other format character) is escaped there
// too (Visible). The comments that say what to add by hand have the same
// characters escaped. Before it is returned the snippet is parsed back and
// compared with the bindings it was made from: an error, never a snippet
// that would configure anything else.
func Snippet(tools []Tool) (string, error) {
	sorted := append([]Tool(nil), tools...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].ID < sorted[j].ID })
	bindings := &yaml.Node{Kind: yaml.MappingNode}
	want := map[string]any{}
	for _, t := range sorted {
		b := map[string]any{}
		for k, v := range t.Binding {
			if !strings.HasPrefix(k, "#") {
				b[k] = v
			}
		}
		v := nodeOf(b)
		if c, ok := t.Binding["#"].(string); ok && len(v.Content) > 0 {
			lines := strings.Split(c, "\n")
			for i, l := range lines {
				lines[i] = "# " + Visible(l)
			}
			v.Content[len(v.Content)-2].FootComment = strings.Join(lines, "\n")
		}
		bindings.Content = append(bindings.Content, key(t.ID), v)
		want[t.ID] = b
	}
	root := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{key("bindings"), bindings}}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		return "", fmt.Errorf("the bindings cannot be written as YAML: %w", err)
	}
	if err := enc.Close(); err != nil {
		return "", err
	}
	out := escapeHidden(buf.String())
	if err := sameYAML(out, map[string]any{"bindings": want}); err != nil {
		return "", err
	}
	return out, nil
}

// sameYAML parses text back and compares it with want.
func sameYAML(text string, want any) error {
	var got any
	if err := yaml.Unmarshal([]byte(text), &got); err != nil {
		return fmt.Errorf("the bindings written do not parse back (%v): nothing is printed", err)
	}
	gj, err1 := json.Marshal(got)
	wj, err2 := json.Marshal(want)
	if err1 != nil || err2 != nil || !bytes.Equal(gj, wj) {
		return fmt.Errorf("the bindings written do not read back as the bindings imported: nothing is printed")
	}
	return nil
}

// str is a string as a double-quoted scalar.
func str(s string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Style: yaml.DoubleQuotedStyle, Value: s}
}

// plainKey matches the keys written without quotes: letters, digits, "_",
// "." and "-", starting with a letter, and no word YAML reads as anything
// but a string.
var plainKey = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.-]*$`)

// key is a mapping key: plain when plainKey matches, else double-quoted.
func key(s string) *yaml.Node {
	n := str(s)
	switch strings.ToLower(s) {
	case "y", "n", "yes", "no", "on", "off", "true", "false", "null":
	default:
		if plainKey.MatchString(s) {
			n.Style = 0
		}
	}
	return n
}

// nodeOf is a JSON-like value as YAML nodes: maps in key order, strings
// double-quoted.
func nodeOf(v any) *yaml.Node {
	switch x := v.(type) {
	case map[string]any:
		n := &yaml.Node{Kind: yaml.MappingNode}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			n.Content = append(n.Content, key(k), nodeOf(x[k]))
		}
		return n
	case []any:
		n := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
		for _, e := range x {
			n.Content = append(n.Content, nodeOf(e))
		}
		return n
	case []string:
		return nodeOf(toAny(x))
	case string:
		return str(x)
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(x)}
	case nil:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
	}
	b, _ := json.Marshal(v)
	return &yaml.Node{Kind: yaml.ScalarNode, Value: string(b)}
}

// hidden reports a character a terminal would not show as itself: a
// control, a line or paragraph separator, a format character (bidi
// overrides and isolates, zero-width ones) or any other non-printing one.
func hidden(r rune) bool { return textsafe.Hidden(r) }

// escapeHidden escapes, in YAML's double-quoted syntax, each hidden
// character the encoder left as it is; Snippet writes every string double-
// quoted, so each such character stands inside quotes, where the escape
// reads back as the character. A line break between lines is kept.
func escapeHidden(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r == '\n' || !hidden(r) {
			b.WriteRune(r)
			continue
		}
		b.WriteString(yamlEscape(r))
	}
	return b.String()
}

func yamlEscape(r rune) string {
	switch {
	case r <= 0xff:
		return fmt.Sprintf(`\x%02X`, r)
	case r <= 0xffff:
		return fmt.Sprintf(`\u%04X`, r)
	}
	return fmt.Sprintf(`\U%08X`, r)
}

// Visible is s with every character a terminal would not show as itself
// (controls, line separators, bidi and zero-width format characters, bytes
// that are not UTF-8) escaped as \xNN, \uNNNN or \UNNNNNNNN, and a
// backslash doubled, so what is shown is unambiguous; the rest as is. The
// import shows names and reasons a document chose through it.
func Visible(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			fmt.Fprintf(&b, `\x%02X`, s[i])
		case r == '\\':
			b.WriteString(`\\`)
		case hidden(r):
			b.WriteString(yamlEscape(r))
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
