package gateway

import "net/http"

// mcpRoutes registers the MCP server (streamable HTTP) at /mcp (SPEC 3.3).
func (s *Server) mcpRoutes(m *http.ServeMux) {}
