package contract

import (
	"encoding/json"
	"errors"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// yamlFile is one YAML document being read, reporting problems with line numbers.
type yamlFile struct {
	l    *loader
	path string
}

// parse reads the file into its top-level mapping node; nil (with a problem) when it is
// not a YAML mapping. ok=false without a problem when the file does not exist.
func (y yamlFile) parse() (root *yaml.Node, exists bool) {
	b, err := y.l.readFile(y.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false
	}
	if err != nil {
		y.l.add(y.path, 0, "cannot read: %v", unwrapPath(err))
		return nil, true
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		line := 0
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		if rest, ok := strings.CutPrefix(msg, "line "); ok {
			if i := strings.Index(rest, ":"); i > 0 {
				line, _ = strconv.Atoi(rest[:i])
				msg = strings.TrimSpace(rest[i+1:])
				line += yamlParserLineFix(msg)
			}
		}
		y.l.add(y.path, line, "invalid YAML: %s", msg)
		return nil, true
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		y.l.add(y.path, doc.Line, "must be a YAML mapping")
		return nil, true
	}
	return doc.Content[0], true
}

// yamlParserLineFix corrects the YAML library's line for parser (not scanner) errors,
// which it reports 0-based.
func yamlParserLineFix(msg string) int {
	for _, m := range []string{
		"did not find expected key", "did not find expected '-' indicator",
		"did not find expected ',' or ']'", "did not find expected ',' or '}'",
		"did not find expected node content", "did not find expected <document start>",
	} {
		if strings.HasPrefix(msg, m) {
			return 1
		}
	}
	return 0
}

func (y yamlFile) bad(n *yaml.Node, format string, args ...any) {
	line := 0
	if n != nil {
		line = n.Line
	}
	y.l.add(y.path, line, format, args...)
}

// fields returns the mapping's key→value nodes and reports keys not in known.
func (y yamlFile) fields(m *yaml.Node, known ...string) map[string]*yaml.Node {
	out := map[string]*yaml.Node{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k := m.Content[i]
		out[k.Value] = m.Content[i+1]
		if known != nil && !contains(known, k.Value) {
			y.bad(k, "unknown field %q (expected one of %s)", k.Value, strings.Join(known, ", "))
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (y yamlFile) str(n *yaml.Node, key string) string {
	if n == nil || n.Tag == "!!null" {
		return ""
	}
	if n.Kind != yaml.ScalarNode {
		y.bad(n, "%s must be a string", key)
		return ""
	}
	return n.Value
}

func (y yamlFile) strs(n *yaml.Node, key string) []string {
	if n == nil || n.Tag == "!!null" {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		y.bad(n, "%s must be a list of strings", key)
		return nil
	}
	out := make([]string, 0, len(n.Content))
	for _, c := range n.Content {
		out = append(out, y.str(c, key+" item"))
	}
	return out
}

func (y yamlFile) float(n *yaml.Node, key string) float64 {
	if n == nil || n.Tag == "!!null" {
		return 0
	}
	f, err := strconv.ParseFloat(n.Value, 64)
	if n.Kind != yaml.ScalarNode || err != nil {
		y.bad(n, "%s must be a number", key)
	}
	return f
}

func (y yamlFile) boolean(n *yaml.Node, key string) bool {
	if n == nil || n.Tag == "!!null" {
		return false
	}
	var b bool
	if n.Kind != yaml.ScalarNode || n.Decode(&b) != nil {
		y.bad(n, "%s must be true or false", key)
	}
	return b
}

// jsonOf converts a YAML value into JSON; null for a missing node.
func (y yamlFile) jsonOf(n *yaml.Node, key string) json.RawMessage {
	if n == nil {
		return json.RawMessage("null")
	}
	var v any
	if err := n.Decode(&v); err != nil {
		y.bad(n, "%s: %v", key, err)
		return json.RawMessage("null")
	}
	b, err := json.Marshal(v)
	if err != nil {
		y.bad(n, "%s cannot be expressed as JSON: %v", key, err)
		return json.RawMessage("null")
	}
	return b
}

func (l *loader) loadOwner(t *Tool) {
	y := yamlFile{l, filepath.Join(t.Dir, "owner.yaml")}
	root, exists := y.parse()
	if !exists {
		return
	}
	t.Owner.File = y.path
	if root == nil {
		return
	}
	f := y.fields(root, "owner", "risk_level", "consumers")
	t.Owner.Owner = y.str(f["owner"], "owner")
	t.Owner.RiskLevel = y.str(f["risk_level"], "risk_level")
	t.Owner.Consumers = y.strs(f["consumers"], "consumers")
	if r := t.Owner.RiskLevel; r != "" && r != "low" && r != "medium" && r != "high" {
		y.bad(f["risk_level"], "risk_level must be low, medium or high, not %q", r)
	}
}

func (l *loader) loadPolicy(t *Tool) {
	y := yamlFile{l, filepath.Join(t.Dir, "release-policy.yaml")}
	root, exists := y.parse()
	if !exists {
		return
	}
	t.Policy.File = y.path
	if root == nil {
		return
	}
	f := y.fields(root, "compatible_with", "deprecated_versions", "deprecation_window_days", "gate")
	p := &t.Policy
	p.CompatibleWith = y.strs(f["compatible_with"], "compatible_with")
	p.DeprecatedVersions = y.strs(f["deprecated_versions"], "deprecated_versions")
	p.DeprecationWindowDays = int(y.float(f["deprecation_window_days"], "deprecation_window_days"))
	for _, pat := range append(append([]string{}, p.CompatibleWith...), p.DeprecatedVersions...) {
		if !validVersionPattern(pat) {
			y.bad(root, "version pattern %q is not a version or a wildcard such as 2.x or 2.0.x", pat)
		}
	}
	if g := f["gate"]; g != nil && g.Tag != "!!null" {
		if g.Kind != yaml.MappingNode {
			y.bad(g, "gate must be a mapping")
			return
		}
		gf := y.fields(g, "golden_min_pass", "regression_min_pass", "shadow_min_pass", "high_risk_requires_approval")
		rate := func(key string) float64 {
			v := y.float(gf[key], "gate."+key)
			if v < 0 || v > 1 {
				y.bad(gf[key], "gate.%s must be between 0 and 1", key)
			}
			return v
		}
		p.Gate.GoldenMinPass = rate("golden_min_pass")
		p.Gate.RegressionMinPass = rate("regression_min_pass")
		p.Gate.ShadowMinPass = rate("shadow_min_pass")
		p.Gate.HighRiskRequiresApproval = y.boolean(gf["high_risk_requires_approval"], "gate.high_risk_requires_approval")
	}
}

func validVersionPattern(p string) bool {
	parts := strings.Split(strings.TrimPrefix(p, "v"), ".")
	if len(parts) > 3 || len(parts) == 0 {
		return false
	}
	for i, s := range parts {
		if s == "x" || s == "X" || s == "*" {
			return i == len(parts)-1 || allWild(parts[i:])
		}
		if _, err := strconv.Atoi(s); err != nil {
			return false
		}
	}
	return len(parts) == 3
}

func allWild(parts []string) bool {
	for _, s := range parts {
		if s != "x" && s != "X" && s != "*" {
			return false
		}
	}
	return true
}

func (l *loader) loadCases(t *Tool) {
	cdir := filepath.Join(t.Dir, "contracts")
	entries, err := l.readDir(cdir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		suite := e.Name()
		if !contains(Suites, suite) {
			l.add(filepath.Join(cdir, suite), 0, "unknown case suite %q (expected golden, regression or shadow)", suite)
			continue
		}
		files, _ := l.readDir(filepath.Join(cdir, suite))
		for _, f := range files {
			ext := filepath.Ext(f.Name())
			if f.IsDir() || (ext != ".yaml" && ext != ".yml") {
				continue
			}
			if c := l.loadCase(filepath.Join(cdir, suite, f.Name()), suite, t.ID); c != nil {
				t.Cases = append(t.Cases, c)
			}
		}
	}
	sort.SliceStable(t.Cases, func(i, j int) bool {
		a, b := t.Cases[i], t.Cases[j]
		if a.Suite != b.Suite {
			return a.Suite < b.Suite
		}
		return a.File < b.File
	})
}

func (l *loader) loadCase(path, suite, toolID string) *Case {
	y := yamlFile{l, path}
	before := len(l.problems)
	root, _ := y.parse()
	if root == nil {
		return nil
	}
	f := y.fields(root)
	c := &Case{Suite: suite, File: path}
	c.ID = y.str(f["case_id"], "case_id")
	c.Source = y.str(f["source"], "source")
	c.Agent = y.str(f["agent"], "agent")
	c.UserIntent = y.str(f["user_intent"], "user_intent")
	c.AgentResponse = y.str(f["agent_response"], "agent_response")
	if c.ID == "" {
		y.bad(root, "missing case_id")
	}
	if tn := f["tool"]; tn == nil || tn.Kind != yaml.MappingNode {
		y.bad(root, "tool must be a mapping {id, version}")
	} else {
		tf := y.fields(tn, "id", "version")
		c.ToolID = y.str(tf["id"], "tool.id")
		c.ToolVersion = y.str(tf["version"], "tool.version")
		if c.ToolID != toolID {
			y.bad(tn, "tool.id %q does not match the tool folder %q", c.ToolID, toolID)
		}
		if _, ok := ParseSemver(c.ToolVersion); !ok {
			y.bad(tn, "tool.version %q is not semver (MAJOR.MINOR.PATCH)", c.ToolVersion)
		}
	}
	c.Arguments = y.jsonOf(f["expected_tool_arguments"], "expected_tool_arguments")
	c.MockResult = y.jsonOf(f["mock_tool_result"], "mock_tool_result")
	if en := f["expected"]; en != nil && en.Tag != "!!null" {
		if en.Kind != yaml.MappingNode {
			y.bad(en, "expected must be a mapping")
		} else {
			ef := y.fields(en)
			c.Expected.ToolStatus = y.str(ef["tool_status"], "expected.tool_status")
			c.Expected.Validation = y.str(ef["validation"], "expected.validation")
			if v := c.Expected.Validation; v != "" && v != "ok" && v != "invalid" {
				y.bad(ef["validation"], "expected.validation must be ok or invalid, not %q", v)
			}
			if n := ef["expected_errors"]; n != nil {
				if err := n.Decode(&c.Expected.ExpectedErrors); err != nil {
					y.bad(n, "expected.expected_errors must be a list of {pointer, code}")
				}
			}
		}
	}
	if n := f["expected_errors"]; n != nil && len(c.Expected.ExpectedErrors) == 0 {
		// also accepted at the top level, next to `expected`
		if err := n.Decode(&c.Expected.ExpectedErrors); err != nil {
			y.bad(n, "expected_errors must be a list of {pointer, code}")
		}
	}
	if bn := f["expected_agent_behavior"]; bn != nil && bn.Kind == yaml.MappingNode {
		bf := y.fields(bn)
		c.MustInclude = y.strs(bf["must_include"], "must_include")
		c.MustNotInclude = y.strs(bf["must_not_include"], "must_not_include")
	}
	if len(l.problems) > before {
		return nil
	}
	return c
}
