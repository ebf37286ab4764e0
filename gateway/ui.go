package gateway

import (
	"embed"
	"io/fs"
	"mime"
	"net"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/toolgate/toolgate/toolcall"
)

// The dashboard's assets: plain HTML, CSS and JavaScript, embedded so the
// binary serves them with no build step and nothing fetched at run time.
//
//go:embed ui
var uiFiles embed.FS

// uiHeader names the header every state-changing dashboard request carries.
// A browser sends a custom header cross-origin only after a CORS preflight the
// gateway never grants, so requiring it is a second CSRF guard next to
// http.CrossOriginProtection.
const uiHeader = "X-Toolgate-Dashboard"

// uiRoutes registers the operators' dashboard at /ui/ (docs/reference/http-api.md).
//
// The pages under /ui/ are static and hold no data; every piece of data comes
// from /ui/api/, which takes the same bearer keys as the API and needs the
// operator role. Answers are scoped to the key's tenant.
func (s *Server) uiRoutes(m *http.ServeMux) {
	series := newCallSeries()
	s.observers = append(s.observers, series.record)
	csrf := http.NewCrossOriginProtection()

	api := func(pattern string, fn handler) {
		m.Handle(pattern, s.uiGuard(csrf, s.wrap(operators, fn)))
	}
	api("GET /ui/api/whoami", s.uiWhoami)
	api("GET /ui/api/actions", s.listActions)
	api("GET /ui/api/actions/{action_id}", s.uiAction)
	api("POST /ui/api/actions/{action_id}/reconcile", s.reconcileAction)
	api("POST /ui/api/actions/{action_id}/resolve", s.resolveAction)
	api("POST /ui/api/actions/{action_id}/approve", s.approveAction)
	api("POST /ui/api/actions/{action_id}/deny", s.denyAction)
	api("POST /ui/api/actions/{action_id}/assign", s.assignAction)
	api("POST /ui/api/actions/{action_id}/unassign", s.unassignAction)
	api("GET /ui/api/series", func(w http.ResponseWriter, r *http.Request, p *Principal) error {
		q := r.URL.Query()
		window, step := 900, 10
		if v := q.Get("window"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > seriesSlots {
				return problem(toolcall.CodeMalformedRequest, "window must be 1 to %d seconds", seriesSlots)
			}
			window = n
		}
		if v := q.Get("step"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > window {
				return problem(toolcall.CodeMalformedRequest, "step must be 1 second to the window")
			}
			step = n
		}
		return writeJSON(w, http.StatusOK, series.snapshot(p.Tenant, time.Now(), window, step))
	})
	api("GET /ui/api/registry", s.uiRegistry)
	api("GET /ui/api/registry/{tool_id}/{version}", s.uiSchema)
	api("GET /ui/api/diff", s.uiDiff)
	api("GET /ui/api/rollouts", s.listRollouts)
	api("GET /ui/api/rollouts/{tool_id}", s.getRollout)
	api("GET /ui/api/status", s.uiStatus)
	m.Handle("GET /ui/api/{rest...}", s.uiGuard(csrf, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, problem(toolcall.CodeNotFound, "no dashboard endpoint %s", r.URL.Path))
	})))

	assets, err := fs.Sub(uiFiles, "ui")
	if err != nil {
		panic(err) // the embedded directory is part of the source tree
	}
	m.Handle("GET /ui/{file...}", s.uiGuard(csrf, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		serveAsset(w, assets, r.PathValue("file"))
	})))
	m.Handle("GET /ui", http.RedirectHandler("/ui/", http.StatusMovedPermanently))
}

// serveAsset answers one embedded file; the empty name is index.html.
func serveAsset(w http.ResponseWriter, assets fs.FS, name string) {
	if name == "" {
		name = "index.html"
	}
	body, err := fs.ReadFile(assets, name) // fs paths cannot climb out with ".."
	if err != nil {
		writeProblem(w, problem(toolcall.CodeNotFound, "no dashboard file %q", name))
		return
	}
	ct := mime.TypeByExtension(path.Ext(name))
	if ct == "" {
		ct = "application/octet-stream"
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Cache-Control", "no-cache")
	w.Write(body)
}

// uiGuard sets the dashboard's security headers and refuses, before the
// handler runs: state-changing requests from another origin or without the
// dashboard header (CSRF), and — when the gateway runs without keys and so
// trusts every caller as an operator — requests whose Host is not a loopback
// name (DNS rebinding).
func (s *Server) uiGuard(csrf *http.CrossOriginProtection, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		if strings.HasPrefix(r.URL.Path, "/ui/api/") {
			h.Set("Cache-Control", "no-store")
		}
		if s.noAuth != nil && !loopbackHost(r.Host) {
			writeProblem(w, problem(toolcall.CodeForbidden, "without configured keys the dashboard answers only on a loopback host name, not %q", r.Host))
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if err := csrf.Check(r); err != nil {
				writeProblem(w, problem(toolcall.CodeForbidden, "cross-origin request refused"))
				return
			}
			if r.Header.Get(uiHeader) == "" {
				writeProblem(w, problem(toolcall.CodeForbidden, "dashboard requests that change state need the %s header", uiHeader))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// loopbackHost reports whether a Host header names the local machine.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// uiWhoami tells the dashboard who the key belongs to; the login page uses it
// to check a key before keeping it.
func (s *Server) uiWhoami(w http.ResponseWriter, r *http.Request, p *Principal) error {
	return writeJSON(w, http.StatusOK, map[string]any{
		"name": p.Name, "tenant": p.Tenant, "role": p.Role, "auth": s.noAuth == nil,
	})
}
