// Package lint checks a tools directory against the release checklist: the parts of it a
// machine can judge (owners, closed objects, described properties, integer money, error
// categories, contract cases, changelogs). Each finding has a stable id, a severity and a
// location (file, line, JSON pointer).
package lint

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/internal/suggest"
	"github.com/toolgate/toolgate/ledger"
)

// Severity of a finding: errors fail the lint, warnings are advice.
type Severity string

// Severities.
const (
	Error   Severity = "error"
	Warning Severity = "warning"
)

// Finding is one checklist item a tools directory misses.
type Finding struct {
	ID       string   `json:"id"`
	Severity Severity `json:"severity"`
	Tool     string   `json:"tool,omitempty"`
	Version  string   `json:"version,omitempty"`
	File     string   `json:"file"`
	Line     int      `json:"line,omitempty"`
	Pointer  string   `json:"pointer,omitempty"`
	Message  string   `json:"message"`
}

// Rule describes one check: its stable id, severity and what it asks for.
type Rule struct {
	ID       string
	Severity Severity
	Summary  string
}

// Rules is the catalogue of checks, in the order docs/contracts.md lists them.
var Rules = []Rule{
	{"load", Error, "the directory loads: JSON/YAML syntax, required fields, tool_id/version match their folder and file, schemas and CEL rules compile"},
	{contract.RuleKeywordUnknown, Error, "every keyword in parameters and result is a JSON Schema 2020-12 keyword, a toolgate extension or a vendor extension (x-VENDOR-NAME)"},
	{contract.RuleDraftUnsupported, Error, "schemas are JSON Schema 2020-12: no $schema of another draft, no keyword 2020-12 replaced (additionalItems, $recursiveRef)"},
	{contract.RuleExtensionUnknown, Error, "every x- key is a toolgate extension in its place or a vendor extension x-VENDOR-NAME; a near miss of a toolgate extension is an error"},
	{contract.RuleFormatUnknown, Error, "every format is one toolgate asserts"},
	{contract.RuleFieldUnknown, Error, "schema files and YAML files hold no unknown fields"},
	{"tool-id-format", Error, "tool_id is a stable dotted name: lowercase namespace.name ([a-z][a-z0-9_]*, at least one dot)"},
	{"name-changed", Warning, "the function name stays the same across versions"},
	{"owner-missing", Error, "owner.yaml names an owner"},
	{"risk-level-missing", Error, "owner.yaml sets risk_level (low, medium, high)"},
	{"consumers-missing", Warning, "owner.yaml lists the consumers"},
	{"description-missing", Error, "each version has a description"},
	{"object-not-closed", Error, "every object in parameters sets additionalProperties (false to close it; true or a schema declares it open on purpose)"},
	{"property-undescribed", Error, "every property in parameters has a description (a warning in result)"},
	{"money-not-integer", Error, "money fields (amount, price, cost, fee, total, balance...) are integers in minor units, not numbers"},
	{"enum-undescribed", Error, "a string enum's description mentions every value (or x-enum-descriptions describes each)"},
	{"error-category-missing", Error, "every error code has a category"},
	{"error-category-invalid", Error, "error categories are business, validation, permission, rate_limit or platform"},
	{"errors-missing", Warning, "mutating tools list their error catalogue"},
	{"idempotency-key-not-string", Error, "the x-idempotency-key property is a string"},
	{contract.RuleAnnotation, Error, "x-sensitive, x-idempotency-key and x-draft are booleans, x-idempotency-key sits on a top-level parameter, x-impact is funds, permissions or security, x-enum-descriptions describes values of its enum"},
	{"rule-field-unknown", Warning, "a rule's field points at a declared parameter"},
	{"golden-cases-missing", Error, "mutating tools have contract cases in contracts/golden/"},
	{contract.RuleCaseTool, Error, "a contract case names the tool whose folder holds it"},
	{contract.RuleCaseVersion, Error, "a contract case names a version the tool has"},
	{"case-versions-unmatched", Warning, "each entry of a contract case's tool.versions matches a version the tool has (a range that covers nothing guards nothing)"},
	{"case-expects-nothing", Warning, "a contract case states an expectation: expected_tool_arguments, expected or expected_agent_behavior"},
	{"file-unknown", Warning, "a tool folder holds only owner.yaml, release-policy.yaml, changelog.md, schemas/, contracts/ and upstream.json (a misspelt owner.yaml would not be read)"},
	{"case-id-mismatch", Warning, "a contract case's case_id matches its file name"},
	{"changelog-missing", Error, "each tool has a changelog.md"},
	{"changelog-version-missing", Error, "the changelog mentions every version"},
	{"versions-not-monotonic", Error, "the changelog's version headings run in one direction (newest first or oldest first), each once"},
	{"lock-invalid", Error, "toolgate.lock, when present, parses"},
	{"locked-version-changed", Error, "a released version's schema file matches its digest in toolgate.lock (released versions are immutable)"},
	{"decision-tool-unknown", Error, "a live rule record (decisions/, not superseded) names a tool of the directory"},
	{"decision-field-unknown", Error, "a live rule record relies only on parameters (JSON pointers) that a current (not deprecated) version of its tool has"},
	{"decision-value-unknown", Error, "a live rule record relies only on values that a current version accepts at their parameter (its enum or const; else its type)"},
	{"decision-incomplete", Warning, "a rule record states its context, alternatives and review_trigger"},
	{"decision-untestable", Warning, "a rule record lists what it relies_on: a rule that names no field or value cannot be held to the tool"},
	{"decision-edited-in-place", Error, "a rule record locked in toolgate.lock matches its digest (a locked record is superseded by a new one, never edited)"},
	{"decision-removed", Error, "a rule record locked in toolgate.lock is still present (a superseded record is kept as history)"},
	{"locked-version-removed", Warning, "a released version's schema file is still present (dropping it needs the deprecation window; see toolgate gate)"},
	{"version-removed-early", Error, "a released version's schema file is dropped only once release-policy.yaml deprecates it and its deprecation window (from toolgate.lock's deprecated_at) is over"},
	{"version-in-use", Error, "with --ledger: no schema file is gone while live (not terminal) actions in the ledger are bound to its version"},
	{RulePinInvalid, Error, "a tool's upstream.json (its pinned upstream definition) parses and names its tool"},
	{RulePinChanged, Error, "a tool's upstream.json matches its pin in toolgate.lock (a pin changes only through toolgate upstream accept)"},
	{RuleSensitiveUnchecked, Error, "an imported tool's fields were reviewed for x-sensitive marks (upstream.json todo lists \"x-sensitive\" until then)"},
	{RuleRulesUnchecked, Warning, "an imported tool's semantic rules were considered (upstream.json todo lists \"rules\" until then)"},
}

var severityOf = func() map[string]Severity {
	m := map[string]Severity{}
	for _, r := range Rules {
		m[r.ID] = r.Severity
	}
	return m
}()

// Run lints a tools directory. A directory that does not load still gets its load
// problems as findings (id "load", with file and line) plus every check that can run on
// the parts that did load. Findings are sorted by file, line, id and pointer.
func Run(dir string) []Finding { return RunWith(dir, Options{}) }

// Options are what RunWith may check beyond the directory.
type Options struct {
	// Now is the clock of the deprecation-window check. Default time.Now.
	Now func() time.Time
	// Uses are a ledger's actions per tool and version (toolgate lint
	// --ledger): a version whose file is gone while live actions are
	// bound to it is an error. Nil: no ledger is checked.
	Uses map[string][]ledger.VersionUse
}

// RunWith is Run with options.
func RunWith(dir string, opt Options) []Finding {
	now := time.Now
	if opt.Now != nil {
		now = opt.Now
	}
	reg, problems := contract.Inspect(dir)
	var out []Finding
	for _, p := range problems {
		out = append(out, Finding{ID: p.RuleID(), Severity: Error, File: p.File, Line: p.Line, Pointer: p.Pointer, Message: p.Message})
	}
	out = append(out, Check(reg)...)
	out = append(out, checkLock(dir, reg, now())...)
	out = append(out, checkUses(reg, opt.Uses)...)
	out = append(out, checkDecisions(reg, dir)...)
	out = append(out, checkPins(reg, dir)...)
	Sort(out)
	return out
}

// Check runs the checklist on a loaded registry (unsorted).
func Check(reg *contract.Registry) []Finding {
	var out []Finding
	for _, t := range reg.Tools() {
		c := &checker{tool: t}
		c.run()
		out = append(out, c.findings...)
	}
	return out
}

// HasErrors reports whether any finding is an error.
func HasErrors(fs []Finding) bool {
	for _, f := range fs {
		if f.Severity == Error {
			return true
		}
	}
	return false
}

// Sort orders findings by file, line, id, pointer and message.
func Sort(fs []Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := fs[i], fs[j]
		switch {
		case a.File != b.File:
			return a.File < b.File
		case a.Line != b.Line:
			return a.Line < b.Line
		case a.ID != b.ID:
			return a.ID < b.ID
		case a.Pointer != b.Pointer:
			return a.Pointer < b.Pointer
		}
		return a.Message < b.Message
	})
}

type checker struct {
	tool     *contract.Tool
	findings []Finding
	lines    map[*contract.Version]map[string]int // JSONLines of each version's file, read once
}

func (c *checker) add(id, version, file string, line int, pointer, msg string) {
	c.findings = append(c.findings, Finding{
		ID: id, Severity: severityOf[id], Tool: c.tool.ID, Version: version,
		File: file, Line: line, Pointer: pointer, Message: msg,
	})
}

func (c *checker) run() {
	t := c.tool
	c.checkToolID()
	c.checkOwner()
	mutating := false
	for _, v := range t.Versions {
		mutating = mutating || v.Mutating()
		c.checkVersion(v)
	}
	if mutating {
		golden := 0
		for _, cs := range t.Cases {
			if cs.Suite == "golden" {
				golden++
			}
		}
		if golden == 0 {
			c.add("golden-cases-missing", "", filepath.Join(t.Dir, "contracts", "golden"), 0, "",
				"mutating tool "+t.ID+" has no contract cases in contracts/golden/")
		}
	}
	for _, cs := range t.Cases {
		base := strings.TrimSuffix(filepath.Base(cs.File), filepath.Ext(cs.File))
		if cs.ID != base {
			c.add("case-id-mismatch", "", cs.File, yamlKeyLine(cs.File, "case_id"), "",
				"case_id "+cs.ID+" does not match the file name "+filepath.Base(cs.File))
		}
		for i, spec := range cs.VersionSpecs {
			matched := false
			for _, v := range t.Versions {
				matched = matched || spec.Matches(v.Version)
			}
			if !matched && i < len(cs.Versions) {
				c.add("case-versions-unmatched", "", cs.File, yamlKeyLine(cs.File, "tool"), "",
					"case "+cs.ID+": tool.versions \""+cs.Versions[i]+"\" matches no version of "+t.ID+", so the case covers nothing there")
			}
		}
		if !cs.HasExpectation {
			c.add("case-expects-nothing", "", cs.File, yamlKeyLine(cs.File, "case_id"), "",
				"case "+cs.ID+" expects nothing, so it passes whatever happens: add expected_tool_arguments, expected (tool_status, validation, expected_errors) or expected_agent_behavior")
		}
	}
	c.checkChangelog()
	c.checkFiles()
}

// toolEntries are what a tool folder may hold; anything else is probably a misspelling.
var toolEntries = []string{"owner.yaml", "release-policy.yaml", "changelog.md", "schemas", "contracts", "upstream.json"}

// checkFiles warns about files and folders of a tool folder the loader does not read.
func (c *checker) checkFiles() {
	entries, err := os.ReadDir(c.tool.Dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || contains(toolEntries, name) {
			continue
		}
		ext := strings.ToLower(filepath.Ext(name))
		near := suggest.Nearest(name, toolEntries, 3)
		switch {
		case e.IsDir(), ext == ".yaml", ext == ".yml", ext == ".json":
		case ext == ".md" && len(near) > 0: // a misspelt changelog.md
		default:
			continue // README.md, images, notes: the owners' business
		}
		msg := name + " is not read by toolgate"
		if len(near) > 0 {
			msg += "; " + suggest.DidYouMean(near...)
		} else {
			msg += " (a tool folder holds " + strings.Join(toolEntries, ", ") + ")"
		}
		c.add("file-unknown", "", filepath.Join(c.tool.Dir, name), 0, "", msg)
	}
}

// yamlKeyLine finds the line of a top-level key in a YAML file; 0 when not found.
func yamlKeyLine(file, key string) int {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	for i, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, key+":") {
			return i + 1
		}
	}
	return 0
}
