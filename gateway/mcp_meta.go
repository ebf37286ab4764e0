package gateway

import (
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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
