package config

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/toolgate/toolgate/internal/defaults"
	"github.com/toolgate/toolgate/internal/mcpmeta"
	"github.com/toolgate/toolgate/internal/placeholder"
)

// mcpManagedHeaders are set by the MCP transport itself; a binding may not
// override them.
var mcpManagedHeaders = []string{"Accept", "Connection", "Content-Length", "Content-Type", "Host",
	"Last-Event-Id", "Mcp-Protocol-Version", "Mcp-Session-Id", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// httpOnlyFields are binding fields that an MCP binding cannot use: the MCP transport
// decides the method, the key travels in _meta, and there is no state probe.
var httpOnlyFields = []struct{ field, why string }{
	{"method", "an MCP binding's calls are tools/call requests"},
	{"idempotency_header", "an MCP binding sends the key in _meta: use mcp.idempotency_meta"},
	{"state", "an MCP binding has no state probe"},
	{"lookup.url", "an MCP binding's lookup is a tool of the server: use lookup.mcp_tool"},
}

// checkMCP checks what is particular to a binding to an upstream MCP server.
func (c *Config) checkMCP(id string, b Binding) []Problem {
	var out []Problem
	bad := func(sub, format string, a ...any) {
		path := "bindings." + id + "." + sub
		out = append(out, c.problem(SeverityError, RuleInvalid, c.bindingLine(id, sub), path, withPath(path, fmt.Sprintf(format, a...))))
	}
	m := b.MCP
	if m.URL != "" {
		if ps, err := placeholder.Scan(m.URL); err != nil || len(ps) > 0 {
			bad("mcp.url", "%q: the server's endpoint is one fixed URL (no placeholders)", m.URL)
		} else {
			for _, msg := range checkURLShape(m.URL, nil) {
				bad("mcp.url", "%s", msg)
			}
		}
	}
	if len(m.Headers) > maxMCPHeaders {
		bad("mcp.headers", "%d headers; at most %d", len(m.Headers), maxMCPHeaders)
	}
	for _, name := range sortedIDs(m.Headers) {
		v := m.Headers[name]
		switch {
		case !headerTokenRE.MatchString(name):
			bad("mcp.headers", "%q is not a valid HTTP header name", name)
		case contains(mcpManagedHeaders, http.CanonicalHeaderKey(name)):
			bad("mcp.headers."+name, "%s is set by the MCP transport and cannot be configured", http.CanonicalHeaderKey(name))
		case strings.ContainsAny(v, "\r\n\x00") || len(v) > 8192:
			bad("mcp.headers."+name, "the value must be one line of at most 8192 bytes")
		}
	}
	if m.IdempotencyMeta != "" {
		if msg := mcpmeta.CheckKey(m.IdempotencyMeta); msg != "" {
			bad("mcp.idempotency_meta", "%q: %s", m.IdempotencyMeta, msg)
		}
	}
	for _, f := range httpOnlyFields {
		if _, set := c.lines["bindings."+id+"."+f.field]; set {
			bad(f.field, "%s is for HTTP bindings: %s", f.field, f.why)
		}
	}
	return out
}

// maxMCPHeaders bounds an MCP binding's headers.
const maxMCPHeaders = 32

// MCPServer is the gateway's own MCP server (/mcp): its settings for hosts
// that cannot set _meta and for the tasks extension (docs/providers.md).
type MCPServer struct {
	// KeyArgument: auto (the default) lists each mutating tool whose
	// contract has no key argument with a required idempotency_key
	// argument; off lists tools as their contracts say (the key then
	// travels in _meta only).
	KeyArgument string `yaml:"key_argument"`
	// TaskAfter is how long a tools/call of a client that declared the
	// tasks extension runs before it is answered with a task. Default 1s.
	TaskAfter time.Duration `yaml:"task_after"`
}

// The values of mcp.key_argument, and mcp.task_after's default and bounds.
const (
	MCPKeyArgumentAuto  = "auto"
	MCPKeyArgumentOff   = "off"
	DefaultMCPTaskAfter = defaults.MCPTaskAfter
	maxMCPTaskAfter     = 10 * time.Minute
)

var mcpKeyArgumentModes = []string{MCPKeyArgumentAuto, MCPKeyArgumentOff}

func (c *Config) applyMCPDefaults() {
	setStr(&c.MCP.KeyArgument, MCPKeyArgumentAuto)
	setDur(&c.MCP.TaskAfter, DefaultMCPTaskAfter)
}

func (c *Config) checkMCPServer(bad func(path, format string, a ...any)) {
	if m := c.MCP.KeyArgument; !contains(mcpKeyArgumentModes, m) {
		bad("mcp.key_argument", "%s", oneOf("key argument mode", m, mcpKeyArgumentModes))
	}
	if d := c.MCP.TaskAfter; d < 0 || d > maxMCPTaskAfter {
		bad("mcp.task_after", "%s: must be between 0s and %s", d, maxMCPTaskAfter)
	}
}
