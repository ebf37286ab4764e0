package contract

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/toolgate/toolgate/internal/strictyaml"
	"github.com/toolgate/toolgate/internal/suggest"
	"go.yaml.in/yaml/v3"
)

// yamlFile is one YAML file of the tools directory being read strictly: unknown fields,
// keys set twice and values of the wrong kind are problems with their line.
type yamlFile struct {
	l     *loader
	path  string
	lines map[string]int // YAML path → line, after decode
}

// decode reads the file into dst. exists is false (with no problem) when the file does not
// exist; ok is false when it could not be read or parsed at all.
func (y *yamlFile) decode(dst any) (exists, ok bool) {
	b, err := y.l.readFile(y.path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, false
	}
	if err != nil {
		y.l.add(y.path, 0, "cannot read: %v", unwrapPath(err))
		return true, false
	}
	root, p := strictyaml.Parse(b)
	if p != nil {
		y.l.add(y.path, p.Line, "%s", p.Message)
		return true, false
	}
	if root == nil {
		y.lines = map[string]int{"": 1}
		return true, true
	}
	if root.Kind != yaml.MappingNode {
		y.l.add(y.path, root.Line, "must be a YAML mapping of fields")
		return true, false
	}
	lines, problems := strictyaml.Decode(root, dst)
	y.lines = lines
	for _, p := range problems {
		rule := ""
		if strings.HasPrefix(p.Message, "unknown field") {
			rule = RuleFieldUnknown
		}
		y.l.addRule(rule, y.path, p.Line, "", pathMessage(p))
	}
	return true, len(problems) == 0
}

// pathMessage prefixes a problem's message with its YAML path.
func pathMessage(p strictyaml.Problem) string {
	if p.Path == "" {
		return p.Message
	}
	return p.Path + ": " + p.Message
}

// line returns the line of a YAML path, or of its nearest ancestor.
func (y *yamlFile) line(path string) int { return strictyaml.LineOf(y.lines, path) }

// bad reports a problem at a YAML path; the message follows the path ("risk_level: must
// be low, medium or high").
func (y *yamlFile) bad(path, format string, args ...any) {
	y.badRule("", path, format, args...)
}

func (y *yamlFile) badRule(rule, path, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if path != "" {
		msg = path + ": " + msg
	}
	y.l.addRule(rule, y.path, y.line(path), "", msg)
}

// jsonOf converts a YAML value into JSON; null for a missing node.
func (y *yamlFile) jsonOf(n *yaml.Node, key string) json.RawMessage {
	if n == nil {
		return json.RawMessage("null")
	}
	var v any
	if err := n.Decode(&v); err != nil {
		y.bad(key, "cannot be read: %v", strings.TrimPrefix(err.Error(), "yaml: "))
		return json.RawMessage("null")
	}
	b, err := json.Marshal(v)
	if err != nil {
		y.bad(key, "cannot be expressed as JSON (keys must be strings): %v", err)
		return json.RawMessage("null")
	}
	return b
}

// ownerFile is owner.yaml (docs/reference/files.md).
type ownerFile struct {
	Owner     string   `yaml:"owner"`
	RiskLevel string   `yaml:"risk_level"`
	Consumers []string `yaml:"consumers"`
}

// RiskLevels are the values of owner.yaml's risk_level.
var RiskLevels = []string{"low", "medium", "high"}

func (l *loader) loadOwner(t *Tool) {
	y := &yamlFile{l: l, path: filepath.Join(t.Dir, "owner.yaml")}
	var f ownerFile
	exists, _ := y.decode(&f)
	if !exists {
		return
	}
	t.Owner = Owner{Owner: f.Owner, RiskLevel: f.RiskLevel, Consumers: f.Consumers, File: y.path}
	if r := f.RiskLevel; r != "" && !contains(RiskLevels, r) {
		msg := fmt.Sprintf("must be low, medium or high, not %q", r)
		if near := suggest.Nearest(r, RiskLevels, 1); len(near) > 0 {
			msg += "; " + suggest.DidYouMean(near...)
		}
		y.bad("risk_level", "%s", msg)
	}
}

// policyFile is release-policy.yaml (docs/reference/files.md).
type policyFile struct {
	CompatibleWith        []string `yaml:"compatible_with"`
	DeprecatedVersions    []string `yaml:"deprecated_versions"`
	DeprecationWindowDays int      `yaml:"deprecation_window_days"`
	Gate                  *struct {
		GoldenMinPass            *float64 `yaml:"golden_min_pass"`
		RegressionMinPass        *float64 `yaml:"regression_min_pass"`
		ShadowMinPass            *float64 `yaml:"shadow_min_pass"`
		HighRiskRequiresApproval bool     `yaml:"high_risk_requires_approval"`
	} `yaml:"gate"`
}

// DefaultGate holds the release gate's thresholds where a release policy leaves one out
// (or a tool has no release-policy.yaml): every golden and regression case must pass, 95%
// of shadow cases. A threshold left out is never 0.
var DefaultGate = GatePolicy{GoldenMinPass: 1, RegressionMinPass: 1, ShadowMinPass: 0.95}

func (l *loader) loadPolicy(t *Tool) {
	t.Policy.Gate = DefaultGate
	y := &yamlFile{l: l, path: filepath.Join(t.Dir, "release-policy.yaml")}
	var f policyFile
	exists, _ := y.decode(&f)
	if !exists {
		return
	}
	p := &t.Policy
	p.File = y.path
	p.CompatibleWith, p.DeprecatedVersions, p.DeprecationWindowDays = f.CompatibleWith, f.DeprecatedVersions, f.DeprecationWindowDays
	for key, pats := range map[string][]string{"compatible_with": p.CompatibleWith, "deprecated_versions": p.DeprecatedVersions} {
		for i, pat := range pats {
			if !validVersionPattern(pat) {
				y.bad(fmt.Sprintf("%s[%d]", key, i), "version pattern %q is not a version or a wildcard such as 2.x or 2.0.x", pat)
			}
		}
	}
	if p.DeprecationWindowDays < 0 {
		y.bad("deprecation_window_days", "must not be negative")
	}
	if f.Gate == nil {
		return
	}
	rate := func(key string, v *float64, dst *float64) {
		if v == nil {
			return
		}
		if *v < 0 || *v > 1 {
			y.bad("gate."+key, "must be between 0 and 1")
		}
		*dst = *v
	}
	rate("golden_min_pass", f.Gate.GoldenMinPass, &p.Gate.GoldenMinPass)
	rate("regression_min_pass", f.Gate.RegressionMinPass, &p.Gate.RegressionMinPass)
	rate("shadow_min_pass", f.Gate.ShadowMinPass, &p.Gate.ShadowMinPass)
	p.Gate.HighRiskRequiresApproval = f.Gate.HighRiskRequiresApproval
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

// caseFile is a contract case (docs/reference/files.md).
type caseFile struct {
	CaseID                string            `yaml:"case_id"`
	Source                string            `yaml:"source"`
	Agent                 string            `yaml:"agent"`
	UserIntent            string            `yaml:"user_intent"`
	Tool                  *caseTool         `yaml:"tool"`
	ExpectedToolArguments *yaml.Node        `yaml:"expected_tool_arguments"`
	MockToolResult        *yaml.Node        `yaml:"mock_tool_result"`
	Expected              *caseExpectedFile `yaml:"expected"`
	ExpectedErrors        []ExpectedError   `yaml:"expected_errors"` // also accepted beside expected
	ExpectedAgentBehavior *struct {
		MustInclude    []string `yaml:"must_include"`
		MustNotInclude []string `yaml:"must_not_include"`
	} `yaml:"expected_agent_behavior"`
	AgentResponse string `yaml:"agent_response"`
}

type caseTool struct {
	ID       string   `yaml:"id"`
	Version  string   `yaml:"version"`
	Versions []string `yaml:"versions"`
}

type caseExpectedFile struct {
	ToolStatus     string          `yaml:"tool_status"`
	Validation     string          `yaml:"validation"`
	ExpectedErrors []ExpectedError `yaml:"expected_errors"`
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
			msg := fmt.Sprintf("unknown case suite %q (expected golden, regression or shadow)", suite)
			if near := suggest.Nearest(suite, Suites, 1); len(near) > 0 {
				msg = fmt.Sprintf("unknown case suite %q; %s", suite, suggest.DidYouMean(near...))
			}
			l.add(filepath.Join(cdir, suite), 0, "%s", msg)
			continue
		}
		files, _ := l.readDir(filepath.Join(cdir, suite))
		for _, f := range files {
			ext := filepath.Ext(f.Name())
			if f.IsDir() || (ext != ".yaml" && ext != ".yml") {
				continue
			}
			if c := l.loadCase(filepath.Join(cdir, suite, f.Name()), suite, t); c != nil {
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

func (l *loader) loadCase(path, suite string, t *Tool) *Case {
	y := &yamlFile{l: l, path: path}
	before := len(l.problems)
	var f caseFile
	if _, ok := y.decode(&f); !ok && len(l.problems) > before && y.lines == nil {
		return nil // not YAML at all
	}
	c := &Case{Suite: suite, File: path, ID: f.CaseID, Source: f.Source, Agent: f.Agent, UserIntent: f.UserIntent, AgentResponse: f.AgentResponse}
	if c.ID == "" {
		y.bad("case_id", "is required")
	}
	if f.Tool == nil {
		y.bad("tool", "is required: {id: %s, version: MAJOR.MINOR.PATCH}", t.ID)
	} else {
		c.ToolID, c.ToolVersion = f.Tool.ID, f.Tool.Version
		if c.ToolID != t.ID {
			y.badRule(RuleCaseTool, "tool.id", "%q is not the tool whose folder holds the case (%s)", c.ToolID, t.ID)
		}
		if _, ok := ParseSemver(c.ToolVersion); !ok {
			y.badRule(RuleCaseVersion, "tool.version", "%q is not a version (MAJOR.MINOR.PATCH)", c.ToolVersion)
		} else if t.Version(c.ToolVersion) == nil && !l.schemaFileExists(t, c.ToolVersion) {
			y.badRule(RuleCaseVersion, "tool.version", "%s", t.VersionNotFoundDetail(c.ToolVersion))
		}
		c.Versions = f.Tool.Versions
		for i, v := range f.Tool.Versions {
			spec, err := ParseVersionSpec(v)
			if err != nil {
				y.bad(fmt.Sprintf("tool.versions[%d]", i), "%v", err)
				continue
			}
			c.VersionSpecs = append(c.VersionSpecs, spec)
		}
	}
	c.Arguments = y.jsonOf(f.ExpectedToolArguments, "expected_tool_arguments")
	c.MockResult = y.jsonOf(f.MockToolResult, "mock_tool_result")
	if e := f.Expected; e != nil {
		c.Expected = CaseExpected{ToolStatus: e.ToolStatus, Validation: e.Validation, ExpectedErrors: e.ExpectedErrors}
		if v := e.Validation; v != "" && v != "ok" && v != "invalid" {
			y.bad("expected.validation", "must be ok or invalid, not %q", v)
		}
		c.HasExpectation = e.ToolStatus != "" || e.Validation != "" || len(e.ExpectedErrors) > 0
	}
	errPath := "expected.expected_errors"
	if len(f.ExpectedErrors) > 0 {
		errPath = "expected_errors"
		if len(c.Expected.ExpectedErrors) > 0 {
			y.bad("expected_errors", "is given twice, here and under expected: keep one")
		}
		c.Expected.ExpectedErrors = f.ExpectedErrors
		c.HasExpectation = true
	}
	for i, e := range c.Expected.ExpectedErrors {
		if e.Code == "" {
			y.bad(fmt.Sprintf("%s[%d]", errPath, i), "has no code")
		}
		if e.Pointer != "" && !strings.HasPrefix(e.Pointer, "/") {
			y.bad(fmt.Sprintf("%s[%d]", errPath, i), "pointer %q must be a JSON pointer such as /order_id (\"\" for the arguments as a whole)", e.Pointer)
		}
	}
	if b := f.ExpectedAgentBehavior; b != nil {
		c.MustInclude, c.MustNotInclude = b.MustInclude, b.MustNotInclude
	}
	c.HasExpectation = c.HasExpectation || len(c.MustInclude)+len(c.MustNotInclude) > 0 || f.ExpectedToolArguments != nil
	if len(l.problems) > before {
		return nil
	}
	return c
}

// schemaFileExists reports whether a version's schema file is on disk even though it did
// not load (its load problem is reported already).
func (l *loader) schemaFileExists(t *Tool, version string) bool {
	_, err := fs.Stat(l.fsys, l.fsPath(filepath.Join(t.Dir, "schemas", "v"+version+".json")))
	return err == nil
}
