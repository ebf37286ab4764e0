package importer

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolgate/toolgate/internal/canon"
	"github.com/toolgate/toolgate/lockfile"
)

// FromMCP makes tool folders from an MCP server's tools/list: the tools
// named (all when names is empty). serverName (the server's implementation
// name) is the default namespace. A readOnlyHint tool is read_only, any
// other mutating; inputSchema becomes parameters and outputSchema result.
func FromMCP(url, serverName string, listed []*mcp.Tool, names []string, opts Options) ([]Tool, error) {
	byName := map[string]*mcp.Tool{}
	var all []string
	for _, t := range listed {
		byName[t.Name] = t
		all = append(all, t.Name)
	}
	sort.Strings(all)
	if len(names) == 0 {
		names = all
	}
	ns := namespace(opts.Namespace, serverName)
	if msg := CheckNamespace(ns); msg != "" {
		return nil, fmt.Errorf("%s (set --namespace)", msg)
	}
	now := opts.now()
	var out []Tool
	for _, name := range names {
		lt, ok := byName[name]
		if !ok {
			return nil, fmt.Errorf("the server lists no tool %q (it lists %s)", name, strings.Join(all, ", "))
		}
		t, err := fromMCPTool(url, ns, lt, opts)
		if err != nil {
			return nil, fmt.Errorf("tool %q: %w", name, err)
		}
		t.Changelog = changelog(t.ID, fmt.Sprintf("the MCP server %s (tool %s)", url, name), t.Notes, now)
		out = append(out, t)
	}
	return out, uniqueIDs(out)
}

func fromMCPTool(url, ns string, lt *mcp.Tool, opts Options) (Tool, error) {
	raw, err := json.Marshal(lt)
	if err != nil {
		return Tool{}, err
	}
	def, err := canon.Transform(raw)
	if err != nil {
		return Tool{}, err
	}
	var fields struct {
		InputSchema  any `json:"inputSchema"`
		OutputSchema any `json:"outputSchema"`
	}
	if err := decodeNumbers(def, &fields); err != nil {
		return Tool{}, err
	}
	id := ns + "." + ident(lt.Name)
	var notes []string
	in := &converter{dialect: dialectOf(fields.InputSchema, Dialect202012), dir: input, where: "parameters", notes: &notes}
	params, err := in.convert(fields.InputSchema)
	if err != nil {
		return Tool{}, err
	}
	if params, err = objectParameters(params, "inputSchema", &notes); err != nil {
		return Tool{}, err
	}
	var result any
	if fields.OutputSchema != nil {
		out := &converter{dialect: dialectOf(fields.OutputSchema, Dialect202012), dir: output, where: "result", notes: &notes}
		if result, err = out.convert(fields.OutputSchema); err != nil {
			return Tool{}, err
		}
	}
	effect := "mutating"
	if lt.Annotations != nil && lt.Annotations.ReadOnlyHint {
		effect = "read_only"
	}
	description := lt.Description
	if description == "" && lt.Title != "" {
		notes = append(notes, "the tool has no description; its title is not used as one")
	}
	t := Tool{
		ID:        id,
		Schema:    contractOf(id, lt.Name, description, effect, params, result, nil),
		Owner:     opts.Owner,
		RiskLevel: opts.RiskLevel,
		Notes:     notes,
		Pin: &lockfile.Pin{PinVersion: lockfile.PinFormatVersion, ToolID: id,
			Source:     lockfile.Source{Kind: lockfile.SourceMCP, URL: url, Tool: lt.Name},
			Definition: def, Todo: todos()},
		Binding: map[string]any{
			"mcp": map[string]any{"url": url, "tool": lt.Name},
			"#":   "lookup: {mcp_tool: NAME}   # a tool of the server that finds an effect by its idempotency key (docs/upstreams.md); without one, unknown actions wait for an operator",
		},
	}
	if effect == "read_only" {
		t.Binding["#"] = nil
		delete(t.Binding, "#")
	}
	err = checkContract(&t)
	return t, err
}

// todos are the review to-dos of an imported contract: x-sensitive marks
// (always: the import cannot know which values are secret) and rules.
func todos() []string {
	out := []string{lockfile.TodoSensitive, lockfile.TodoRules}
	slices.Sort(out)
	return out
}
