// Package provider turns tool contracts into the tool definitions model providers accept
// (OpenAI Chat Completions and Responses, Anthropic, MCP) and maps provider-safe names back
// to tool ids.
package provider

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/toolgate/toolgate/contract"
)

// Export formats.
const (
	FormatOpenAI          = "openai"
	FormatOpenAIResponses = "openai-responses"
	FormatAnthropic       = "anthropic"
	FormatMCP             = "mcp"
)

// Formats lists the export formats.
var Formats = []string{FormatOpenAI, FormatOpenAIResponses, FormatAnthropic, FormatMCP}

// Exported is one export: the definitions, what was changed to fit the provider, and how
// to map exported names back to tool ids.
type Exported struct {
	Format string `json:"format"`
	// Tools holds one definition per tool (its default version), in tool id order.
	Tools []json.RawMessage `json:"tools"`
	// Names maps each exported name to its tool id.
	Names map[string]string `json:"names"`
	// Versions maps each tool id to the version exported.
	Versions map[string]string `json:"versions"`
	// Warnings lists what the export changed or moved to fit the provider.
	Warnings []Warning `json:"warnings"`
}

// Warning is one adaptation the export made: a keyword moved into a description, an open
// object closed, a name rewritten.
type Warning struct {
	Tool    string `json:"tool"`
	Pointer string `json:"pointer,omitempty"` // inside the exported parameters schema
	Message string `json:"message"`
}

func (w Warning) String() string {
	if w.Pointer == "" {
		return w.Tool + ": " + w.Message
	}
	return w.Tool + ": " + w.Pointer + ": " + w.Message
}

// ToolID maps an exported name back to its tool id.
func (e *Exported) ToolID(name string) (string, bool) {
	id, ok := e.Names[name]
	return id, ok
}

// Export builds the definitions of every tool's default version in the given format.
func Export(reg *contract.Registry, format string) (*Exported, error) {
	return ExportSelected(reg, format, nil)
}

// ExportSelected is Export of the tools include accepts (nil: every tool). The gateway
// passes its bindings, so a tool that can only answer 503 tool_not_bound is not offered
// to agents. Exported names are computed over every tool of the registry, so a tool's
// name does not change when another tool gains or loses a binding.
func ExportSelected(reg *contract.Registry, format string, include func(toolID string) bool) (*Exported, error) {
	return ExportPicked(reg, format, func(t *contract.Tool) *contract.Version {
		if include != nil && !include(t.ID) {
			return nil
		}
		return t.Default()
	})
}

// ExportPicked is Export of the version pick chooses for each tool (nil: the
// tool is left out). The gateway picks, per caller, the version that serves
// the caller's next new action (its rollout's default, or a canary's
// candidate), so what an agent is handed is what serves it.
func ExportPicked(reg *contract.Registry, format string, pick func(t *contract.Tool) *contract.Version) (*Exported, error) {
	if !validFormat(format) {
		return nil, fmt.Errorf("unknown export format %q (want %s)", format, strings.Join(Formats, ", "))
	}
	tools := reg.Tools()
	ids := make([]string, len(tools))
	for i, t := range tools {
		ids[i] = t.ID
	}
	names := ExportNames(format, ids)
	out := &Exported{Format: format, Names: map[string]string{}, Versions: map[string]string{}, Tools: []json.RawMessage{}, Warnings: []Warning{}}
	for _, t := range tools {
		v := pick(t)
		if v == nil {
			continue
		}
		name := names[t.ID]
		out.Names[name] = t.ID
		out.Versions[t.ID] = v.Version
		if name != t.ID {
			out.Warnings = append(out.Warnings, Warning{Tool: t.ID, Message: fmt.Sprintf("exported as %q (%s does not allow the tool id as a name)", name, format)})
		}
		def, warns, err := definition(format, name, v)
		if err != nil {
			return nil, fmt.Errorf("export %s v%s: %w", t.ID, v.Version, err)
		}
		for _, w := range warns {
			w.Tool = t.ID
			out.Warnings = append(out.Warnings, w)
		}
		b, err := json.Marshal(def)
		if err != nil {
			return nil, fmt.Errorf("export %s v%s: %w", t.ID, v.Version, err)
		}
		out.Tools = append(out.Tools, b)
	}
	return out, nil
}

func validFormat(f string) bool {
	for _, x := range Formats {
		if x == f {
			return true
		}
	}
	return false
}

type openAIFunction struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Parameters  any    `json:"parameters"`
	Strict      bool   `json:"strict"`
}

type openAITool struct {
	Type     string         `json:"type"`
	Function openAIFunction `json:"function"`
}

type responsesTool struct {
	Type        string `json:"type"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Parameters  any    `json:"parameters"`
	Strict      bool   `json:"strict"`
}

type anthropicTool struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	InputSchema any    `json:"input_schema"`
}

type mcpTool struct {
	Name         string         `json:"name"`
	Title        string         `json:"title,omitempty"`
	Description  string         `json:"description"`
	InputSchema  any            `json:"inputSchema"`
	OutputSchema any            `json:"outputSchema,omitempty"`
	Annotations  mcpAnnotations `json:"annotations"`
}

type mcpAnnotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    bool   `json:"readOnlyHint"`
	DestructiveHint bool   `json:"destructiveHint"`
	IdempotentHint  bool   `json:"idempotentHint"`
}

func definition(format, name string, v *contract.Version) (any, []Warning, error) {
	params, err := contract.DecodeJSON(v.Parameters)
	if err != nil {
		return nil, nil, err
	}
	switch format {
	case FormatOpenAI, FormatOpenAIResponses:
		s := &strictor{}
		strict := s.schema(params, "", true)
		desc := v.Description
		if format == FormatOpenAI {
			return openAITool{Type: "function", Function: openAIFunction{Name: name, Description: desc, Parameters: strict, Strict: true}}, s.warnings, nil
		}
		return responsesTool{Type: "function", Name: name, Description: desc, Parameters: strict, Strict: true}, s.warnings, nil
	case FormatAnthropic:
		return anthropicTool{Name: name, Description: v.Description, InputSchema: stripAnnotations(params)}, nil, nil
	}
	t := mcpTool{
		Name: name, Title: v.Name, Description: v.Description, InputSchema: stripAnnotations(params),
		Annotations: mcpAnnotations{
			ReadOnlyHint:    !v.Mutating(),
			DestructiveHint: v.Mutating(),
			IdempotentHint:  !v.Mutating() || v.IdempotencyKeyProperty() != "",
		},
	}
	if len(v.Result) > 0 {
		result, err := contract.DecodeJSON(v.Result)
		if err != nil {
			return nil, nil, err
		}
		if m, ok := result.(map[string]any); ok && m["type"] == "object" {
			t.OutputSchema = stripAnnotations(result)
		}
	}
	return t, nil, nil
}

// stripAnnotations copies a schema without toolgate's x-* annotations and $schema/$id.
func stripAnnotations(s any) any {
	switch x := s.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, v := range x {
			if strings.HasPrefix(k, "x-") || k == "$schema" || k == "$id" || k == "$comment" {
				continue
			}
			out[k] = stripAnnotations(v)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, v := range x {
			out[i] = stripAnnotations(v)
		}
		return out
	}
	return s
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
