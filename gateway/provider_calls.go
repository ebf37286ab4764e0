package gateway

import "net/http"

// providerRoutes registers the provider-shaped call endpoints (SPEC 3.3):
// POST /v1/calls/openai and POST /v1/calls/anthropic, and GET /v1/export.
func (s *Server) providerRoutes(m *http.ServeMux) {}
