// Package contract loads a tools directory of versioned tool contracts (docs/reference/files.md) and
// validates tool-call arguments against them: JSON Schema 2020-12 for shape, CEL rules for
// meaning. It is pure domain code: it reads files only in Load, and everything it returns is
// immutable and safe for concurrent use.
package contract

import (
	"encoding/json"
	"sort"
)

// Effect values of a schema file.
const (
	EffectMutating = "mutating"
	EffectReadOnly = "read_only"
)

// Rule outcomes.
const (
	OutcomeReject = "reject"
	OutcomeReview = "review"
)

// Case suites (folders under contracts/).
var Suites = []string{"golden", "regression", "shadow"}

// Registry is a loaded tools directory. It is immutable after Load.
type Registry struct {
	Dir       string
	tools     []*Tool
	byID      map[string]*Tool
	agents    []*Agent
	decisions []*Decision
}

// Tools returns every tool, sorted by ID.
func (r *Registry) Tools() []*Tool { return r.tools }

// Tool returns the tool with the given ID, or nil when unknown.
func (r *Registry) Tool(id string) *Tool {
	if r == nil {
		return nil
	}
	return r.byID[id]
}

// Tool is one tool folder: its owner, release policy, versions and contract cases.
type Tool struct {
	ID        string
	Dir       string
	Owner     Owner
	Policy    ReleasePolicy
	Versions  []*Version // ascending semver
	Cases     []*Case    // sorted by suite, then file name
	Changelog string     // contents of changelog.md ("" when absent)
	// ChangelogFile is the path of changelog.md, "" when absent.
	ChangelogFile string
}

// Version returns the named version ("2.1.0", a leading "v" is accepted), or nil when unknown.
func (t *Tool) Version(v string) *Version {
	if len(v) > 0 && v[0] == 'v' {
		v = v[1:]
	}
	for _, ver := range t.Versions {
		if ver.Version == v {
			return ver
		}
	}
	return nil
}

// Default returns the newest version that the release policy does not deprecate. When the
// policy deprecates every version it returns the newest one, so a tool always has a default.
func (t *Tool) Default() *Version {
	for i := len(t.Versions) - 1; i >= 0; i-- {
		if !t.Policy.Deprecates(t.Versions[i].Version) {
			return t.Versions[i]
		}
	}
	if len(t.Versions) == 0 {
		return nil
	}
	return t.Versions[len(t.Versions)-1]
}

// Owner is owner.yaml (docs/reference/files.md).
type Owner struct {
	Owner     string
	RiskLevel string // low | medium | high
	Consumers []string
	File      string // path of owner.yaml, "" when absent
}

// ReleasePolicy is release-policy.yaml (docs/reference/files.md). Its zero value (File == "") means the
// tool has no policy file.
type ReleasePolicy struct {
	CompatibleWith        []string
	DeprecatedVersions    []string
	DeprecationWindowDays int
	Gate                  GatePolicy
	File                  string
}

// GatePolicy holds the release gate's thresholds.
type GatePolicy struct {
	GoldenMinPass            float64
	RegressionMinPass        float64
	ShadowMinPass            float64
	HighRiskRequiresApproval bool
}

// Deprecates reports whether version v matches one of the policy's deprecated_versions
// patterns ("1.x", "2.0.x", "2.1.0").
func (p ReleasePolicy) Deprecates(v string) bool {
	for _, pat := range p.DeprecatedVersions {
		if VersionMatches(pat, v) {
			return true
		}
	}
	return false
}

// Version is one schema file schemas/vX.Y.Z.json, compiled.
type Version struct {
	ToolID      string
	Version     string
	Name        string
	Description string
	Effect      string // "mutating" | "read_only"
	Parameters  json.RawMessage
	Result      json.RawMessage
	Errors      []ErrorDef
	Rules       []Rule
	File        string // path of the schema file
	Raw         []byte // the file's bytes

	params      *Schema
	result      *Schema
	programs    []*ruleProgram
	idemKey     string
	sensParams  []string
	sensResult  []string
	paramsValue any // decoded parameters schema, read-only
	resultValue any
}

// Mutating reports whether calls to this version have side effects.
func (v *Version) Mutating() bool { return v.Effect == EffectMutating }

// ParametersSchema returns the compiled parameters schema.
func (v *Version) ParametersSchema() *Schema { return v.params }

// ResultSchema returns the compiled result schema, or nil when the file has none.
func (v *Version) ResultSchema() *Schema { return v.result }

// ErrorDef is one entry of a tool's error catalogue.
type ErrorDef struct {
	Code       string `json:"code"`
	Category   string `json:"category"`
	HTTPStatus int    `json:"http_status"`
	Retryable  bool   `json:"retryable"`
}

// ErrorCategories are the valid ErrorDef categories.
var ErrorCategories = []string{"business", "validation", "permission", "rate_limit", "platform"}

// Rule is one semantic rule in CEL over `args`.
type Rule struct {
	ID      string `json:"id"`
	Rule    string `json:"rule"`
	Message string `json:"message"`
	Field   string `json:"field"`
	Outcome string `json:"outcome"` // "reject" | "review"
}

// Case is one contract case file (docs/reference/files.md).
type Case struct {
	Suite       string // golden | regression | shadow
	File        string
	ID          string // case_id
	Source      string
	Agent       string
	UserIntent  string
	ToolID      string
	ToolVersion string // tool.version: the version the case was written against
	// Versions is tool.versions as written: the other versions the case is declared to
	// cover (patterns such as 2.x, or ranges such as ">=1.0.0 <3.0.0"); VersionSpecs
	// holds them parsed. See Covers.
	Versions     []string
	VersionSpecs []VersionSpec
	// Arguments is expected_tool_arguments as JSON (null when absent); decode it with DecodeJSON.
	Arguments json.RawMessage
	// MockResult is mock_tool_result as JSON (null when absent).
	MockResult json.RawMessage
	Expected   CaseExpected
	// MustInclude and MustNotInclude are expected_agent_behavior's phrases.
	MustInclude    []string
	MustNotInclude []string
	AgentResponse  string
	// HasExpectation is false for a case that states nothing to check: no
	// expected_tool_arguments, no expected block, no expected_agent_behavior phrases.
	HasExpectation bool
}

// CaseExpected is a case's `expected` block.
type CaseExpected struct {
	ToolStatus     string
	Validation     string // "ok" | "invalid"
	ExpectedErrors []ExpectedError
}

// ExpectedError is one {pointer, code} an invalid case expects.
type ExpectedError struct {
	Pointer string `json:"pointer"`
	Code    string `json:"code"`
}

func sortTools(tools []*Tool) {
	sort.Slice(tools, func(i, j int) bool { return tools[i].ID < tools[j].ID })
}
