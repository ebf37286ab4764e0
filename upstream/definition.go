package upstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolgate/toolgate/internal/canon"
	"github.com/toolgate/toolgate/schemadiff"
)

// Definition returns a tool's definition as a server listed it, as canonical
// JSON (RFC 8785): what a pin stores and what drift is measured on.
func Definition(t *mcp.Tool) (json.RawMessage, error) {
	raw, err := json.Marshal(t)
	if err != nil {
		return nil, fmt.Errorf("tool %q: %w", t.Name, err)
	}
	c, err := canon.Transform(raw)
	if err != nil {
		return nil, fmt.Errorf("tool %q: %w", t.Name, err)
	}
	return c, nil
}

// Drift is how a live definition differs from the pinned one.
type Drift struct {
	// Changes are schemadiff's classified changes: the tool's name,
	// description and effect (readOnlyHint), its inputSchema in the input
	// direction (old agents write, the changed tool reads) and its
	// outputSchema in the output direction.
	Changes []schemadiff.Change `json:"changes"`
	// Tier is the highest tier among Changes; none when only Other changed.
	Tier schemadiff.Tier `json:"tier"`
	// Other names the other fields of the definition that changed (title,
	// annotations, icons, _meta): compatible, reported.
	Other []string `json:"other,omitempty"`
	// Descriptions are the changed descriptions' texts, pinned and live, in
	// the order of Changes: a reviewer reads what the model will read.
	Descriptions []DescriptionChange `json:"descriptions,omitempty"`
	// Stops reports a change that stops the tool: a high_risk or major one,
	// or any change of a description (the tool's or a property's: what a
	// model reads is an instruction, and a changed instruction is how tools
	// are poisoned).
	Stops bool `json:"stops"`
}

// DescriptionChange is one changed description: at Pointer (schemadiff's:
// /description is the tool's, /parameters/… and /result/… are inside its
// inputSchema and outputSchema), the pinned and the live text; nil where
// there is none (added, removed, or not found at the pointer).
type DescriptionChange struct {
	Pointer string  `json:"pointer"`
	Pinned  *string `json:"pinned"`
	Live    *string `json:"live"`
}

// Changed reports whether anything differs.
func (d Drift) Changed() bool { return len(d.Changes) > 0 || len(d.Other) > 0 }

// Summary is one line: the tier and the first changes.
func (d Drift) Summary() string {
	if !d.Changed() {
		return "no change"
	}
	var b bytes.Buffer
	tier := d.Tier
	if len(d.Changes) == 0 {
		tier = schemadiff.TierCompatible
	}
	fmt.Fprintf(&b, "%s:", tier)
	for i, c := range d.Changes {
		if i == 3 {
			fmt.Fprintf(&b, " and %d more", len(d.Changes)-3)
			break
		}
		if i > 0 {
			b.WriteString(";")
		}
		fmt.Fprintf(&b, " %s %s at %s (%s)", c.Tier, c.Kind, c.Pointer, c.Detail)
	}
	if len(d.Other) > 0 {
		if len(d.Changes) > 0 {
			b.WriteString(";")
		}
		fmt.Fprintf(&b, " changed %v", d.Other)
	}
	return b.String()
}

// definitionFields is what Compare reads of a definition.
type definitionFields struct {
	Name         string `json:"name"`
	Description  string `json:"description"`
	InputSchema  any    `json:"inputSchema"`
	OutputSchema any    `json:"outputSchema"`
	Annotations  *struct {
		ReadOnlyHint bool `json:"readOnlyHint"`
	} `json:"annotations"`
}

func decodeDefinition(raw []byte) (definitionFields, map[string]json.RawMessage, error) {
	var f definitionFields
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // bounds are compared exactly
	if err := dec.Decode(&f); err != nil {
		return f, nil, err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(raw, &all); err != nil {
		return f, nil, err
	}
	return f, all, nil
}

func (f definitionFields) contract() schemadiff.Contract {
	effect := "mutating"
	if f.Annotations != nil && f.Annotations.ReadOnlyHint {
		effect = "read_only"
	}
	return schemadiff.Contract{ToolID: "upstream", Name: f.Name, Description: f.Description, Effect: effect,
		Parameters: f.InputSchema, Result: f.OutputSchema}
}

// Compare classifies how live differs from pinned (both JSON definitions).
func Compare(pinned, live []byte) (Drift, error) {
	old, oldAll, err := decodeDefinition(pinned)
	if err != nil {
		return Drift{}, fmt.Errorf("pinned definition: %w", err)
	}
	cur, curAll, err := decodeDefinition(live)
	if err != nil {
		return Drift{}, fmt.Errorf("live definition: %w", err)
	}
	rep := schemadiff.Diff(old.contract(), cur.contract(), schemadiff.Options{})
	d := Drift{Changes: rep.Changes, Tier: rep.Tier}
	var oldDoc, curDoc any
	for _, c := range rep.Changes {
		if c.Tier.Rank() >= schemadiff.TierHighRisk.Rank() || c.Kind == "description_changed" {
			d.Stops = true
		}
		if c.Kind == "description_changed" {
			if oldDoc == nil {
				oldDoc, curDoc = decodeAny(pinned), decodeAny(live)
			}
			d.Descriptions = append(d.Descriptions, DescriptionChange{Pointer: c.Pointer,
				Pinned: descriptionAt(oldDoc, c.Pointer), Live: descriptionAt(curDoc, c.Pointer)})
		}
	}
	compared := map[string]bool{"name": true, "description": true, "inputSchema": true, "outputSchema": true}
	keys := map[string]bool{}
	for k := range oldAll {
		keys[k] = true
	}
	for k := range curAll {
		keys[k] = true
	}
	for k := range keys {
		if compared[k] {
			continue
		}
		if !equalJSON(oldAll[k], curAll[k]) {
			d.Other = append(d.Other, k)
		}
	}
	sort.Strings(d.Other)
	if d.Tier == "" {
		d.Tier = schemadiff.TierNone
	}
	return d, nil
}

func equalJSON(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	if bytes.Equal(a, b) {
		return true
	}
	ca, err1 := canon.Transform(a)
	cb, err2 := canon.Transform(b)
	return err1 == nil && err2 == nil && bytes.Equal(ca, cb)
}

func decodeAny(raw []byte) any {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil
	}
	return v
}

// descriptionAt is the text at a schemadiff pointer of a definition (see
// DescriptionChange), nil when there is no string there.
func descriptionAt(def any, ptr string) *string {
	m, _ := def.(map[string]any)
	var v any
	switch {
	case ptr == "/description":
		v = m["description"]
	case strings.HasPrefix(ptr, "/parameters/"):
		v = walkPointer(m["inputSchema"], strings.TrimPrefix(ptr, "/parameters"))
	case strings.HasPrefix(ptr, "/result/"):
		v = walkPointer(m["outputSchema"], strings.TrimPrefix(ptr, "/result"))
	}
	if s, ok := v.(string); ok {
		return &s
	}
	return nil
}

// walkPointer follows a JSON pointer ("/a/0/b~1c") into v; nil when it
// leads nowhere.
func walkPointer(v any, ptr string) any {
	if ptr == "" {
		return v
	}
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch x := v.(type) {
		case map[string]any:
			v = x[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}
