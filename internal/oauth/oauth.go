// Package oauth verifies OAuth 2.1 access tokens for toolgate as a resource
// server (docs/oauth.md): JWTs signed by an issuer's keys, which it finds in
// the issuer's RFC 8414 / OpenID metadata (jwks_uri) and refetches when a
// token names a key it does not know (rate-limited), so a key rotation at the
// issuer needs no restart.
//
// A token is accepted only when its signature verifies with a key of the
// issuer's JWKS under an asymmetric algorithm (never "none" or an HMAC), iss
// is the issuer, aud holds the audience (RFC 8707), exp is present and
// exp/nbf hold with at most MaxLeeway of leeway, and it names a subject and a
// tenant. The package decides nothing about HTTP statuses: the gateway does.
//
// JOSE is go-jose (github.com/go-jose/go-jose/v4): its parser takes the list
// of accepted algorithms up front, so "none" and HMAC tokens fail before any
// key is looked at.
package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Defaults of a Config that leaves a field out.
const (
	DefaultTenantClaim   = "tenant"
	DefaultToolsClaim    = "toolgate_tools"
	DefaultAgentScope    = "toolgate:call"
	DefaultOperatorScope = "toolgate:operate"
	// MaxLeeway is the most clock skew exp and nbf are allowed, and the
	// default.
	MaxLeeway = 60 * time.Second
	// DefaultRefreshInterval is how often Run refetches the JWKS.
	DefaultRefreshInterval = 5 * time.Minute
	// DefaultRefetchInterval is the least time between two fetches that a
	// token with an unknown kid (or no keys at all) may cause.
	DefaultRefetchInterval = 30 * time.Second
	// DefaultFetchTimeout bounds one fetch of the metadata and the JWKS.
	DefaultFetchTimeout = 5 * time.Second
	// MaxTokenBytes is the longest token looked at; a longer one is
	// refused before it is parsed.
	MaxTokenBytes = 16 << 10
	// maxDocumentBytes caps the metadata and JWKS documents read.
	maxDocumentBytes = 1 << 20
	// maxKeys caps the keys kept of one JWKS.
	maxKeys = 100
	// maxClaimBytes caps the subject and tenant a token may name.
	maxClaimBytes = 256
	// cacheEntries caps the verified tokens remembered; cacheFor is how long
	// one is (at most: never past its exp).
	cacheEntries = 4096
	cacheFor     = 30 * time.Second
)

// Algorithms are the signature algorithms a token may use: asymmetric only.
var Algorithms = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512, jose.EdDSA,
}

// Config says which tokens a Verifier accepts. Issuer and Audience are
// required; every other field has the default its comment names.
type Config struct {
	// Issuer is the authorization server's issuer identifier: an https URL
	// (http only on a loopback address). Its metadata
	// (/.well-known/oauth-authorization-server or
	// /.well-known/openid-configuration) gives the jwks_uri, and a token's
	// iss must equal it.
	Issuer string
	// Audience must be one of a token's aud values (RFC 8707's resource).
	Audience string
	// TenantClaim names the claim that holds the caller's tenant. Default
	// DefaultTenantClaim.
	TenantClaim string
	// ToolsClaim names the claim that lists the tool ids (or patterns) the
	// caller may call: an array of strings or one space-separated string.
	// Default DefaultToolsClaim.
	ToolsClaim string
	// AgentScope and OperatorScope are the scopes that make a caller an
	// agent and an operator. Defaults DefaultAgentScope and
	// DefaultOperatorScope.
	AgentScope, OperatorScope string
	// Leeway is the clock skew allowed on exp and nbf, at most MaxLeeway.
	// Default MaxLeeway; negative: none.
	Leeway time.Duration
	// RefreshInterval is how often Run refetches the JWKS. Default
	// DefaultRefreshInterval.
	RefreshInterval time.Duration
	// RefetchInterval is the least time between two fetches caused by
	// tokens (an unknown kid). Default DefaultRefetchInterval; negative:
	// no wait (tests).
	RefetchInterval time.Duration
	// FetchTimeout bounds one fetch. Default DefaultFetchTimeout.
	FetchTimeout time.Duration
	// HTTPClient fetches the metadata and the JWKS. Default: a client that
	// follows redirects only to https (or loopback http) addresses.
	HTTPClient Doer
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Identity is what a verified token says of its caller.
type Identity struct {
	Subject string   // sub, else client_id
	Tenant  string   // the tenant claim
	Scopes  []string // scope (space-separated) or scp
	Tools   []string // the tools claim; nil when the token has none
	Expiry  time.Time
}

// HasScope reports whether the token carries scope s.
func (id *Identity) HasScope(s string) bool {
	for _, x := range id.Scopes {
		if x == s {
			return true
		}
	}
	return false
}

// Error is why a token was refused. Its text never holds the token.
type Error struct{ Reason string }

func (e *Error) Error() string { return e.Reason }

func refuse(format string, a ...any) *Error { return &Error{Reason: fmt.Sprintf(format, a...)} }

// Verifier checks tokens against one issuer and audience. It is safe for
// concurrent use.
type Verifier struct {
	cfg Config

	set atomic.Pointer[keySet] // the keys in use; nil before the first good fetch
	gen atomic.Uint64          // bumped when the keys change (the cache drops what it had)

	mu          sync.Mutex
	jwksURI     string        // from the issuer's metadata; "" until found
	lastAttempt time.Time     // the start of the last fetch
	lastErr     string        // the last fetch's error; "" when it succeeded
	lastErrAt   time.Time     // when it failed
	fetches     int           // fetches tried (Status)
	running     chan struct{} // closed when the fetch in flight ends; nil when none

	cacheMu sync.Mutex
	cache   map[[32]byte]cached
}

type keySet struct {
	keys    []jose.JSONWebKey
	fetched time.Time
}

type cached struct {
	id        *Identity
	at, until time.Time // verified at; trusted until
	gen       uint64
}

// New checks cfg and returns its Verifier. It fetches nothing: the first
// token, or Run, does.
func New(cfg Config) (*Verifier, error) {
	if err := CheckIssuer(cfg.Issuer); err != nil {
		return nil, err
	}
	if cfg.Audience == "" {
		return nil, errors.New("oauth: the audience is required")
	}
	if cfg.TenantClaim == "" {
		cfg.TenantClaim = DefaultTenantClaim
	}
	if cfg.ToolsClaim == "" {
		cfg.ToolsClaim = DefaultToolsClaim
	}
	if cfg.AgentScope == "" {
		cfg.AgentScope = DefaultAgentScope
	}
	if cfg.OperatorScope == "" {
		cfg.OperatorScope = DefaultOperatorScope
	}
	switch {
	case cfg.Leeway == 0 || cfg.Leeway > MaxLeeway:
		cfg.Leeway = MaxLeeway
	case cfg.Leeway < 0:
		cfg.Leeway = 0
	}
	if cfg.RefreshInterval <= 0 {
		cfg.RefreshInterval = DefaultRefreshInterval
	}
	if cfg.RefetchInterval == 0 {
		cfg.RefetchInterval = DefaultRefetchInterval
	}
	if cfg.FetchTimeout <= 0 {
		cfg.FetchTimeout = DefaultFetchTimeout
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = defaultClient()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Verifier{cfg: cfg, cache: map[[32]byte]cached{}}, nil
}

// Config returns the configuration in use, defaults applied.
func (v *Verifier) Config() Config { return v.cfg }

// CheckIssuer says what is wrong with an issuer identifier: it must be an
// absolute https URL without query or fragment; http is accepted only on a
// loopback address (tests, a local authorization server).
func CheckIssuer(issuer string) error {
	if issuer == "" {
		return errors.New("oauth: the issuer is required")
	}
	u, err := url.Parse(issuer)
	if err != nil || u.Host == "" {
		return fmt.Errorf("oauth: issuer %q is not an absolute URL", issuer)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return fmt.Errorf("oauth: issuer %q must have no query, fragment or user info", issuer)
	}
	return checkScheme(u, "issuer")
}

// checkScheme accepts https, and http on a loopback host.
func checkScheme(u *url.URL, what string) error {
	switch {
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && Loopback(u.Hostname()):
		return nil
	case u.Scheme == "http":
		return fmt.Errorf("oauth: %s %s must use https (http only on a loopback address)", what, u.Redacted())
	default:
		return fmt.Errorf("oauth: %s %s is not an https URL", what, u.Redacted())
	}
}

// Loopback reports whether host is localhost or a loopback IP address.
func Loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ParseBearer returns the token of an Authorization header value of the
// Bearer scheme (RFC 6750 §2.1: the scheme name in any case, then the
// token), or false.
func ParseBearer(header string) (string, bool) {
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.Trim(token, " \t")
	if token == "" || strings.ContainsAny(token, " \t\r\n") {
		return "", false
	}
	return token, true
}

// Verify checks token and returns what it says of its caller, or an *Error
// that says why it was refused. ctx bounds the wait for a JWKS fetch that
// an unknown kid causes.
func (v *Verifier) Verify(ctx context.Context, token string) (*Identity, error) {
	if len(token) > MaxTokenBytes {
		return nil, refuse("the token is longer than %d bytes", MaxTokenBytes)
	}
	now := v.cfg.Now()
	sum := sha256.Sum256([]byte(token))
	gen := v.gen.Load()
	if id := v.cached(sum, now); id != nil {
		return id, nil
	}
	tok, err := jwt.ParseSigned(token, Algorithms)
	if err != nil {
		return nil, refuse("not a JWT signed with an asymmetric algorithm (%s)", parseReason(err))
	}
	if len(tok.Headers) != 1 {
		return nil, refuse("the token must carry exactly one signature")
	}
	h := tok.Headers[0]
	var std jwt.Claims
	var extra map[string]json.RawMessage
	verified := false
	for _, k := range v.candidates(ctx, h.KeyID, h.Algorithm) {
		if err := tok.Claims(k.Key, &std, &extra); err == nil {
			verified = true
			break
		}
	}
	if !verified {
		if v.set.Load() == nil {
			return nil, refuse("no signing keys of the issuer yet: its JWKS could not be fetched")
		}
		if h.KeyID != "" && !v.knows(h.KeyID) {
			return nil, refuse("the token's signing key (kid %q) is not in the issuer's JWKS", clip(h.KeyID))
		}
		return nil, refuse("the token's signature does not verify with the issuer's keys")
	}
	id, err := v.check(&std, extra, now)
	if err != nil {
		return nil, err
	}
	v.remember(sum, id, now, gen)
	return id, nil
}

// parseReason is go-jose's parse error in words that never quote the input.
func parseReason(err error) string {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "unexpected signature algorithm"):
		return "its algorithm is not one of " + algList()
	case strings.Contains(msg, "compact JWS format must have three parts"):
		return "it is not three dot-separated parts"
	default:
		return "it does not parse"
	}
}

func algList() string {
	names := make([]string, len(Algorithms))
	for i, a := range Algorithms {
		names[i] = string(a)
	}
	return strings.Join(names, ", ")
}

// check holds a verified token's claims to the rules.
func (v *Verifier) check(std *jwt.Claims, extra map[string]json.RawMessage, now time.Time) (*Identity, error) {
	if std.Expiry == nil {
		return nil, refuse("the token has no exp")
	}
	err := std.ValidateWithLeeway(jwt.Expected{Issuer: v.cfg.Issuer, AnyAudience: jwt.Audience{v.cfg.Audience}, Time: now}, v.cfg.Leeway)
	switch {
	case errors.Is(err, jwt.ErrInvalidIssuer):
		return nil, refuse("the token's iss %q is not the issuer %q", clip(std.Issuer), v.cfg.Issuer)
	case errors.Is(err, jwt.ErrInvalidAudience):
		return nil, refuse("the token's aud does not hold %q (request the token with resource=%s)", v.cfg.Audience, v.cfg.Audience)
	case errors.Is(err, jwt.ErrExpired):
		return nil, refuse("the token expired at %s", std.Expiry.Time().UTC().Format(time.RFC3339))
	case errors.Is(err, jwt.ErrNotValidYet):
		return nil, refuse("the token is not valid before %s", std.NotBefore.Time().UTC().Format(time.RFC3339))
	case errors.Is(err, jwt.ErrIssuedInTheFuture):
		return nil, refuse("the token's iat is in the future")
	case err != nil:
		return nil, refuse("the token's claims do not hold")
	}
	id := &Identity{Subject: std.Subject, Expiry: std.Expiry.Time()}
	if id.Subject == "" {
		id.Subject, _ = stringClaim(extra["client_id"])
	}
	if id.Subject == "" || len(id.Subject) > maxClaimBytes || hasControl(id.Subject) {
		return nil, refuse("the token names no subject (sub or client_id) of at most %d printable bytes", maxClaimBytes)
	}
	tenant, ok := stringClaim(extra[v.cfg.TenantClaim])
	if !ok || tenant == "" || len(tenant) > maxClaimBytes || hasControl(tenant) {
		return nil, refuse("the token carries no tenant claim %q (a string of 1 to %d printable bytes)", v.cfg.TenantClaim, maxClaimBytes)
	}
	id.Tenant = tenant
	if raw, ok := extra["scope"]; ok {
		id.Scopes, ok = listClaim(raw)
		if !ok {
			return nil, refuse("the token's scope is not a string")
		}
	} else if raw, ok := extra["scp"]; ok {
		id.Scopes, ok = listClaim(raw)
		if !ok {
			return nil, refuse("the token's scp is neither a string nor an array of strings")
		}
	}
	if raw, ok := extra[v.cfg.ToolsClaim]; ok && string(raw) != "null" {
		id.Tools, ok = listClaim(raw)
		if !ok {
			return nil, refuse("the token's %s claim is neither a string nor an array of strings", v.cfg.ToolsClaim)
		}
		if id.Tools == nil {
			id.Tools = []string{}
		}
	}
	return id, nil
}

func hasControl(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return true
		}
	}
	return false
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

func stringClaim(raw json.RawMessage) (string, bool) {
	if raw == nil {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// listClaim reads a space-separated string or an array of strings.
func listClaim(raw json.RawMessage) ([]string, bool) {
	if s, ok := stringClaim(raw); ok {
		return strings.Fields(s), true
	}
	var list []string
	if json.Unmarshal(raw, &list) != nil {
		return nil, false
	}
	var out []string
	for _, x := range list {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out, true
}

// cached returns the identity of a token verified before, while it holds.
func (v *Verifier) cached(sum [32]byte, now time.Time) *Identity {
	v.cacheMu.Lock()
	defer v.cacheMu.Unlock()
	c, ok := v.cache[sum]
	if !ok {
		return nil
	}
	if c.gen != v.gen.Load() || !now.Before(c.until) || now.Before(c.at) {
		delete(v.cache, sum)
		return nil
	}
	return c.id
}

func (v *Verifier) remember(sum [32]byte, id *Identity, now time.Time, gen uint64) {
	until := now.Add(cacheFor)
	if exp := id.Expiry.Add(v.cfg.Leeway); exp.Before(until) {
		until = exp
	}
	v.cacheMu.Lock()
	defer v.cacheMu.Unlock()
	if len(v.cache) >= cacheEntries {
		clear(v.cache)
	}
	v.cache[sum] = cached{id: id, at: now, until: until, gen: gen}
}
