// Package casetest replays contract cases (docs/reference/files.md) against a tool version: each case's
// expected_tool_arguments are validated against the target version's schema and rules,
// its mock_tool_result against the result schema, and its expected_agent_behavior against
// the agent's text — the recorded agent_response, or a model's answer when a Model is
// configured. Cases written for the versions a release policy promises compatibility with
// are replayed against the new version ("cross-version replay"), so an old prompt path
// that breaks shows up as a failure with a cause.
//
// The package reads no files: the caller loads the tools directory and agent prompts.
package casetest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/toolgate/toolgate/contract"
)

// Config is one replay. The zero value of every optional field works.
type Config struct {
	// Tool is the tool whose cases are replayed. Required.
	Tool *contract.Tool
	// Target is the version the cases are replayed against. Defaults to Tool.Default().
	Target *contract.Version
	// From is the version being replaced ("" for none); its cases are replayed as well.
	From string
	// Model, when set, produces the agent's tool call and text; otherwise each case's
	// recorded agent_response is checked.
	Model *Model
	// Agents maps an agent name (a case's `agent`) to its system prompt, for Model runs.
	Agents map[string]string
	// Live, when set, sends each case's valid arguments to a live tool (provider
	// verification) and checks the real result.
	Live *Live
	// Concurrency bounds the cases checked at once. Defaults to 4 with a Model (model calls
	// are the slow part) and GOMAXPROCS without.
	Concurrency int
	// Progress receives one "\r[done/total]" update per finished case when a Model or Live
	// target is used; nil for none.
	Progress io.Writer
	// Change is the diff's tier from From to Target ("major", "high_risk", "compatible",
	// "none"; "" when not diffed). A major or high-risk change, like a tool whose
	// owner.yaml risk_level is high, needs a golden or regression case that covers the
	// target (see Coverage).
	Change string
}

// Live is a tool endpoint that takes a case's arguments as a JSON POST body.
type Live struct {
	URL    string
	Client *http.Client // defaults to http.DefaultClient
}

// Failure is one check a case did not pass. Cause is the grouping key of "Top failures".
type Failure struct {
	Check  string `json:"check"` // arguments | result | tool_status | tool_call | must_include | must_not_include | model | target
	Cause  string `json:"cause"`
	Detail string `json:"detail,omitempty"`
}

// CaseResult is the outcome of one case.
type CaseResult struct {
	Suite      string `json:"suite"`
	ID         string `json:"case_id"`
	File       string `json:"file"`
	WrittenFor string `json:"written_for"` // the version the case names
	// CrossVersion is true when the case was written for another version than the target.
	CrossVersion bool `json:"cross_version"`
	// Covers is true when the case targets the replayed version: written for it, or its
	// tool.versions include it. Only such golden and regression cases count as coverage.
	Covers   bool      `json:"covers"`
	Passed   bool      `json:"passed"`
	Failures []Failure `json:"failures"`
	// Notes lists checks that were skipped and why.
	Notes     []string `json:"notes,omitempty"`
	AgentText string   `json:"agent_text,omitempty"`
}

// SuiteResult counts one suite's cases against its threshold.
type SuiteResult struct {
	Suite   string  `json:"suite"`
	Passed  int     `json:"passed"`
	Total   int     `json:"total"`
	MinPass float64 `json:"min_pass"`
	// OK says whether the pass rate meets MinPass. A suite without cases is OK on its
	// own: whether a release may rest on no case at all is the report's Coverage.
	OK bool `json:"ok"`
}

// Rate is the pass rate; 1 for an empty suite (which Coverage, not the rate, judges).
func (s SuiteResult) Rate() float64 {
	if s.Total == 0 {
		return 1
	}
	return float64(s.Passed) / float64(s.Total)
}

// Cause is one failure cause and how many cases it failed.
type Cause struct {
	Cause string `json:"cause"`
	Cases int    `json:"cases"`
}

// Decisions of a replay against the policy's thresholds. A replay of no case at all is
// "no cases", never "allow release": a pass rate over nothing is not a pass.
const (
	DecisionAllow   = "allow release"
	DecisionBlock   = "block release"
	DecisionNoCases = "no cases"
)

// Coverage says whether the replay rests on cases that target the replayed version.
type Coverage struct {
	Version string `json:"version"`
	// Cases counts the golden and regression cases that cover Version (Case.Covers).
	Cases int `json:"cases"`
	// Required lists why the release needs such a case: "risk_level high", "major
	// change", "high-risk change"; empty when it does not.
	Required []string `json:"required"`
	// WrittenFor lists the versions the replayed cases were written for.
	WrittenFor []string `json:"written_for"`
	// OK is false when a case was required and none covers Version, or when no case ran
	// at all; Detail then says which version and how to fix it.
	OK     bool   `json:"ok"`
	Detail string `json:"detail,omitempty"`
}

// Report is the outcome of a replay. Its JSON form is `toolgate test --format json`.
type Report struct {
	Tool string `json:"tool"`
	From string `json:"from,omitempty"`
	To   string `json:"to"`
	// DiffSummary and Risk are filled by callers that diffed From against To.
	DiffSummary string        `json:"diff_summary,omitempty"`
	Risk        string        `json:"risk,omitempty"`
	Mode        string        `json:"mode"` // recorded | model
	Suites      []SuiteResult `json:"suites"`
	TopFailures []Cause       `json:"top_failures"`
	Coverage    Coverage      `json:"coverage"`
	Decision    string        `json:"decision"`
	Cases       []CaseResult  `json:"cases"`

	otherCases int // the tool's cases this replay did not select
}

// OK reports whether every suite met its threshold.
func (r *Report) OK() bool { return r.Decision == DecisionAllow }

// DefaultGate holds the thresholds used when a tool has no release-policy.yaml.
var DefaultGate = contract.DefaultGate

// Select returns the cases a replay against target runs: those that cover target (written
// for it, or declaring it in tool.versions), and those written for from or for a version
// matching the policy's compatible_with, never for a version newer than target.
func Select(t *contract.Tool, target, from string) []*contract.Case {
	tv, _ := contract.ParseSemver(target)
	var out []*contract.Case
	for _, c := range t.Cases {
		if c.Covers(target) {
			out = append(out, c)
			continue
		}
		cv, ok := contract.ParseSemver(c.ToolVersion)
		if !ok || cv.Compare(tv) > 0 {
			continue
		}
		keep := from != "" && c.ToolVersion == from
		for _, p := range t.Policy.CompatibleWith {
			keep = keep || contract.VersionMatches(p, c.ToolVersion)
		}
		if keep {
			out = append(out, c)
		}
	}
	return out
}

// CheckCases refuses a tool whose cases name another tool or a version the tool does not
// have: such a case would silently drop out of every replay (the loader reports both; this
// guards registries built some other way).
func CheckCases(t *contract.Tool) error {
	for _, c := range t.Cases {
		if c.ToolID != t.ID {
			return fmt.Errorf("%s: case %s names tool %q, not %s", c.File, c.ID, c.ToolID, t.ID)
		}
		if t.Version(c.ToolVersion) == nil {
			return fmt.Errorf("%s: case %s: %s", c.File, c.ID, t.VersionNotFoundDetail(c.ToolVersion))
		}
	}
	return nil
}

// Run replays the selected cases and evaluates them against the tool's gate thresholds.
// It returns an error only when the configuration is unusable; every case problem is a
// failure in the report.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if cfg.Tool == nil {
		return nil, fmt.Errorf("casetest: no tool")
	}
	target := cfg.Target
	if target == nil {
		target = cfg.Tool.Default()
	}
	if target == nil {
		return nil, fmt.Errorf("casetest: tool %s has no versions", cfg.Tool.ID)
	}
	if err := CheckCases(cfg.Tool); err != nil {
		return nil, err
	}
	from := strings.TrimPrefix(cfg.From, "v")
	cases := Select(cfg.Tool, target.Version, from)
	r := &runner{cfg: cfg, target: target}
	if cfg.Model != nil {
		r.tools = cfg.Model.toolsFor(target)
	}
	results := make([]CaseResult, len(cases))
	workers := cfg.Concurrency
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
		if cfg.Model != nil || cfg.Live != nil {
			workers = 4
		}
	}
	workers = min(workers, max(len(cases), 1))
	var next, done atomic.Int64
	var wg sync.WaitGroup
	var progressMu sync.Mutex
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(cases) {
					return
				}
				results[i] = r.check(ctx, cases[i])
				n := done.Add(1)
				if cfg.Progress != nil && (cfg.Model != nil || cfg.Live != nil) {
					progressMu.Lock()
					fmt.Fprintf(cfg.Progress, "\r[%d/%d] cases", n, len(cases))
					if int(n) == len(cases) {
						fmt.Fprintln(cfg.Progress)
					}
					progressMu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	rep := &Report{Tool: cfg.Tool.ID, From: from, To: target.Version, Mode: "recorded", Cases: results}
	if cfg.Model != nil {
		rep.Mode = "model"
	}
	gate := cfg.Tool.Policy.Gate
	if cfg.Tool.Policy.File == "" {
		gate = DefaultGate
	}
	rep.Coverage = Coverage{Version: target.Version, Required: coverageNeeds(cfg.Tool, cfg.Change)}
	rep.otherCases = len(cfg.Tool.Cases) - len(cases)
	rep.evaluate(gate)
	return rep, nil
}

// coverageNeeds lists why a replay must rest on a case that covers its target.
func coverageNeeds(t *contract.Tool, change string) []string {
	needs := []string{}
	if t.Owner.RiskLevel == "high" {
		needs = append(needs, "risk_level high")
	}
	switch change {
	case "major":
		needs = append(needs, "major change")
	case "high_risk":
		needs = append(needs, "high-risk change")
	}
	return needs
}

// judgeCoverage fills Coverage from the results: a replay of no case, or a required
// coverage that no golden or regression case gives, is not OK.
func (r *Report) judgeCoverage() {
	cv := &r.Coverage
	seen := map[string]bool{}
	cv.WrittenFor = []string{}
	for _, c := range r.Cases {
		if !seen[c.WrittenFor] {
			seen[c.WrittenFor] = true
			cv.WrittenFor = append(cv.WrittenFor, c.WrittenFor)
		}
		if c.Covers && (c.Suite == "golden" || c.Suite == "regression") {
			cv.Cases++
		}
	}
	if cv.Required == nil {
		cv.Required = []string{}
	}
	sort.Slice(cv.WrittenFor, func(i, j int) bool { return semverLess(cv.WrittenFor[i], cv.WrittenFor[j]) })
	v := cv.Version
	fix := fmt.Sprintf("add a case with tool.version %s under contracts/golden/", v)
	if r.otherCases > 0 || len(r.Cases) > 0 {
		fix += fmt.Sprintf(", or add %s (or %s) to the tool.versions of a case that still holds for it", v, majorPattern(v))
	}
	switch {
	case len(cv.Required) > 0 && cv.Cases == 0:
		cv.Detail = fmt.Sprintf("no golden or regression case covers v%s (needed: %s)", v, strings.Join(cv.Required, ", "))
		if len(cv.WrittenFor) > 0 {
			cv.Detail += "; the cases replayed were written for v" + strings.Join(cv.WrittenFor, ", v")
		}
		cv.Detail += ": " + fix
	case len(r.Cases) == 0:
		cv.Detail = fmt.Sprintf("no case was replayed against v%s, and a pass rate over no case is not a pass: %s", v, fix)
	default:
		cv.OK = true
	}
}

func majorPattern(v string) string {
	if sv, ok := contract.ParseSemver(v); ok {
		return fmt.Sprintf("%d.x", sv.Major)
	}
	return v
}

func semverLess(a, b string) bool {
	sa, okA := contract.ParseSemver(a)
	sb, okB := contract.ParseSemver(b)
	if okA && okB {
		return sa.Compare(sb) < 0
	}
	return a < b
}

// evaluate counts suites, groups causes and decides against the thresholds.
func (r *Report) evaluate(g contract.GatePolicy) {
	mins := map[string]float64{"golden": g.GoldenMinPass, "regression": g.RegressionMinPass, "shadow": g.ShadowMinPass}
	idx := map[string]int{}
	for _, s := range contract.Suites {
		idx[s] = len(r.Suites)
		r.Suites = append(r.Suites, SuiteResult{Suite: s, MinPass: mins[s]})
	}
	counts := map[string]int{}
	for _, c := range r.Cases {
		s := &r.Suites[idx[c.Suite]]
		s.Total++
		if c.Passed {
			s.Passed++
		}
		seen := map[string]bool{}
		for _, f := range c.Failures {
			if !seen[f.Cause] {
				seen[f.Cause] = true
				counts[f.Cause]++
			}
		}
	}
	r.judgeCoverage()
	r.Decision = DecisionAllow
	switch {
	case len(r.Cases) == 0 && len(r.Coverage.Required) == 0:
		r.Decision = DecisionNoCases
	case !r.Coverage.OK:
		r.Decision = DecisionBlock
	}
	for i := range r.Suites {
		s := &r.Suites[i]
		s.OK = s.Rate() >= s.MinPass-1e-9
		if !s.OK {
			r.Decision = DecisionBlock
		}
	}
	r.TopFailures = []Cause{}
	for c, n := range counts {
		r.TopFailures = append(r.TopFailures, Cause{Cause: c, Cases: n})
	}
	sort.Slice(r.TopFailures, func(i, j int) bool {
		a, b := r.TopFailures[i], r.TopFailures[j]
		if a.Cases != b.Cases {
			return a.Cases > b.Cases
		}
		return a.Cause < b.Cause
	})
	if r.Cases == nil {
		r.Cases = []CaseResult{}
	}
}

type runner struct {
	cfg    Config
	target *contract.Version
	tools  []json.RawMessage // the model's tool definitions for this target
}

// check runs every check of one case.
func (r *runner) check(ctx context.Context, c *contract.Case) CaseResult {
	res := CaseResult{
		Suite: c.Suite, ID: c.ID, File: c.File, WrittenFor: c.ToolVersion,
		CrossVersion: c.ToolVersion != r.target.Version, Covers: c.Covers(r.target.Version), Failures: []Failure{},
	}
	fail := func(check, cause, detail string) {
		res.Failures = append(res.Failures, Failure{Check: check, Cause: cause, Detail: detail})
	}
	expected, err := decodeOptional(c.Arguments)
	if err != nil {
		fail("arguments", "expected_tool_arguments is not valid JSON", err.Error())
	}
	mock, err := decodeOptional(c.MockResult)
	if err != nil {
		fail("result", "mock_tool_result is not valid JSON", err.Error())
	}
	text := c.AgentResponse
	if r.cfg.Model != nil {
		text = r.modelTurn(ctx, c, expected, mock, &res, fail)
	} else {
		switch {
		case expected == nil:
			res.Notes = append(res.Notes, "no expected_tool_arguments: arguments not checked")
		case hasMatcher(expected):
			res.Notes = append(res.Notes, "expected_tool_arguments use matchers: checked only against a model's call (--model-url)")
		default:
			r.checkArguments(c, expected, res.CrossVersion, fail)
		}
	}
	if mock != nil {
		for _, e := range r.target.ValidateResult(mock) {
			fail("result", fmt.Sprintf("mock_tool_result violates the v%s result schema: %s at %s", r.target.Version, e.Code, ptr(e.Pointer)), e.Detail)
		}
		checkStatus(c, mock, "mock_tool_result", fail)
	}
	if r.cfg.Live != nil && expected != nil && !hasMatcher(expected) && r.target.Validate(expected).Valid() {
		r.live(ctx, c, expected, fail)
	}
	if len(c.MustInclude)+len(c.MustNotInclude) > 0 {
		if text == "" && r.cfg.Model == nil {
			res.Notes = append(res.Notes, "no agent_response and no model: agent behavior not checked")
		} else {
			res.AgentText = text
			checkBehavior(c, text, fail)
		}
	}
	res.Passed = len(res.Failures) == 0
	return res
}

func decodeOptional(raw json.RawMessage) (any, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	return contract.DecodeJSON(raw)
}

func ptr(p string) string {
	if p == "" {
		return "/"
	}
	return p
}

// expectedValidation is the case's expected.validation with its default: invalid when it
// lists expected errors, ok otherwise.
func expectedValidation(c *contract.Case) string {
	if v := c.Expected.Validation; v != "" {
		return v
	}
	if len(c.Expected.ExpectedErrors) > 0 {
		return "invalid"
	}
	return "ok"
}

// checkArguments validates arguments against the target and compares the verdict with the
// case's expectation.
func (r *runner) checkArguments(c *contract.Case, args any, cross bool, fail func(string, string, string)) {
	verdict := r.target.Validate(args)
	if expectedValidation(c) == "ok" {
		for _, e := range verdict.Errors {
			fail("arguments", argumentCause(e, cross), ptr(e.Pointer)+": "+e.Detail)
		}
		return
	}
	if verdict.Valid() {
		want := "an error"
		if len(c.Expected.ExpectedErrors) > 0 {
			e := c.Expected.ExpectedErrors[0]
			want = e.Code + " at " + ptr(e.Pointer)
		}
		fail("arguments", fmt.Sprintf("Arguments accepted by v%s, expected %s", r.target.Version, want), "")
		return
	}
	for _, want := range c.Expected.ExpectedErrors {
		found := false
		for _, got := range verdict.Errors {
			found = found || (got.Code == want.Code && got.Pointer == want.Pointer)
		}
		if !found {
			fail("arguments", fmt.Sprintf("Expected %s at %s, not reported", want.Code, ptr(want.Pointer)), describe(verdict.Errors))
		}
	}
}

// argumentCause names why valid-looking arguments were refused, in a reviewer's words.
func argumentCause(e contract.FieldError, cross bool) string {
	suffix := ""
	if cross {
		suffix = " in old prompt path"
	}
	field := strings.TrimPrefix(e.Pointer, "/")
	switch e.Code {
	case "required":
		return "Missing " + field + suffix
	case "additionalProperties":
		return "Unknown argument " + field + suffix
	}
	return fmt.Sprintf("%s at %s%s", e.Code, ptr(e.Pointer), suffix)
}

func describe(errs []contract.FieldError) string {
	parts := make([]string, len(errs))
	for i, e := range errs {
		parts[i] = e.Code + " at " + ptr(e.Pointer)
	}
	if len(parts) == 0 {
		return "no errors"
	}
	return "got " + strings.Join(parts, ", ")
}

// checkStatus compares a result's "status" with expected.tool_status.
func checkStatus(c *contract.Case, result any, what string, fail func(string, string, string)) {
	want := c.Expected.ToolStatus
	if want == "" {
		return
	}
	m, _ := result.(map[string]any)
	got, _ := m["status"].(string)
	if got != want {
		fail("tool_status", fmt.Sprintf("tool_status %q, expected %q", got, want), what)
	}
}

// checkBehavior applies must_include and must_not_include to the agent's text.
func checkBehavior(c *contract.Case, text string, fail func(string, string, string)) {
	for _, p := range c.MustInclude {
		if ok, err := matchPhrase(p, text); err != nil {
			fail("must_include", "Bad phrase "+p, err.Error())
		} else if !ok {
			fail("must_include", "Agent text lacks "+quote(p), text)
		}
	}
	for _, p := range c.MustNotInclude {
		if ok, err := matchPhrase(p, text); err != nil {
			fail("must_not_include", "Bad phrase "+p, err.Error())
		} else if ok {
			fail("must_not_include", "Agent text says "+quote(p), text)
		}
	}
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }
