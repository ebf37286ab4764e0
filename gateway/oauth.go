package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"github.com/toolgate/toolgate/internal/oauth"
	"github.com/toolgate/toolgate/toolcall"
)

// The gateway as an OAuth 2.1 resource server (docs/oauth.md): beside the
// static keys, a bearer token may be an access token of the configured
// issuer. Its subject names the caller as a key's name does, its tenant
// claim is the tenant, its tools claim the allow-list, and its scopes the
// role. The two metadata documents (RFC 9728) tell a client where to get
// such a token, and every 401 and scope 403 names them.

// Well-known paths of the protected-resource metadata (RFC 9728 §3).
const (
	wellKnownResource    = "/.well-known/oauth-protected-resource"
	wellKnownResourceMCP = wellKnownResource + "/mcp"
)

// tokenAuth interns the principals of verified tokens: one *Principal per
// (subject, tenant, role, tools), so that what is bound to a principal (its
// MCP server, its in-flight slots) is shared by its tokens.
type tokenAuth struct {
	v *oauth.Verifier

	mu         sync.Mutex
	principals map[string]*Principal
	isToken    map[*Principal]bool
}

// authFailure says why a request has no principal.
type authFailure struct {
	sent   bool   // a bearer credential was sent
	reason string // why a token was refused (invalid_token); "" when none was
	scope  string // the scope the token lacks (insufficient_scope)
}

// identify finds the principal of the request's bearer credential: a
// static key (compared in constant time, every key), else an access token
// of the issuer. Without a principal it says why.
func (s *Server) identify(ctx context.Context, h http.Header) (*Principal, authFailure) {
	if s.noAuth != nil {
		return s.noAuth, authFailure{}
	}
	if s.onIdentify != nil {
		s.onIdentify()
	}
	token, ok := oauth.ParseBearer(h.Get("Authorization"))
	if !ok {
		return nil, authFailure{sent: h.Get("Authorization") != ""}
	}
	if p := s.staticKey(token); p != nil {
		return p, authFailure{}
	}
	if s.tokens == nil {
		return nil, authFailure{sent: true}
	}
	id, err := s.tokens.v.Verify(ctx, token)
	if err != nil {
		reason := "the token was refused"
		if e, ok := err.(*oauth.Error); ok {
			reason = e.Reason
		}
		return nil, authFailure{sent: true, reason: reason}
	}
	cfg := s.tokens.v.Config()
	role := ""
	switch {
	case id.HasScope(cfg.OperatorScope):
		role = "operator"
	case id.HasScope(cfg.AgentScope):
		role = "agent"
	default:
		return nil, authFailure{sent: true, scope: cfg.AgentScope}
	}
	return s.tokens.principal(id, role, s.inFlight), authFailure{}
}

// identified is what ServeHTTP found of a request's credential.
type identified struct {
	p      *Principal
	fail   authFailure
	header string // the Authorization header it was found for
}

type identifiedKey struct{}

// identifyRequest is identify for r, reusing what ServeHTTP found.
func (s *Server) identifyRequest(r *http.Request) (*Principal, authFailure) {
	return s.identifyIn(r.Context(), r.Header)
}

// identifyIn is identify for a request whose context is ctx and whose
// headers are h: what ServeHTTP found for the same Authorization header,
// else a lookup of its own (a request that did not come through ServeHTTP).
func (s *Server) identifyIn(ctx context.Context, h http.Header) (*Principal, authFailure) {
	if id, ok := ctx.Value(identifiedKey{}).(*identified); ok && id.header == h.Get("Authorization") {
		return id.p, id.fail
	}
	return s.identify(ctx, h)
}

// principal is the interned principal of a verified token.
func (t *tokenAuth) principal(id *oauth.Identity, role string, f *inFlight) *Principal {
	tools := append([]string(nil), id.Tools...)
	sort.Strings(tools)
	key := strings.Join(append([]string{role, id.Tenant, id.Subject}, tools...), "\x00")
	t.mu.Lock()
	defer t.mu.Unlock()
	if p, ok := t.principals[key]; ok {
		return p
	}
	p := toolcall.NewTokenPrincipal(id.Subject, id.Tenant, role, tools)
	t.principals[key] = p
	t.isToken[p] = true
	f.register(p)
	return p
}

func (t *tokenAuth) is(p *Principal) bool {
	if t == nil {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.isToken[p]
}

// refused is the problem for a request without a principal, with the
// challenge set on w: with OAuth on, WWW-Authenticate names the metadata
// and the scope (RFC 6750 §3, RFC 9728 §5.1).
func (s *Server) refused(w http.ResponseWriter, r *http.Request, f authFailure) *toolcall.Problem {
	if s.tokens == nil {
		return problem(toolcall.CodeUnauthenticated, "send a valid API key as 'Authorization: Bearer <key>'")
	}
	if f.scope != "" {
		w.Header().Set("WWW-Authenticate", s.challenge(r, f.scope, "insufficient_scope", "the token lacks the scope "+f.scope))
		return problem(toolcall.CodeForbidden, "the access token lacks the scope %q", f.scope)
	}
	cfg := s.tokens.v.Config()
	if !f.sent {
		w.Header().Set("WWW-Authenticate", s.challenge(r, cfg.AgentScope, "", ""))
		return problem(toolcall.CodeUnauthenticated, "send an API key or an access token of %s for %s as 'Authorization: Bearer …'", cfg.Issuer, cfg.Audience)
	}
	reason := f.reason
	if reason == "" {
		reason = "it is neither an API key nor an access token"
	}
	w.Header().Set("WWW-Authenticate", s.challenge(r, cfg.AgentScope, "invalid_token", reason))
	return problem(toolcall.CodeUnauthenticated, "the bearer credential was refused: %s", reason)
}

// operatorsOnly is the 403 of an agent on an operator endpoint; a token's
// names the scope it lacks.
func (s *Server) operatorsOnly(w http.ResponseWriter, r *http.Request, p *Principal) *toolcall.Problem {
	if s.tokens.is(p) {
		scope := s.tokens.v.Config().OperatorScope
		w.Header().Set("WWW-Authenticate", s.challenge(r, scope, "insufficient_scope", "the token lacks the scope "+scope))
		return problem(toolcall.CodeForbidden, "%s is for operators; the access token of %q lacks the scope %q", r.URL.Path, p.Name, scope)
	}
	return problem(toolcall.CodeForbidden, "%s is for operators; key %q has role %s", r.URL.Path, p.Name, p.Role)
}

// challenge is a Bearer WWW-Authenticate value.
func (s *Server) challenge(r *http.Request, scope, code, description string) string {
	parts := []string{fmt.Sprintf(`resource_metadata=%q`, s.metadataURL(r)), fmt.Sprintf(`scope=%q`, scope)}
	if code != "" {
		parts = append(parts, fmt.Sprintf(`error=%q`, code))
	}
	if d := headerSafe(description); d != "" {
		parts = append(parts, `error_description="`+d+`"`)
	}
	return "Bearer " + strings.Join(parts, ", ")
}

// headerSafe keeps the characters RFC 6750 §3 allows in error_description
// (%x20-21 / %x23-5B / %x5D-7E), at most 200 of them.
func headerSafe(s string) string {
	var b strings.Builder
	for i := 0; i < len(s) && b.Len() < 200; i++ {
		c := s[i]
		switch {
		case c == '"':
			b.WriteByte('\'')
		case c >= 0x20 && c <= 0x7e && c != '\\':
			b.WriteByte(c)
		}
	}
	return b.String()
}

// metadataURL is the protected-resource metadata of the request's resource:
// /mcp's for /mcp, the gateway's for the rest.
func (s *Server) metadataURL(r *http.Request) string {
	path := wellKnownResource
	if r.URL.Path == "/mcp" || strings.HasPrefix(r.URL.Path, "/mcp/") {
		path = wellKnownResourceMCP
	}
	return s.baseURL(r) + path
}

// baseURL is the gateway's address as clients reach it: the public URL
// (with its path, behind a proxy that serves the gateway under one), or the
// request's scheme and host. The challenge names the metadata under it, so
// a client finds it where the proxy forwards.
func (s *Server) baseURL(r *http.Request) string {
	if s.cfg.PublicURL != "" {
		if u, err := url.Parse(s.cfg.PublicURL); err == nil && u.Host != "" {
			return strings.TrimSuffix(u.Scheme+"://"+u.Host+u.EscapedPath(), "/")
		}
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// oauthRoutes serves the protected-resource metadata (RFC 9728) when OAuth
// is on. Both documents describe the one resource the tokens are for.
func (s *Server) oauthRoutes(m *http.ServeMux) {
	if s.tokens == nil {
		return
	}
	cfg := s.tokens.v.Config()
	meta := oauthex.ProtectedResourceMetadata{
		Resource:               cfg.Audience,
		AuthorizationServers:   []string{cfg.Issuer},
		ScopesSupported:        []string{cfg.AgentScope, cfg.OperatorScope},
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "toolgate",
	}
	body, err := json.Marshal(meta)
	if err != nil {
		panic(err) // a struct of strings always encodes
	}
	body = append(body, '\n')
	serve := func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Cache-Control", "public, max-age=300")
		// Public by design (RFC 9728 §3): browser-based hosts read it too.
		h.Set("Access-Control-Allow-Origin", "*")
		w.Write(body)
	}
	m.HandleFunc("GET /.well-known/oauth-protected-resource", serve)
	m.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", serve)
	for _, p := range []string{wellKnownResource, wellKnownResourceMCP} {
		m.HandleFunc(p, methodNotAllowed)
	}
}

// oauthReadyLines are /readyz's lines about the issuer's keys.
func (s *Server) oauthReadyLines() []string {
	if s.tokens == nil {
		return nil
	}
	st := s.tokens.v.Status()
	var out []string
	switch {
	case st.Keys > 0:
		out = append(out, fmt.Sprintf("oauth: %d signing key(s) of %s, fetched %s from %s", st.Keys, st.Issuer, st.Fetched.UTC().Format(time.RFC3339), st.JWKSURI))
	case st.Fetches == 0:
		out = append(out, fmt.Sprintf("oauth: the signing keys of %s are fetched with the first token", st.Issuer))
	default:
		out = append(out, fmt.Sprintf("warning: oauth: no signing keys of %s: access tokens are refused, API keys still work", st.Issuer))
	}
	if st.Err != "" {
		line := fmt.Sprintf("warning: oauth: the last key fetch failed at %s: %s", st.ErrAt.UTC().Format(time.RFC3339), st.Err)
		if st.Keys > 0 {
			line += "; serving with the keys fetched before"
		}
		out = append(out, line)
	}
	return out
}
