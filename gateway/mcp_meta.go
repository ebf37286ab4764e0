package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"runtime/debug"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/toolcall"
)

// The _meta keys of an MCP tools/call result served by a deprecated version:
// the same values as the one-shot answer's Deprecation (RFC 9745: "@" and the
// Unix time of the deprecation) and Sunset (RFC 8594: the HTTP-date the
// deprecation window ends) headers, and the version that served.
const (
	MCPMetaDeprecation       = "toolgate/deprecation"
	MCPMetaSunset            = "toolgate/sunset"
	MCPMetaDeprecatedVersion = "toolgate/deprecated_version"
)

// deprecationMeta marks a result served by a deprecated version.
func deprecationMeta(m mcp.Meta, d *toolcall.Deprecation) {
	if d == nil {
		return
	}
	m[MCPMetaDeprecation] = fmt.Sprintf("@%d", d.Since.Unix())
	m[MCPMetaSunset] = d.Sunset.UTC().Format(http.TimeFormat)
	if d.Version != "" {
		m[MCPMetaDeprecatedVersion] = d.Version
	}
}

// MCPKeyArgument is the argument a mutating tool whose contract has no key
// argument is listed with over MCP, for hosts that cannot set _meta
// (Config.MCPKeyArgumentOff turns it off). The gateway takes it out of the
// arguments before validation, digest and forwarding, and uses it as the
// action id, as the Idempotency-Key header.
const MCPKeyArgument = "idempotency_key"

// mcpKeyArgumentDescription is what the model reads of MCPKeyArgument.
const mcpKeyArgumentDescription = "Idempotency key of this action: a new unique value (8 to 255 visible ASCII characters, e.g. a UUID) for each action you intend, and the same value on every retry of that action. The tool runs at most once per key."

// wantsKeyArgument reports whether t is listed for p with MCPKeyArgument:
// the version that serves p is mutating, its contract has no key argument,
// and no parameter of its own is called so.
func (api *mcpAPI) wantsKeyArgument(p *Principal, t *contract.Tool, in map[string]any) bool {
	if api.s.cfg.MCPKeyArgumentOff || t == nil {
		return false
	}
	v := api.s.calls.Serving(p, t)
	if v == nil || !v.Mutating() || v.IdempotencyKeyProperty() != "" {
		return false
	}
	if props, _ := in["properties"].(map[string]any); props != nil {
		if _, taken := props[MCPKeyArgument]; taken {
			return false
		}
	}
	return true
}

// addKeyArgument lists MCPKeyArgument as a required string parameter of t
// (a copy of the input schema's top level: the export is shared).
func addKeyArgument(t *mcp.Tool, in map[string]any) {
	schema := make(map[string]any, len(in)+2)
	for k, v := range in {
		schema[k] = v
	}
	props := map[string]any{}
	if old, _ := in["properties"].(map[string]any); old != nil {
		for k, v := range old {
			props[k] = v
		}
	}
	props[MCPKeyArgument] = map[string]any{"type": "string", "minLength": 8, "maxLength": 255,
		"pattern": "^[!-~]+$", "description": mcpKeyArgumentDescription}
	schema["properties"] = props
	var req []any
	if old, _ := in["required"].([]any); old != nil {
		req = append(req, old...)
	}
	schema["required"] = append(req, MCPKeyArgument)
	t.InputSchema = schema
}

// takeKeyArgument removes MCPKeyArgument from a tools/call's arguments (a
// JSON object) and returns the key the call runs under: metaKey when the
// request's _meta named one, else the argument's value. A missing, empty,
// too long or malformed argument (with no key in _meta) is a field error
// the model can fix.
func takeKeyArgument(args json.RawMessage, metaKey string) (json.RawMessage, string, *contract.FieldError) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(args, &m); err != nil {
		return args, metaKey, nil // not an object: the call service says so
	}
	raw, present := m[MCPKeyArgument]
	if present {
		delete(m, MCPKeyArgument)
		if b, err := json.Marshal(m); err == nil {
			args = b
		}
	}
	if metaKey != "" {
		return args, metaKey, nil
	}
	bad := func(code, detail string) *contract.FieldError {
		return &contract.FieldError{Pointer: "/" + MCPKeyArgument, Code: code, Detail: detail}
	}
	var key string
	switch {
	case !present:
		return args, "", bad("required", "this tool changes something: set "+MCPKeyArgument+" to a new unique value for this one intended action (8 to 255 visible ASCII characters, e.g. a UUID), and reuse that value if you retry it")
	case json.Unmarshal(raw, &key) != nil:
		return args, "", bad("type", "must be a string")
	case key == "":
		return args, "", bad("minLength", "must not be empty: use a new unique value (e.g. a UUID) for this intended action")
	case len(key) > 255:
		return args, "", bad("maxLength", fmt.Sprintf("must be at most 255 characters (it has %d)", len(key)))
	case len(key) < 8:
		return args, "", bad("minLength", "must be at least 8 characters (e.g. a UUID)")
	case !toolcall.ValidKey(key):
		return args, "", bad("pattern", "must be visible ASCII characters only (0x21 to 0x7E), e.g. a UUID")
	}
	return args, key, nil
}

// version is the toolgate version the MCP server names (serverInfo):
// Config.Version, else the main module's version from the binary's build
// information ("(devel)" for a build from a source tree).
func (s *Server) version() string {
	if s.cfg.Version != "" {
		return s.cfg.Version
	}
	return buildVersion()
}

func buildVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok || info.Main.Version == "" {
		return "(devel)"
	}
	return info.Main.Version
}
