package contract

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/toolgate/toolgate/internal/suggest"
)

// Problem is one thing wrong with a tools directory.
type Problem struct {
	File string `json:"file"`
	Line int    `json:"line,omitempty"` // 0 when unknown
	// Rule is the stable id lint reports the problem under (RuleKeywordUnknown, ...);
	// "" means RuleLoad.
	Rule string `json:"rule,omitempty"`
	// Pointer is the JSON pointer of the value inside a schema file, "" elsewhere.
	Pointer string `json:"pointer,omitempty"`
	Message string `json:"message"`
}

// RuleID is the problem's rule id, RuleLoad when it has none of its own.
func (p Problem) RuleID() string {
	if p.Rule == "" {
		return RuleLoad
	}
	return p.Rule
}

func (p Problem) String() string {
	switch {
	case p.File == "":
		return p.Message
	case p.Line > 0:
		return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Message)
	}
	return p.File + ": " + p.Message
}

// LoadError refuses a broken tools directory and lists every problem found.
type LoadError struct{ Problems []Problem }

// Error lists the problems, one per line.
func (e *LoadError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// Reserved top-level folders of a tools directory that are not tools.
var reservedDirs = map[string]bool{"agents": true, "approvals": true, "decisions": true}

var schemaFileRE = regexp.MustCompile(`^v(\d+\.\d+\.\d+)\.json$`)

// Load reads a tools directory (docs/reference/files.md): every schema compiled, every rule compiled. A
// broken directory returns a *LoadError listing every problem with its file and line.
func Load(dir string) (*Registry, error) {
	return loadFS(os.DirFS(dir), dir)
}

// LoadFS is Load for a tools directory that is a file system, such as the
// bundled examples embedded in the binary: its root holds one folder per tool.
// Problems name files by their path inside fsys; the registry's Dir is ".".
func LoadFS(fsys fs.FS) (*Registry, error) {
	return loadFS(fsys, ".")
}

func loadFS(fsys fs.FS, dir string) (*Registry, error) {
	reg, problems := inspect(fsys, dir)
	if len(problems) > 0 {
		return nil, &LoadError{Problems: problems}
	}
	return reg, nil
}

// Inspect loads what it can of a tools directory and returns the problems it found. The
// registry holds only the versions and cases that loaded cleanly; tools appear as long as
// their folder could be read. Lint uses it to check a directory that does not load.
func Inspect(dir string) (*Registry, []Problem) {
	return inspect(os.DirFS(dir), dir)
}

// InspectFS is Inspect for a tools directory that is a file system (see LoadFS).
func InspectFS(fsys fs.FS) (*Registry, []Problem) {
	return inspect(fsys, ".")
}

// inspect reads the tools directory fsys; dir is how its paths are named in
// the registry and in problems.
func inspect(fsys fs.FS, dir string) (*Registry, []Problem) {
	l := &loader{fsys: fsys, root: dir}
	reg := &Registry{Dir: dir, byID: map[string]*Tool{}}
	entries, err := l.readDir(dir)
	if err != nil {
		l.add(dir, 0, "cannot read tools directory: %v", unwrapPath(err))
		return reg, l.problems
	}
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || strings.HasPrefix(name, ".") || reservedDirs[name] {
			continue
		}
		t := l.loadTool(filepath.Join(dir, name), name)
		reg.tools = append(reg.tools, t)
		reg.byID[t.ID] = t
	}
	if len(reg.tools) == 0 {
		l.add(dir, 0, "no tool folders found")
	}
	sortTools(reg.tools)
	l.loadShared(reg)
	return reg, l.problems
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

type loader struct {
	problems []Problem
	fsys     fs.FS  // the tools directory
	root     string // the name of fsys's root in paths (Registry.Dir)
}

// readFile and readDir read a path named under root from fsys.
func (l *loader) readFile(path string) ([]byte, error) { return fs.ReadFile(l.fsys, l.fsPath(path)) }
func (l *loader) readDir(path string) ([]fs.DirEntry, error) {
	return fs.ReadDir(l.fsys, l.fsPath(path))
}

func (l *loader) fsPath(path string) string {
	rel, err := filepath.Rel(l.root, path)
	if err != nil {
		return path // not under root: fsys refuses it
	}
	return filepath.ToSlash(rel)
}

func (l *loader) add(file string, line int, format string, args ...any) {
	l.problems = append(l.problems, Problem{File: file, Line: line, Message: fmt.Sprintf(format, args...)})
}

// addRule records a problem with its rule id and JSON pointer.
func (l *loader) addRule(rule, file string, line int, pointer, msg string) {
	l.problems = append(l.problems, Problem{File: file, Line: line, Rule: rule, Pointer: pointer, Message: msg})
}

func (l *loader) loadTool(dir, id string) *Tool {
	t := &Tool{ID: id, Dir: dir}
	l.loadVersions(t)
	l.loadOwner(t)
	l.loadPolicy(t)
	if b, err := l.readFile(filepath.Join(dir, "changelog.md")); err == nil {
		t.Changelog = string(b)
		t.ChangelogFile = filepath.Join(dir, "changelog.md")
	}
	l.loadCases(t)
	return t
}

func (l *loader) loadVersions(t *Tool) {
	sdir := filepath.Join(t.Dir, "schemas")
	entries, err := l.readDir(sdir)
	if err != nil {
		l.add(t.Dir, 0, "tool %s has no schemas/ folder", t.ID)
		return
	}
	found := 0
	for _, e := range entries {
		path := filepath.Join(sdir, e.Name())
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		m := schemaFileRE.FindStringSubmatch(e.Name())
		if m == nil {
			l.add(path, 0, "schema file name must be vMAJOR.MINOR.PATCH.json")
			continue
		}
		found++
		if _, ok := ParseSemver(m[1]); !ok {
			l.add(path, 0, "version %q in the file name is not semver (MAJOR.MINOR.PATCH, no leading zeros)", m[1])
			continue
		}
		if v := l.loadVersion(path, t.ID, m[1]); v != nil {
			t.Versions = append(t.Versions, v)
		}
	}
	if found == 0 {
		l.add(sdir, 0, "tool %s has no schema files (schemas/vMAJOR.MINOR.PATCH.json)", t.ID)
	}
	sort.Slice(t.Versions, func(i, j int) bool {
		a, _ := ParseSemver(t.Versions[i].Version)
		b, _ := ParseSemver(t.Versions[j].Version)
		return a.Compare(b) < 0
	})
}

var schemaFields = map[string]bool{
	"$schema": true, "tool_id": true, "version": true, "name": true, "description": true,
	"effect": true, "parameters": true, "result": true, "errors": true, "rules": true,
}

var (
	errorFields = []string{"code", "category", "http_status", "retryable"}
	ruleFields  = []string{"id", "rule", "message", "field", "outcome"}
)

// unknownEntryFields checks the keys of each object of a list (errors[], rules[]) against
// known; vendor extensions are allowed. It returns [rule, pointer, message] triples.
func unknownEntryFields(raw json.RawMessage, base string, known []string) [][3]string {
	var entries []map[string]json.RawMessage
	if json.Unmarshal(raw, &entries) != nil {
		return nil // the shape is reported by the caller
	}
	var out [][3]string
	for i, e := range entries {
		for _, k := range sortedKeys(e) {
			ptr := fmt.Sprintf("%s/%d/%s", base, i, escapePointer(k))
			switch {
			case contains(known, k):
			case strings.HasPrefix(k, "x-"):
				if msg := checkExtensionKey(k, nil); msg != "" {
					out = append(out, [3]string{RuleExtensionUnknown, ptr, ptr + ": " + msg})
				}
			default:
				msg := fmt.Sprintf("%s: unknown field %q", ptr, k)
				if near := suggest.Nearest(k, known, 2); len(near) > 0 {
					msg += "; " + suggest.DidYouMean(near...)
				} else {
					msg += " (fields: " + strings.Join(known, ", ") + ")"
				}
				out = append(out, [3]string{RuleFieldUnknown, ptr, msg})
			}
		}
	}
	return out
}

// unknownSchemaField is the message for an unknown top-level field of a schema file.
func unknownSchemaField(k string) string {
	known := make([]string, 0, len(schemaFields))
	for f := range schemaFields {
		known = append(known, f)
	}
	sort.Strings(known)
	if near := suggest.Nearest(k, append(known, extensionNames(FileExtensions)...), 2); len(near) > 0 {
		return fmt.Sprintf("unknown field %q; %s", k, suggest.DidYouMean(near...))
	}
	return fmt.Sprintf("unknown field %q: a schema file holds %s; extensions are %s", k, strings.Join(known, ", "), VendorRule)
}

// loadVersion reads and compiles one schema file; nil when it has problems.
func (l *loader) loadVersion(path, toolID, fileVersion string) *Version {
	raw, err := l.readFile(path)
	if err != nil {
		l.add(path, 0, "cannot read: %v", unwrapPath(err))
		return nil
	}
	return l.parseVersion(path, raw, toolID, fileVersion)
}

// ParseVersion compiles the bytes of one schema file as if read from path (which names the
// tool folder and version only through toolID and fileVersion). It reads no files.
func ParseVersion(path string, raw []byte, toolID, fileVersion string) (*Version, []Problem) {
	l := &loader{}
	v := l.parseVersion(path, raw, toolID, fileVersion)
	return v, l.problems
}

// CheckFile checks one schema file on its own, as the loader would in its tool folder
// (keywords, extensions, fields, rules), taking its tool and version from the file itself.
// Commands that take a schema file by path (toolgate diff) refuse one with problems.
func CheckFile(path string, raw []byte) []Problem {
	var head struct {
		ToolID  string `json:"tool_id"`
		Version string `json:"version"`
	}
	json.Unmarshal(raw, &head)
	_, problems := ParseVersion(path, raw, head.ToolID, head.Version)
	return problems
}

func (l *loader) parseVersion(path string, raw []byte, toolID, fileVersion string) *Version {
	before := len(l.problems)
	var lines map[string]int
	lineAt := func(ptr string) int {
		if lines == nil {
			lines = JSONLines(raw)
		}
		return lineOf(lines, ptr)
	}
	bad := func(ptr, format string, args ...any) {
		l.add(path, lineAt(ptr), format, args...)
	}
	badRule := func(rule, ptr, msg string) {
		l.addRule(rule, path, lineAt(ptr), ptr, msg)
	}
	whole, err := DecodeJSON(raw)
	if err != nil {
		l.add(path, 0, "%v", err)
		if line, ok := errLine(err); ok {
			l.problems[len(l.problems)-1].Line = line
		}
		return nil
	}
	// The schemas' references are bounded before anything resolves them
	// (refs.go), on this first decoding: a refused file is decoded once,
	// and its line is not looked for (that would decode it again).
	if m, ok := whole.(map[string]any); ok {
		for _, field := range [...]string{"parameters", "result"} {
			if p := checkRefs(m[field], "/"+field); p != nil {
				l.add(path, 0, "%s v%s: %s: %s", toolID, fileVersion, p.pointer, p.message)
				return nil
			}
		}
	}
	whole = nil
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		bad("", "a schema file must be a JSON object")
		return nil
	}
	fileExts := extensionNames(FileExtensions)
	for _, k := range sortedKeys(fields) {
		ptr := "/" + escapePointer(k)
		switch {
		case schemaFields[k]:
		case contains(fileExts, k):
			var b bool
			if json.Unmarshal(fields[k], &b) != nil {
				badRule(RuleAnnotation, ptr, fmt.Sprintf("%s must be true or false, not %s", k, oneLine(string(fields[k]))))
			}
		case strings.HasPrefix(k, "x-"):
			if msg := checkExtensionKey(k, fileExts); msg != "" {
				badRule(RuleExtensionUnknown, ptr, msg)
			}
		default:
			badRule(RuleFieldUnknown, ptr, unknownSchemaField(k))
		}
	}
	v := &Version{File: path, Raw: raw}
	str := func(key string, dst *string, required bool) {
		r, ok := fields[key]
		if !ok {
			if required {
				bad("", "missing required field %q", key)
			}
			return
		}
		if err := json.Unmarshal(r, dst); err != nil {
			bad("/"+key, "%q must be a string", key)
		}
	}
	str("tool_id", &v.ToolID, true)
	str("version", &v.Version, true)
	str("name", &v.Name, true)
	str("description", &v.Description, false)
	str("effect", &v.Effect, true)
	if v.ToolID != "" && v.ToolID != toolID {
		bad("/tool_id", "tool_id %q does not match its folder %q", v.ToolID, toolID)
	}
	if v.Version != "" && v.Version != fileVersion {
		bad("/version", "version %q does not match the file name (v%s.json)", v.Version, fileVersion)
	}
	if v.Effect != "" && v.Effect != EffectMutating && v.Effect != EffectReadOnly {
		bad("/effect", "effect must be \"mutating\" or \"read_only\", not %q", v.Effect)
	}
	label := fmt.Sprintf("%s v%s", toolID, fileVersion)
	// parameters and result
	if r, ok := fields["parameters"]; !ok {
		bad("", "missing required field \"parameters\"")
	} else {
		v.Parameters = r
		v.params, v.paramsValue = l.compile(r, "parameters", label, bad, badRule)
		if m := asMap(v.paramsValue); v.paramsValue != nil && (m == nil || m["type"] != "object") {
			bad("/parameters", "parameters must be a schema with \"type\": \"object\"")
		}
	}
	if r, ok := fields["result"]; ok {
		v.Result = r
		v.result, v.resultValue = l.compile(r, "result", label, bad, badRule)
	}
	// errors catalogue
	if r, ok := fields["errors"]; ok {
		for _, p := range unknownEntryFields(r, "/errors", errorFields) {
			badRule(p[0], p[1], p[2])
		}
		if err := json.Unmarshal(r, &v.Errors); err != nil {
			bad("/errors", "errors must be a list of {code, category, http_status, retryable}: %v", err)
		}
		seen := map[string]bool{}
		for i, e := range v.Errors {
			ptr := fmt.Sprintf("/errors/%d", i)
			if e.Code == "" {
				bad(ptr, "error %d has no code", i)
			} else if seen[e.Code] {
				bad(ptr, "error code %s is listed twice", e.Code)
			}
			seen[e.Code] = true
			if e.HTTPStatus != 0 && (e.HTTPStatus < 400 || e.HTTPStatus > 599) {
				bad(ptr+"/http_status", "error %s: http_status %d is not a 4xx or 5xx status", e.Code, e.HTTPStatus)
			}
		}
	}
	// rules
	if r, ok := fields["rules"]; ok {
		for _, p := range unknownEntryFields(r, "/rules", ruleFields) {
			badRule(p[0], p[1], p[2])
		}
		if err := json.Unmarshal(r, &v.Rules); err != nil {
			bad("/rules", "rules must be a list of {id, rule, message, field, outcome}: %v", err)
		}
		seen := map[string]bool{}
		for i := range v.Rules {
			rule := &v.Rules[i]
			ptr := fmt.Sprintf("/rules/%d", i)
			if rule.Outcome == "" {
				rule.Outcome = OutcomeReject
			}
			switch {
			case rule.ID == "":
				bad(ptr, "%s: rule %d has no id", label, i)
				continue
			case seen[rule.ID]:
				bad(ptr, "%s: rule %s is listed twice", label, rule.ID)
			}
			seen[rule.ID] = true
			if rule.Outcome != OutcomeReject && rule.Outcome != OutcomeReview {
				bad(ptr+"/outcome", "%s: rule %s: outcome must be \"reject\" or \"review\", not %q", label, rule.ID, rule.Outcome)
			}
			if rule.Field != "" && !strings.HasPrefix(rule.Field, "/") {
				bad(ptr+"/field", "%s: rule %s: field must be a JSON pointer such as /ticket_id", label, rule.ID)
			}
			prg, err := compileRule(*rule)
			if err != nil {
				bad(ptr+"/rule", "%s: rule %s %v", label, rule.ID, oneLine(err.Error()))
				continue
			}
			v.programs = append(v.programs, prg)
		}
	}
	if v.sensParams, err = sensitivePointers(v.params); err != nil {
		badRule(RuleAnnotation, "/parameters", fmt.Sprintf("%s: parameters: %v", label, err))
	}
	if v.sensResult, err = sensitivePointers(v.result); err != nil {
		badRule(RuleAnnotation, "/result", fmt.Sprintf("%s: result: %v", label, err))
	}
	if len(l.problems) > before {
		return nil
	}
	v.idemKey = idempotencyKeyProperty(v.paramsValue)
	return v
}

// compile checks the keywords of one embedded schema and compiles it; it reports problems
// through bad and badRule.
func (l *loader) compile(r json.RawMessage, field, label string, bad func(string, string, ...any), badRule func(rule, ptr, msg string)) (*Schema, any) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(r))
	if err != nil {
		bad("/"+field, "%s: %s is not valid JSON: %v", label, field, err)
		return nil, nil
	}
	for _, p := range checkKeywords(doc, "/"+field, field == "parameters") {
		badRule(p.rule, p.pointer, p.message)
	}
	s, err := compileSchemaValue(doc, "urn:toolgate:"+field)
	if err != nil {
		bad("/"+field, "%s: %s schema does not compile: %s", label, field, oneLine(err.Error()))
		return nil, doc
	}
	return s, doc
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

var lineRE = regexp.MustCompile(`at line (\d+)`)

func errLine(err error) (int, bool) {
	m := lineRE.FindStringSubmatch(err.Error())
	if m == nil {
		return 0, false
	}
	n := 0
	fmt.Sscan(m[1], &n)
	return n, true
}
