package lockfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/toolgate/toolgate/internal/canon"
)

// PinFileName is the file in a tool's folder that pins the upstream
// definition the tool was imported from (toolgate import) or last accepted
// from (toolgate upstream accept).
const PinFileName = "upstream.json"

// PinFormatVersion is the value of a pin file's "pin_version" field.
const PinFormatVersion = 1

// Kinds of upstream a pin names.
const (
	SourceMCP     = "mcp"     // a tool of an MCP server: its tools/list entry
	SourceOpenAPI = "openapi" // an operation of an OpenAPI document
)

// Pin is the content of TOOL/upstream.json: where the tool's definition comes
// from and the definition itself, as the upstream gave it. Its digest (of
// the definition alone, canonical JSON) is locked in toolgate.lock, so the
// rest of the file (the review to-dos) may be edited freely.
type Pin struct {
	PinVersion int    `json:"pin_version"`
	ToolID     string `json:"tool_id"`
	Source     Source `json:"source"`
	// Definition is the upstream's definition: for MCP the tools/list entry
	// (name, title, description, inputSchema, outputSchema, annotations…),
	// for OpenAPI the operation with its references resolved.
	Definition json.RawMessage `json:"definition"`
	// Todo lists what a person must still review in the imported contract
	// (PinTodos); lint reports each one left, and the person removes it when done.
	Todo []string `json:"todo,omitempty"`
}

// Source is where a pinned definition comes from.
type Source struct {
	Kind      string `json:"kind"`                // SourceMCP or SourceOpenAPI
	URL       string `json:"url,omitempty"`       // MCP: the server's endpoint
	Tool      string `json:"tool,omitempty"`      // MCP: the tool's name on the server
	File      string `json:"file,omitempty"`      // OpenAPI: the document, as given to import
	Operation string `json:"operation,omitempty"` // OpenAPI: the operation id (or "METHOD /path")
}

// Review to-dos of an imported tool (Pin.Todo).
const (
	TodoSensitive = "x-sensitive" // mark the parameters and result fields that must never be logged raw
	TodoRules     = "rules"       // write the tool's semantic rules (CEL), or decide it needs none
)

// PinTodos are the review to-dos a pin may list, with what each asks.
var PinTodos = map[string]string{
	TodoSensitive: "mark every parameter and result field that must never reach a log raw with \"x-sensitive\": true (the import marks only password fields)",
	TodoRules:     "add the semantic rules (CEL) the tool's arguments must obey, or decide it needs none",
}

// DefinitionDigest is "sha256:<hex>" of the canonical JSON (RFC 8785) of a
// definition: the same definition gives the same digest however it was
// formatted.
func DefinitionDigest(def []byte) (string, error) {
	c, err := canon.Transform(def)
	if err != nil {
		return "", fmt.Errorf("definition is not JSON: %w", err)
	}
	return Digest(c), nil
}

// ParsePin decodes a pin file; unknown fields are refused.
func ParsePin(data []byte) (*Pin, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var p Pin
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("parse %s: %w", PinFileName, err)
	}
	switch {
	case p.PinVersion != PinFormatVersion:
		return nil, fmt.Errorf("parse %s: pin_version %d is not %d", PinFileName, p.PinVersion, PinFormatVersion)
	case p.ToolID == "":
		return nil, fmt.Errorf("parse %s: tool_id is required", PinFileName)
	case p.Source.Kind != SourceMCP && p.Source.Kind != SourceOpenAPI:
		return nil, fmt.Errorf("parse %s: source.kind %q is not %s or %s", PinFileName, p.Source.Kind, SourceMCP, SourceOpenAPI)
	case p.Source.Kind == SourceMCP && (p.Source.URL == "" || p.Source.Tool == ""):
		return nil, fmt.Errorf("parse %s: an mcp source needs url and tool", PinFileName)
	case len(bytes.TrimSpace(p.Definition)) == 0 || bytes.TrimSpace(p.Definition)[0] != '{':
		return nil, fmt.Errorf("parse %s: definition must be a JSON object", PinFileName)
	}
	if _, err := DefinitionDigest(p.Definition); err != nil {
		return nil, fmt.Errorf("parse %s: %w", PinFileName, err)
	}
	for _, t := range p.Todo {
		if _, ok := PinTodos[t]; !ok {
			return nil, fmt.Errorf("parse %s: todo %q is not one of %s", PinFileName, t, strings.Join(sortedKeys(PinTodos), ", "))
		}
	}
	return &p, nil
}

// Marshal encodes the pin as indented JSON with a trailing newline.
func (p *Pin) Marshal() []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	_ = enc.Encode(p)
	return b.Bytes()
}

// Digest is the pin's definition digest (DefinitionDigest).
func (p *Pin) Digest() string {
	d, _ := DefinitionDigest(p.Definition) // ParsePin refused a definition that is not JSON
	return d
}

// ReadPin reads dir/TOOL/upstream.json; (nil, nil) when the tool has none.
func ReadPin(dir, toolID string) (*Pin, error) {
	data, err := os.ReadFile(filepath.Join(dir, toolID, PinFileName))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	p, err := ParsePin(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(toolID, PinFileName), err)
	}
	if p.ToolID != toolID {
		return nil, fmt.Errorf("%s: tool_id %q is not its folder's %q", filepath.Join(toolID, PinFileName), p.ToolID, toolID)
	}
	return p, nil
}

// PinEntry is one pinned upstream definition in toolgate.lock.
type PinEntry struct {
	Tool string `json:"tool"`
	// File is the pin file's path relative to the tools directory, with forward slashes.
	File string `json:"file"`
	// Digest is the DefinitionDigest of the pinned definition.
	Digest string `json:"digest"`
	// PinnedAt and PinnedBy say when and by whom the definition was pinned:
	// "toolgate import", or the operator who accepted it.
	PinnedAt time.Time `json:"pinned_at"`
	PinnedBy string    `json:"pinned_by"`
	// Previous is the digest this pin replaced, "" for a first pin.
	Previous string `json:"previous_digest,omitempty"`
}

// FindPin returns the lock entry of a tool's pinned upstream definition, or nil.
func (l *Lock) FindPin(tool string) *PinEntry {
	if l == nil {
		return nil
	}
	for i := range l.Pins {
		if l.Pins[i].Tool == tool {
			return &l.Pins[i]
		}
	}
	return nil
}

// SetPin records (or replaces) the pin of entry.Tool, keeping the pins sorted.
func (l *Lock) SetPin(entry PinEntry) {
	for i := range l.Pins {
		if l.Pins[i].Tool == entry.Tool {
			l.Pins[i] = entry
			return
		}
	}
	l.Pins = append(l.Pins, entry)
	sort.Slice(l.Pins, func(i, j int) bool { return l.Pins[i].Tool < l.Pins[j].Tool })
}

func (l *Lock) checkPinEntries() error {
	seen := map[string]bool{}
	for i, e := range l.Pins {
		if e.Tool == "" || e.File == "" || !strings.HasPrefix(e.Digest, "sha256:") || e.PinnedBy == "" {
			return fmt.Errorf("parse %s: pin entry %d needs tool, file, a sha256: digest and pinned_by", FileName, i)
		}
		if seen[e.Tool] {
			return fmt.Errorf("parse %s: tool %s is pinned twice", FileName, e.Tool)
		}
		seen[e.Tool] = true
	}
	return nil
}

// CheckPin holds a tool's pin file against its lock entry: nil when they
// agree (or the tool has neither). A pin file without an entry, an entry
// without its file, or a definition that does not match the locked digest
// (edited by hand instead of accepted) is an error.
func CheckPin(dir, toolID string, l *Lock) (*Pin, error) {
	p, err := ReadPin(dir, toolID)
	if err != nil {
		return nil, err
	}
	e := l.FindPin(toolID)
	rel := filepath.ToSlash(filepath.Join(toolID, PinFileName))
	switch {
	case p == nil && e == nil:
		return nil, nil
	case p == nil:
		return nil, fmt.Errorf("%s is locked in %s (%s) but missing", rel, FileName, short(e.Digest))
	case e == nil:
		return p, fmt.Errorf("%s is not locked in %s: run toolgate lock, or pin it with toolgate upstream accept --tool %s", rel, FileName, toolID)
	case e.Digest != p.Digest():
		return p, fmt.Errorf("%s's definition is %s, locked as %s: a pinned definition changes only through toolgate upstream accept --tool %s", rel, short(p.Digest()), short(e.Digest), toolID)
	}
	return p, nil
}

// WritePin writes dir/TOOL/upstream.json and records it in l as pinned by
// by at now (replacing an earlier pin, whose digest it keeps as Previous).
func WritePin(dir string, l *Lock, p *Pin, by string, now time.Time) error {
	if err := os.MkdirAll(filepath.Join(dir, p.ToolID), 0o755); err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(dir, p.ToolID, PinFileName), p.Marshal()); err != nil {
		return err
	}
	e := PinEntry{Tool: p.ToolID, File: filepath.ToSlash(filepath.Join(p.ToolID, PinFileName)), Digest: p.Digest(),
		PinnedAt: now.UTC().Truncate(time.Second), PinnedBy: by}
	if old := l.FindPin(p.ToolID); old != nil && old.Digest != e.Digest {
		e.Previous = old.Digest
	} else if old != nil {
		e.Previous = old.Previous
	}
	l.SetPin(e)
	return nil
}

// WriteLock writes l to dir/toolgate.lock (atomically: a gateway watching
// the lock never reads half a file).
func WriteLock(dir string, l *Lock) error {
	return writeFileAtomic(filepath.Join(dir, FileName), l.Marshal())
}

func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// buildPins keeps prev's pin entries and locks every pin file of reg's tools
// that has none yet; a pin file whose definition differs from its entry is a
// Changed violation (unless force, which re-locks it as pinned by "toolgate
// lock --force").
func buildPins(dir string, toolIDs []string, prev *Lock, force bool, now time.Time, changed []Violation) ([]PinEntry, []Violation) {
	out := &Lock{}
	if prev != nil {
		out.Pins = append(out.Pins, prev.Pins...)
	}
	for _, id := range toolIDs {
		p, err := ReadPin(dir, id)
		if err != nil || p == nil {
			continue // lint reports an unreadable pin file
		}
		old := prev.FindPin(id)
		switch {
		case old == nil:
			out.SetPin(PinEntry{Tool: id, File: filepath.ToSlash(filepath.Join(id, PinFileName)), Digest: p.Digest(), PinnedAt: now, PinnedBy: "toolgate lock"})
		case old.Digest != p.Digest() && force:
			out.SetPin(PinEntry{Tool: id, File: old.File, Digest: p.Digest(), PinnedAt: now, PinnedBy: "toolgate lock --force", Previous: old.Digest})
		case old.Digest != p.Digest():
			changed = append(changed, Violation{Kind: Changed, Entry: Entry{Tool: id, File: old.File, Digest: old.Digest}, Got: p.Digest(), Pin: true})
		}
	}
	return out.Pins, changed
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
