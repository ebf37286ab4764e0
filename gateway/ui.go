package gateway

import "net/http"

// uiRoutes registers the operators' dashboard at /ui/ (SPEC 3.4).
func (s *Server) uiRoutes(m *http.ServeMux) {}
