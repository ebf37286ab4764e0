// Package importer writes toolgate tool folders from definitions that
// already exist elsewhere: the tools/list of an MCP server (FromMCP) or the
// operations of an OpenAPI document (FromOpenAPI). Each tool gets
// schemas/v1.0.0.json (JSON Schema 2020-12, references resolved, every
// parameters object closed), owner.yaml, release-policy.yaml, changelog.md
// and upstream.json (the upstream definition, pinned in toolgate.lock), and a
// binding for toolgate.yaml. What only a person can decide (owners, x-sensitive
// marks, rules, descriptions the upstream lacks) is left for toolgate lint to
// report. See docs/upstreams.md.
package importer

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/lockfile"
	"go.yaml.in/yaml/v3"
)

// Version is the version every imported contract starts at.
const Version = "1.0.0"

// Options tune an import; the zero value works.
type Options struct {
	// Namespace is the tool ids' first part (namespace.name). Default: from
	// the MCP server's name or the OpenAPI document's title.
	Namespace string
	// Owner and RiskLevel fill owner.yaml; left empty, lint asks for them.
	Owner     string
	RiskLevel string
	// Now stamps the changelog and the pins. Default time.Now.
	Now func() time.Time
}

func (o Options) now() time.Time {
	if o.Now != nil {
		return o.Now().UTC()
	}
	return time.Now().UTC()
}

// Tool is one imported tool folder.
type Tool struct {
	ID     string
	Schema map[string]any // schemas/v1.0.0.json
	Pin    *lockfile.Pin  // upstream.json
	// Binding is the tool's entry under bindings: in toolgate.yaml.
	Binding map[string]any
	// Notes say what the import changed or left out of the upstream
	// definition to make a strict contract of it.
	Notes []string
	// Changelog is changelog.md.
	Changelog string
	// Owner and RiskLevel fill owner.yaml (Options).
	Owner, RiskLevel string
	// checked is the digest of the contract bytes checkContract parsed
	// without a problem ("" when it did not).
	checked string
}

// Write writes tools' folders into dir (the tools directory) and pins their
// upstream definitions in dir/toolgate.lock as pinned by "toolgate import".
// It refuses a tool whose folder exists, and writes nothing unless every
// folder loads with toolgate's strict loader. A contract the import already
// parsed with the strict loader (byte for byte) is not parsed again: the
// loader then reads the folders' other files with one contract standing in
// for the rest, which keeps a 1,000-operation import from compiling every
// schema twice.
func Write(dir string, tools []Tool, now time.Time) error {
	if len(tools) == 0 {
		return errors.New("nothing to import")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, t := range tools {
		if _, err := os.Stat(filepath.Join(dir, t.ID)); err == nil {
			return fmt.Errorf("%s already exists in %s: toolgate import writes new tools only (an upstream's changed definition is re-pinned with toolgate upstream accept, a new contract version is written by hand)", t.ID, dir)
		}
	}
	stage, err := os.MkdirTemp(dir, ".import-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(stage)
	for _, t := range tools {
		if err := writeFolder(stage, t); err != nil {
			return err
		}
	}
	if err := loadStage(stage, tools); err != nil {
		return fmt.Errorf("the imported contracts do not load (a defect of toolgate import): %w", err)
	}
	lock, err := lockfile.Read(dir)
	if err != nil {
		return err
	}
	if lock == nil {
		lock = &lockfile.Lock{LockVersion: lockfile.FormatVersion, Versions: []lockfile.Entry{}}
	}
	for _, t := range tools {
		if err := os.Rename(filepath.Join(stage, t.ID), filepath.Join(dir, t.ID)); err != nil {
			return err
		}
		lock.SetPin(lockfile.PinEntry{Tool: t.ID, File: filepath.ToSlash(filepath.Join(t.ID, lockfile.PinFileName)),
			Digest: t.Pin.Digest(), PinnedAt: now.UTC().Truncate(time.Second), PinnedBy: "toolgate import"})
	}
	return lockfile.WriteLock(dir, lock)
}

// checkContract refuses a tool whose contract the strict loader would refuse:
// what is left then is a mistake of the upstream's definition (a schema that
// is not valid JSON Schema, say), named as such rather than found by Write.
func checkContract(t *Tool) error {
	raw := marshal(t.Schema)
	if len(raw) > MaxContractBytes {
		return fmt.Errorf("its contract would be %d bytes, more than the %d MiB a contract may be", len(raw), MaxContractBytes>>20)
	}
	_, problems := contract.ParseVersion(filepath.Join(t.ID, "schemas", "v"+Version+".json"), raw, t.ID, Version)
	if len(problems) == 0 {
		t.checked = digest(raw)
		return nil
	}
	msgs := make([]string, 0, len(problems))
	for _, p := range problems {
		m := p.Message
		if len(m) > 200 {
			m = m[:200] + "…"
		}
		if p.Pointer != "" {
			m = p.Pointer + ": " + m
		}
		msgs = append(msgs, m)
	}
	if len(msgs) > 3 {
		msgs = append(msgs[:3], fmt.Sprintf("and %d more", len(msgs)-3))
	}
	return fmt.Errorf("its definition does not make a valid contract: %s", strings.Join(msgs, "; "))
}

// loadStage loads the staged folders with the strict loader; a schema file
// already checked is replaced by a minimal valid contract of the same tool
// while the loader reads the folder (then put back).
func loadStage(stage string, tools []Tool) error {
	type swap struct {
		path string
		data []byte
	}
	var swapped []swap
	defer func() {
		for _, s := range swapped {
			_ = os.WriteFile(s.path, s.data, 0o644)
		}
	}()
	for _, t := range tools {
		raw := marshal(t.Schema)
		if t.checked == "" || t.checked != digest(raw) {
			continue
		}
		path := filepath.Join(stage, t.ID, "schemas", "v"+Version+".json")
		stand := map[string]any{}
		for k, v := range t.Schema {
			stand[k] = v
		}
		stand["parameters"] = map[string]any{"type": "object", "additionalProperties": false}
		delete(stand, "result")
		if err := os.WriteFile(path, marshal(stand), 0o644); err != nil {
			return err
		}
		swapped = append(swapped, swap{path, raw})
	}
	_, err := contract.Load(stage)
	return err
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func writeFolder(root string, t Tool) error {
	dir := filepath.Join(root, t.ID)
	owner, err := ownerYAML(t)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, "schemas"), 0o755); err != nil {
		return err
	}
	files := map[string][]byte{
		filepath.Join("schemas", "v"+Version+".json"): marshal(t.Schema),
		"owner.yaml":          owner,
		"release-policy.yaml": []byte(releasePolicy),
		"changelog.md":        []byte(t.Changelog),
		lockfile.PinFileName:  t.Pin.Marshal(),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// marshal writes JSON indented, keys sorted, without HTML escapes.
func marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return b.Bytes()
}

// ownerYAML is owner.yaml, written by the YAML encoder and read back.
func ownerYAML(t Tool) ([]byte, error) {
	doc := &yaml.Node{Kind: yaml.MappingNode, HeadComment: "# Written by toolgate import: name the owner and the risk level (low, medium, high)\n# and the agents that use the tool (toolgate lint asks for each one left empty).",
		Content: []*yaml.Node{key("owner"), str(t.Owner), key("risk_level"), str(t.RiskLevel), key("consumers"), {Kind: yaml.SequenceNode, Style: yaml.FlowStyle}}}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	out := escapeHidden(b.String())
	if err := sameYAML(out, map[string]any{"owner": t.Owner, "risk_level": t.RiskLevel, "consumers": []any{}}); err != nil {
		return nil, fmt.Errorf("%s/owner.yaml: %w", t.ID, err)
	}
	return []byte(out), nil
}

const releasePolicy = `compatible_with: []
deprecated_versions: []
deprecation_window_days: 30
gate:
  golden_min_pass: 1.0
  regression_min_pass: 1.0
  shadow_min_pass: 0.95
  high_risk_requires_approval: true
`

// contractOf assembles a schema file.
func contractOf(id, name, description, effect string, params, result any, errs []map[string]any) map[string]any {
	c := map[string]any{
		"tool_id": id, "version": Version, "name": name, "description": description, "effect": effect,
		"parameters": params, "errors": errs, "rules": []any{},
	}
	if errs == nil {
		c["errors"] = []any{}
	}
	if result != nil {
		c["result"] = result
	}
	return c
}

func changelog(id, source string, notes []string, now time.Time) string {
	var b strings.Builder
	// A note quotes names the source chose: one line each, what would not
	// show as itself escaped, so none can start a heading of its own.
	fmt.Fprintf(&b, "# %s changelog\n\n## %s\n\n- Imported by toolgate import on %s from %s.\n", id, Version, now.Format("2006-01-02"), Visible(source))
	if len(notes) > 0 {
		b.WriteString("- What the import changed to make a strict JSON Schema 2020-12 contract of it:\n")
		for _, n := range notes {
			fmt.Fprintf(&b, "  - %s\n", Visible(n))
		}
	}
	return b.String()
}

var (
	nonIdent = regexp.MustCompile(`[^a-z0-9_]+`)
	camel    = regexp.MustCompile(`([a-z0-9])([A-Z])`)
)

// ident makes a lowercase identifier part of a tool id from any name:
// createTicket, create-ticket and "Create ticket" are create_ticket.
func ident(s string) string {
	s = camel.ReplaceAllString(s, "${1}_${2}")
	s = nonIdent.ReplaceAllString(strings.ToLower(s), "_")
	s = strings.Trim(s, "_")
	for strings.Contains(s, "__") {
		s = strings.ReplaceAll(s, "__", "_")
	}
	if s == "" {
		return "tool"
	}
	if s[0] < 'a' || s[0] > 'z' {
		s = "t_" + s
	}
	return s
}

// namespace is the tool ids' namespace: the option, or one made from name.
func namespace(opt, name string) string {
	if opt != "" {
		return opt
	}
	return ident(name)
}

// CheckNamespace says what is wrong with a --namespace, "" when nothing is.
func CheckNamespace(ns string) string {
	if !regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$`).MatchString(ns) {
		return fmt.Sprintf("namespace %q must be lowercase letters, digits and underscores (dots between parts), starting with a letter", ns)
	}
	return ""
}

// uniqueIDs refuses two tools with one id.
func uniqueIDs(tools []Tool) error {
	seen := map[string]bool{}
	for _, t := range tools {
		if seen[t.ID] {
			return fmt.Errorf("two imported tools would be %s: import them one at a time with another --namespace", t.ID)
		}
		seen[t.ID] = true
	}
	return nil
}
