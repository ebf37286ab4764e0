// Package config reads the gateway configuration, toolgate.yaml (docs/configuration.md).
//
// Parse takes bytes, not a path: only cmd/ reads files. Every field has a documented
// default, so an empty document is a working sandbox configuration. Nothing in the file is
// ignored: an unknown field, a key set twice, a duration without a unit or a value of the
// wrong kind is a Problem with the YAML path, the line and, for a misspelt field, the field
// that was meant. Package configcheck then holds the configuration against a tools
// directory. config imports only toolgate's leaf packages (internal/defaults holds the
// defaults it shares with the packages that act on them).
package config

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/toolgate/toolgate/internal/defaults"
	"github.com/toolgate/toolgate/internal/oauth"
	"github.com/toolgate/toolgate/internal/secret"
	"github.com/toolgate/toolgate/internal/strictyaml"
	"github.com/toolgate/toolgate/internal/suggest"
)

// Defaults for a configuration that leaves a field out. A default that a
// package below the configuration acts on is written once, in
// internal/defaults, and the owning package's Default* constant is defined
// from the same value. The file locations, the listen address, the
// retention periods and the reload interval are the configuration's own.
const (
	DefaultListen             = "127.0.0.1:8080"
	DefaultToolsDir           = "./agent-tools"
	DefaultLedger             = "sqlite://./toolgate.db"
	DefaultRetention          = 168 * time.Hour
	DefaultTombstoneRetention = 720 * time.Hour
	DefaultJoinTimeout        = defaults.JoinTimeout
	DefaultMaxBodyBytes       = defaults.MaxBodyBytes
	DefaultLease              = defaults.Lease
	DefaultReconcileInterval  = defaults.ReconcileInterval
	DefaultMethod             = defaults.Method
	DefaultDownstreamTimeout  = defaults.DownstreamTimeout
	DefaultMaxAttempts        = defaults.MaxAttempts
	DefaultHoldAfter          = defaults.HoldAfter
	DefaultSettleAfter        = defaults.SettleAfter
	DefaultIdempotencyHeader  = defaults.IdempotencyHeader
	DefaultDownstreamKey      = defaults.DownstreamKey
	DefaultTenant             = defaults.Tenant
	DefaultDecisionLogArgs    = defaults.DecisionLogArguments
	DefaultUpstreamCheck      = defaults.UpstreamCheckInterval
	DefaultToolsReload        = 10 * time.Second
	DefaultIdempotencyMeta    = defaults.IdempotencyMeta
)

// Config is the whole gateway configuration.
type Config struct {
	Listen   string `yaml:"listen"`    // default 127.0.0.1:8080
	ToolsDir string `yaml:"tools_dir"` // default ./agent-tools
	Ledger   string `yaml:"ledger"`    // sqlite://PATH or postgres://…; default sqlite://./toolgate.db
	LedgerHA bool   `yaml:"ledger_ha"` // true: refuse to start on PostgreSQL without a synchronous standby; default false
	// ReplicaID is this gateway's stable identity on a shared (PostgreSQL)
	// ledger: unique among the running gateways, the same across restarts
	// (a StatefulSet pod name). With it, the claims a crashed process left
	// running become unknown as soon as the replica is back, not after
	// their lease. Default: none (claims of a lost process wait for the lease).
	ReplicaID string `yaml:"replica_id"`
	// LedgerSession is a postgres:// DSN of the ledger's database that
	// reaches PostgreSQL directly, for what needs a session of its own (the
	// replica_id lock) when ledger goes through a transaction pooler such
	// as PgBouncer (docs/postgres.md, "Behind a connection pooler").
	// Default: none (ledger's connections are used).
	LedgerSession      string        `yaml:"ledger_session"`
	Retention          time.Duration `yaml:"retention"`           // default 168h
	TombstoneRetention time.Duration `yaml:"tombstone_retention"` // default 720h
	JoinTimeout        time.Duration `yaml:"join_timeout"`        // default 5s
	MaxBodyBytes       int64         `yaml:"max_body_bytes"`      // default 1 MiB
	Lease              time.Duration `yaml:"lease"`               // default 30s
	ReconcileInterval  time.Duration `yaml:"reconcile_interval"`  // default 5s
	// UpstreamCheckInterval is how often serve reads the tools/list of each upstream MCP
	// server a binding names, to stop tools whose definition drifted; default 1m.
	UpstreamCheckInterval time.Duration `yaml:"upstream_check_interval"`
	// ToolsReloadInterval is how often serve checks the tools directory for a
	// change (a digest of its files' names, sizes and modification times) and
	// reloads it; SIGHUP reloads at once. Default 10s.
	ToolsReloadInterval time.Duration      `yaml:"tools_reload_interval"`
	DecisionLog         DecisionLog        `yaml:"decision_log"`
	Auth                *Auth              `yaml:"auth"` // nil: no auth, loopback only
	Bindings            map[string]Binding `yaml:"bindings"`

	// The limits against slow and greedy clients and the memory bounds
	// (limits.go, docs/security.md).
	HTTP        HTTP        `yaml:"http"`
	Limits      Limits      `yaml:"limits"`
	ReplayCache ReplayCache `yaml:"replay_cache"`

	// MCP is the /mcp server's settings (mcp.go).
	MCP MCPServer `yaml:"mcp"`

	file  string         // the file name given to ParseFile, "" for Parse
	lines map[string]int // YAML path → line, for problems found after parsing
}

// DecisionLog configures the decision log (docs/decision-log.md).
type DecisionLog struct {
	Path      string `yaml:"path"`      // "" disables the log
	Arguments string `yaml:"arguments"` // digest | masked | full; default masked

	QueueBytes      int64 `yaml:"queue_bytes"`       // bytes of records waiting to be written; default 16 MiB
	MaxPayloadBytes int   `yaml:"max_payload_bytes"` // a larger payload is logged by its digest; default 64 KiB
}

// Auth lists the API keys and, optionally, the authorization server whose
// access tokens are accepted beside them (docs/oauth.md).
type Auth struct {
	Keys  []Key  `yaml:"keys"`
	OAuth *OAuth `yaml:"oauth"`
}

// OAuth makes the gateway an OAuth 2.1 resource server (docs/oauth.md).
type OAuth struct {
	// Issuer is the authorization server: an https URL (http only on a
	// loopback address) whose RFC 8414 / OpenID metadata gives jwks_uri.
	Issuer string `yaml:"issuer"`
	// Audience must be in a token's aud (RFC 8707); default
	// http.public_url + /mcp.
	Audience      string `yaml:"audience"`
	TenantClaim   string `yaml:"tenant_claim"`   // default tenant
	ToolsClaim    string `yaml:"tools_claim"`    // default toolgate_tools
	AgentScope    string `yaml:"agent_scope"`    // default toolgate:call
	OperatorScope string `yaml:"operator_scope"` // default toolgate:operate
}

// Key is one API key, stored as the SHA-256 of the bearer token.
type Key struct {
	Name      string   `yaml:"name"`
	KeySHA256 string   `yaml:"key_sha256"`
	Tenant    string   `yaml:"tenant"`
	Role      string   `yaml:"role"`  // agent | operator
	Tools     []string `yaml:"tools"` // tool ids, or "*"
}

// Binding says where a tool runs (docs/configuration.md): an HTTP endpoint (URL) or a tool of an
// upstream MCP server (MCP).
type Binding struct {
	URL                string        `yaml:"url"`
	MCP                *MCPUpstream  `yaml:"mcp"`                // a tool of an upstream MCP server instead of a URL
	Method             string        `yaml:"method"`             // default POST
	Timeout            time.Duration `yaml:"timeout"`            // default 5s
	IdempotencyHeader  string        `yaml:"idempotency_header"` // default Idempotency-Key
	DownstreamKey      string        `yaml:"downstream_key"`     // default {tenant}:{action_id}
	Lookup             Endpoint      `yaml:"lookup"`
	State              Endpoint      `yaml:"state"`
	MaxAttempts        int           `yaml:"max_attempts"` // default 3
	NotStartedStatuses []int         `yaml:"not_started_statuses"`
	HoldAfter          time.Duration `yaml:"hold_after"` // default 15m
	RequireApproval    bool          `yaml:"require_approval"`
	SettleAfter        time.Duration `yaml:"settle_after"` // default 10s
	// Body is how the arguments go downstream: json (the default), form
	// (application/x-www-form-urlencoded) or none. BodyArg sends one
	// argument as the whole body; BodyOmit leaves arguments out of it (the
	// ones the URL carries); FormEncoding says how a form writes a field.
	Body         string                  `yaml:"body"`
	BodyArg      string                  `yaml:"body_arg"`
	BodyOmit     []string                `yaml:"body_omit"`
	FormEncoding map[string]FormEncoding `yaml:"form_encoding"`
}

// FormEncoding is how a form body writes one argument (OpenAPI 3's encoding
// object): style form (default), spaceDelimited, pipeDelimited or
// deepObject; explode (default true for form); content_type
// application/json writes the value as JSON text.
type FormEncoding struct {
	Style       string `yaml:"style"`
	Explode     *bool  `yaml:"explode"`
	ContentType string `yaml:"content_type"`
}

// BodyModes are the values of a binding's body.
var BodyModes = []string{"json", "form", "none"}

// FormStyles are the values of form_encoding's style.
var FormStyles = []string{"form", "spaceDelimited", "pipeDelimited", "deepObject"}

// Endpoint is a URL template, or (for an MCP binding's lookup) a tool of the upstream
// MCP server.
type Endpoint struct {
	URL     string `yaml:"url"`
	MCPTool string `yaml:"mcp_tool"`
}

// MCPUpstream names a tool of an upstream MCP server (streamable HTTP).
type MCPUpstream struct {
	URL     string            `yaml:"url"`
	Tool    string            `yaml:"tool"`
	Headers map[string]string `yaml:"headers"` // sent with every request to the server (e.g. Authorization)
	// IdempotencyMeta is the tools/call _meta key that carries the downstream key;
	// default toolgate/idempotency_key.
	IdempotencyMeta string `yaml:"idempotency_meta"`
}

// Severities of a Problem.
const (
	SeverityError   = "error"
	SeverityWarning = "warning"
)

// Rule ids of configuration problems, as `toolgate check` reports them.
const (
	RuleSyntax       = "config-syntax"        // not YAML, or not one document
	RuleFieldUnknown = "config-field-unknown" // a field toolgate does not know
	RuleInvalid      = "config-invalid"       // a value of the wrong kind or out of range
	RuleToolUnknown  = "binding-tool-unknown" // a binding or an API key names a tool the registry lacks
	RuleTemplate     = "binding-template"     // a URL template with an unknown or misplaced placeholder
	RuleUnbound      = "tool-unbound"         // a tool without a binding (warning)
	RuleUnpinned     = "upstream-unpinned"    // an MCP binding's tool without a usable pin (warning)
	// A form binding (body: form) whose fields could take one another's
	// names, or a parameter name a form field cannot carry.
	RuleFormNames = "binding-form-names"
	// Warnings about a binding's settings (the ledger holds each attempt to
	// its send window whatever these are, so none of them can duplicate an
	// effect; they make actions wait, or page someone, or hand an action's
	// fate to another host).
	RuleTiming     = "binding-timing"      // settle_after, hold_after or lease that cannot cover the timeout
	RuleNoLookup   = "binding-no-lookup"   // a mutating tool's binding without a lookup
	RuleLookupHost = "binding-lookup-host" // a lookup or state URL on another host than the binding's url
)

// Problem is one thing wrong with a configuration.
type Problem struct {
	File     string `json:"file,omitempty"`
	Line     int    `json:"line,omitempty"`
	Path     string `json:"path,omitempty"` // YAML path: bindings.crm.close_ticket.timeout
	Severity string `json:"severity"`
	Rule     string `json:"rule"`
	Message  string `json:"message"` // starts with the path when there is one
}

// String is "file:line: message".
func (p Problem) String() string {
	loc := p.File
	if loc == "" {
		loc = "toolgate.yaml"
	}
	if p.Line > 0 {
		loc = fmt.Sprintf("%s:%d", loc, p.Line)
	}
	return loc + ": " + p.Message
}

// Error refuses a configuration; it lists every problem, one per line.
type Error struct {
	Problems []Problem
	// Config is what could be read of the document (defaults applied), for callers that
	// go on checking what it names (toolgate serve and check hold it against the tools
	// directory, to report every problem at once).
	Config *Config
}

// Syntax reports whether the document is not YAML at all (so nothing of it was read).
func (e *Error) Syntax() bool {
	return len(e.Problems) > 0 && e.Problems[0].Rule == RuleSyntax
}

func (e *Error) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// Default returns the configuration an empty file gives.
func Default() *Config {
	c := &Config{}
	c.applyDefaults()
	return c
}

// Parse reads a toolgate.yaml document, applies defaults and checks it. Problems (an
// *Error) name the file toolgate.yaml.
func Parse(data []byte) (*Config, error) { return ParseFile("", data) }

// ParseFile is Parse for a document read from file, the name problems carry.
func ParseFile(file string, data []byte) (*Config, error) {
	c, problems := Inspect(file, data)
	if len(problems) > 0 {
		return nil, &Error{Problems: problems, Config: c}
	}
	return c, nil
}

// Inspect reads what it can of a toolgate.yaml document and returns it (with defaults
// applied, never nil) with every problem found, sorted by line: `toolgate check` uses it
// to go on checking the tools directory of a configuration that has problems.
func Inspect(file string, data []byte) (*Config, []Problem) {
	c := &Config{file: file}
	root, p := strictyaml.Parse(data)
	if p != nil {
		c.lines = map[string]int{"": 1}
		c.applyDefaults()
		return c, []Problem{c.problem(SeverityError, RuleSyntax, p.Line, "", p.Message)}
	}
	var problems []Problem
	if root != nil {
		lines, ps := strictyaml.Decode(root, c)
		c.lines = lines
		for _, p := range ps {
			rule := RuleInvalid
			if strings.HasPrefix(p.Message, "unknown field") {
				rule = RuleFieldUnknown
			}
			problems = append(problems, c.problem(SeverityError, rule, p.Line, p.Path, withPath(p.Path, p.Message)))
		}
	}
	if c.lines == nil {
		c.lines = map[string]int{"": 1}
	}
	c.applyDefaults()
	problems = append(problems, c.check()...)
	sortProblems(problems)
	return c, problems
}

func withPath(path, msg string) string {
	if path == "" {
		return msg
	}
	return path + ": " + msg
}

// File is the name the configuration was parsed from ("" for Parse).
func (c *Config) File() string { return c.file }

func (c *Config) problem(severity, rule string, line int, path, msg string) Problem {
	if line <= 0 {
		line = 1
	}
	return Problem{File: c.file, Line: line, Path: path, Severity: severity, Rule: rule, Message: msg}
}

// line is the line of a YAML path, or of its nearest ancestor present in the file.
func (c *Config) line(path string) int { return strictyaml.LineOf(c.lines, path) }

// bindingLine is the line of a path inside bindings.ID (tool ids contain dots, so the
// generic ancestor walk could stop inside the id).
func (c *Config) bindingLine(id, sub string) int {
	base := "bindings." + id
	if sub != "" {
		if l, ok := c.lines[base+"."+sub]; ok {
			return l
		}
		if head, _, ok := strings.Cut(sub, "."); ok {
			if l, ok := c.lines[base+"."+head]; ok {
				return l
			}
		}
	}
	if l, ok := c.lines[base]; ok {
		return l
	}
	return c.line("bindings")
}

func sortProblems(ps []Problem) {
	sort.SliceStable(ps, func(i, j int) bool {
		if ps[i].File != ps[j].File {
			return ps[i].File < ps[j].File
		}
		return ps[i].Line < ps[j].Line
	})
}

func (c *Config) applyDefaults() {
	setStr(&c.Listen, DefaultListen)
	setStr(&c.ToolsDir, DefaultToolsDir)
	setStr(&c.Ledger, DefaultLedger)
	setDur(&c.Retention, DefaultRetention)
	setDur(&c.TombstoneRetention, DefaultTombstoneRetention)
	setDur(&c.JoinTimeout, DefaultJoinTimeout)
	setDur(&c.Lease, DefaultLease)
	setDur(&c.ReconcileInterval, DefaultReconcileInterval)
	setDur(&c.UpstreamCheckInterval, DefaultUpstreamCheck)
	setDur(&c.ToolsReloadInterval, DefaultToolsReload)
	if c.Auth != nil && c.Auth.OAuth != nil {
		o := c.Auth.OAuth
		setStr(&o.TenantClaim, oauth.DefaultTenantClaim)
		setStr(&o.ToolsClaim, oauth.DefaultToolsClaim)
		setStr(&o.AgentScope, oauth.DefaultAgentScope)
		setStr(&o.OperatorScope, oauth.DefaultOperatorScope)
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	setStr(&c.DecisionLog.Arguments, DefaultDecisionLogArgs)
	for id, b := range c.Bindings {
		setStr(&b.Method, DefaultMethod)
		b.Method = strings.ToUpper(b.Method)
		setDur(&b.Timeout, DefaultDownstreamTimeout)
		setStr(&b.IdempotencyHeader, DefaultIdempotencyHeader)
		setStr(&b.DownstreamKey, DefaultDownstreamKey)
		if b.MaxAttempts == 0 {
			b.MaxAttempts = DefaultMaxAttempts
		}
		setDur(&b.HoldAfter, DefaultHoldAfter)
		setDur(&b.SettleAfter, DefaultSettleAfter)
		c.Bindings[id] = b
	}
	c.applyLimitDefaults()
	c.applyMCPDefaults()
}

var hex64 = regexp.MustCompile(`^[0-9a-fA-F]{64}$`)

// Methods are the HTTP methods a binding may use.
var Methods = []string{"GET", "POST", "PUT", "PATCH", "DELETE"}

var (
	argumentModes = []string{"digest", "masked", "full"}
	roles         = []string{"agent", "operator"}
	headerTokenRE = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
)

// oneOf is the message for a value that is not one of the allowed ones.
func oneOf(what, got string, allowed []string) string {
	msg := fmt.Sprintf("%s %q is not %s", what, got, orList(allowed))
	if near := suggest.Nearest(got, allowed, 1); len(near) > 0 {
		msg += "; " + suggest.DidYouMean(near...)
	}
	return msg
}

func orList(items []string) string {
	if len(items) == 1 {
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}

// replicaIDPattern is what replica_id may be.
var replicaIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// check finds the problems a configuration has on its own (without the tools directory).
func (c *Config) check() []Problem {
	var out []Problem
	bad := func(path, format string, a ...any) {
		out = append(out, c.problem(SeverityError, RuleInvalid, c.line(path), path, withPath(path, fmt.Sprintf(format, a...))))
	}
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		bad("listen", "%q is not host:port (e.g. 127.0.0.1:8080)", c.Listen)
	}
	if u := c.HTTP.PublicURL; u != "" {
		if err := checkPublicURL(u); err != nil {
			bad("http.public_url", "%q %v", u, err)
		}
	} else if msg := publicURLRequired(c); msg != "" {
		bad("http.public_url", "%s", msg)
	}
	if l, err := LedgerDSN(c.Ledger); err != nil {
		bad("ledger", "%v", err)
	} else if c.LedgerHA && l.Kind != "postgres" {
		bad("ledger_ha", "true needs a postgres:// ledger with a synchronous standby; %s has no standby", l.Kind)
	} else if c.ReplicaID != "" && l.Kind != "postgres" {
		bad("replica_id", "needs a postgres:// ledger: a %s ledger has one gateway, whose running claims become unknown at every start", l.Kind)
	}
	if c.LedgerSession != "" {
		if l, err := LedgerDSN(c.LedgerSession); err != nil || l.Kind != "postgres" {
			bad("ledger_session", "must be a postgres:// DSN that reaches the ledger's PostgreSQL directly (not through a pooler)")
		} else if ld, err := LedgerDSN(c.Ledger); err == nil && ld.Kind != "postgres" {
			bad("ledger_session", "needs a postgres:// ledger")
		}
	}
	if c.ReplicaID != "" && !replicaIDPattern.MatchString(c.ReplicaID) {
		bad("replica_id", "%q must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit", c.ReplicaID)
	}
	if c.TombstoneRetention < c.Retention {
		path := "tombstone_retention"
		if _, ok := c.lines[path]; !ok {
			path = "retention"
		}
		bad(path, "tombstone_retention (%s) must not be shorter than retention (%s)", c.TombstoneRetention, c.Retention)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"retention", c.Retention}, {"tombstone_retention", c.TombstoneRetention}, {"join_timeout", c.JoinTimeout}, {"lease", c.Lease}, {"reconcile_interval", c.ReconcileInterval}, {"upstream_check_interval", c.UpstreamCheckInterval}, {"tools_reload_interval", c.ToolsReloadInterval}} {
		if d.v < 0 {
			bad(d.name, "must not be negative")
		}
	}
	if c.MaxBodyBytes < 0 {
		bad("max_body_bytes", "must not be negative")
	}
	c.checkLimits(bad)
	c.checkMCPServer(bad)
	if m := c.DecisionLog.Arguments; !contains(argumentModes, m) {
		bad("decision_log.arguments", "%s", oneOf("arguments mode", m, argumentModes))
	}
	if c.Auth != nil {
		names := map[string]bool{}
		for i, k := range c.Auth.Keys {
			where := fmt.Sprintf("auth.keys[%d]", i)
			if k.Name == "" {
				bad(where, "name is required")
			} else if names[k.Name] {
				bad(where+".name", "name %q is used twice", k.Name)
			}
			names[k.Name] = true
			if !hex64.MatchString(k.KeySHA256) {
				bad(where+".key_sha256", "key_sha256 must be 64 hex digits, the SHA-256 of the bearer key (sha256sum)")
			}
			if k.Tenant == "" {
				bad(where, "tenant is required")
			}
			if !contains(roles, k.Role) {
				path := where + ".role"
				if k.Role == "" {
					path = where
				}
				bad(path, "%s", oneOf("role", k.Role, roles))
			}
		}
	}
	if c.Auth != nil && c.Auth.OAuth != nil {
		c.checkOAuth(bad)
	}
	for _, id := range sortedIDs(c.Bindings) {
		out = append(out, c.checkBinding(id, c.Bindings[id])...)
	}
	return out
}

func (c *Config) checkBinding(id string, b Binding) []Problem {
	var out []Problem
	bad := func(sub, format string, a ...any) {
		path := "bindings." + id
		if sub != "" {
			path += "." + sub
		}
		out = append(out, c.problem(SeverityError, RuleInvalid, c.bindingLine(id, sub), path, withPath(path, fmt.Sprintf(format, a...))))
	}
	if id == "" {
		bad("", "a binding needs the tool id as its name")
	}
	switch {
	case b.MCP != nil && b.URL != "":
		bad("mcp", "a binding has either url (an HTTP endpoint) or mcp (a tool of an upstream MCP server), not both")
	case b.MCP != nil:
		if b.MCP.URL == "" {
			bad("mcp", "mcp.url is required: the upstream MCP server's streamable HTTP endpoint")
		}
		if b.MCP.Tool == "" {
			bad("mcp", "mcp.tool is required: the tool's name on the upstream MCP server")
		}
		out = append(out, c.checkMCP(id, b)...)
	case b.URL == "":
		bad("", "url is required (or mcp: {url, tool} for a tool of an upstream MCP server)")
	}
	if !contains(Methods, b.Method) {
		bad("method", "%s", oneOf("method", b.Method, Methods))
	}
	if !headerTokenRE.MatchString(b.IdempotencyHeader) {
		bad("idempotency_header", "%q is not a valid HTTP header name", b.IdempotencyHeader)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"timeout", b.Timeout}, {"hold_after", b.HoldAfter}, {"settle_after", b.SettleAfter}} {
		if d.v < 0 {
			bad(d.name, "must not be negative")
		}
	}
	if b.MaxAttempts < 0 {
		bad("max_attempts", "must not be negative")
	}
	for i, s := range b.NotStartedStatuses {
		if s < 500 || s > 599 {
			bad(fmt.Sprintf("not_started_statuses[%d]", i), "%d is not a 5xx status (only a 5xx answer can prove nothing was done)", s)
		}
	}
	if b.Body != "" && !contains(BodyModes, b.Body) {
		bad("body", "%s", oneOf("body", b.Body, BodyModes))
	}
	if b.MCP != nil && (b.Body != "" || b.BodyArg != "" || len(b.BodyOmit) > 0 || len(b.FormEncoding) > 0) {
		bad("body", "body, body_arg, body_omit and form_encoding are for HTTP bindings (url:); an upstream MCP tool takes the arguments as they are")
	}
	if b.Body == "none" && (b.BodyArg != "" || len(b.BodyOmit) > 0) {
		bad("body", "body: none sends no body, so body_arg and body_omit have nothing to shape")
	}
	if b.BodyArg != "" && len(b.BodyOmit) > 0 {
		bad("body_omit", "with body_arg the body is that one argument: body_omit has nothing to leave out")
	}
	if len(b.FormEncoding) > 0 && b.Body != "form" {
		bad("form_encoding", "form_encoding is for body: form")
	}
	for _, name := range sortedKeys(b.FormEncoding) {
		e := b.FormEncoding[name]
		if e.Style != "" && !contains(FormStyles, e.Style) {
			bad("form_encoding."+name+".style", "%s", oneOf("style", e.Style, FormStyles))
		}
		if e.ContentType != "" && e.ContentType != "application/json" {
			bad("form_encoding."+name+".content_type", "%q: the one content type a form field takes is application/json (the value as JSON text)", e.ContentType)
		}
	}
	if b.MCP == nil && b.Lookup.MCPTool != "" {
		bad("lookup.mcp_tool", "mcp_tool is for bindings to an upstream MCP server (mcp:); this binding has url: use lookup.url")
	}
	if b.State.MCPTool != "" {
		bad("state.mcp_tool", "the state probe is a URL: use state.url")
	}
	for _, t := range b.Templates() {
		for _, msg := range checkTemplate(t.Value, t.URL, t.AllowKey) {
			bad(t.Field, "%s", msg)
		}
	}
	return out
}

// Template is one templated field of a binding.
type Template struct {
	Field    string // "url", "lookup.url", "downstream_key"
	Value    string
	URL      bool // a URL: the scheme and host must be fixed
	AllowKey bool // may use {downstream_key}
}

// Templates are the templated fields of a binding that it sets, and its
// downstream_key (defaults applied).
func (b Binding) Templates() []Template {
	var out []Template
	if b.URL != "" {
		out = append(out, Template{"url", b.URL, true, true})
	}
	if b.Lookup.URL != "" {
		out = append(out, Template{"lookup.url", b.Lookup.URL, true, true})
	}
	if b.State.URL != "" {
		out = append(out, Template{"state.url", b.State.URL, true, true})
	}
	out = append(out, Template{"downstream_key", b.DownstreamKey, false, false})
	return out
}

// Bound reports whether c has a binding for the tool id: the filter for exports.
func (c *Config) Bound(toolID string) bool {
	_, ok := c.Bindings[toolID]
	return ok
}

// HashKey returns the hex SHA-256 of a bearer key, the form auth.keys stores.
func HashKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// LedgerDSN splits a ledger URL into its kind and location:
// "sqlite://./toolgate.db" is ("sqlite", "./toolgate.db"); a postgres URL is
// returned whole.
func LedgerDSN(s string) (Ledger, error) {
	switch {
	case strings.HasPrefix(s, "sqlite://"):
		p := strings.TrimPrefix(s, "sqlite://")
		if p == "" {
			return Ledger{}, fmt.Errorf("%q names no file", s)
		}
		return Ledger{Kind: "sqlite", Location: p}, nil
	case strings.HasPrefix(s, "postgres://"), strings.HasPrefix(s, "postgresql://"):
		if _, err := url.Parse(s); err != nil {
			return Ledger{}, fmt.Errorf("%q is not a valid postgres URL", secret.RedactURL(s))
		}
		return Ledger{Kind: "postgres", Location: s}, nil
	}
	return Ledger{}, fmt.Errorf("%q is neither sqlite://PATH nor postgres://…", secret.RedactURL(s))
}

// Ledger is a parsed ledger setting.
type Ledger struct {
	Kind     string // sqlite | postgres
	Location string // file path, or the whole postgres URL
}

func setStr(p *string, d string) {
	if *p == "" {
		*p = d
	}
}

func setDur(p *time.Duration, d time.Duration) {
	if *p == 0 {
		*p = d
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func sortedIDs[V any](m map[string]V) []string {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// checkOAuth holds auth.oauth to its rules; the defaults are applied.
func (c *Config) checkOAuth(bad func(path, format string, a ...any)) {
	o := c.Auth.OAuth
	if err := oauth.CheckIssuer(o.Issuer); err != nil {
		bad("auth.oauth.issuer", "%s", strings.TrimPrefix(err.Error(), "oauth: "))
	}
	switch {
	case o.Audience == "" && c.HTTP.PublicURL == "":
		bad("auth.oauth", "audience is required without http.public_url (it defaults to public_url + /mcp): the resource URL clients request tokens for, e.g. https://gw.example.com/mcp")
	case o.Audience != "":
		if u, err := url.Parse(o.Audience); err != nil || u.Scheme == "" || u.Host == "" || u.Fragment != "" {
			bad("auth.oauth.audience", "%q must be an absolute URL without a fragment (RFC 8707), e.g. https://gw.example.com/mcp", o.Audience)
		}
	}
	scopes := map[string]string{"tenant_claim": o.TenantClaim, "tools_claim": o.ToolsClaim, "agent_scope": o.AgentScope, "operator_scope": o.OperatorScope}
	for _, name := range sortedKeys(scopes) {
		if v := scopes[name]; strings.ContainsAny(v, " \t\r\n\"\\") {
			bad("auth.oauth."+name, "%q must not contain spaces, quotes or backslashes", v)
		}
	}
	if o.AgentScope == o.OperatorScope {
		bad("auth.oauth.operator_scope", "must differ from agent_scope (%q)", o.AgentScope)
	}
}

// OAuthAudience is the audience tokens must carry: auth.oauth.audience, else
// http.public_url + /mcp.
func (c *Config) OAuthAudience() string {
	if c.Auth == nil || c.Auth.OAuth == nil {
		return ""
	}
	if c.Auth.OAuth.Audience != "" {
		return c.Auth.OAuth.Audience
	}
	if c.HTTP.PublicURL == "" {
		return ""
	}
	return strings.TrimSuffix(c.HTTP.PublicURL, "/") + "/mcp"
}

// checkPublicURL says what is wrong with a public_url: it must be an absolute
// http(s) URL with a host, and no user, query or fragment.
func checkPublicURL(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return fmt.Errorf("is not a URL: %v", errors.Unwrap(err))
	case u.Scheme != "http" && u.Scheme != "https":
		return errors.New("must start with http:// or https:// (e.g. https://tools.example.com)")
	case u.Host == "":
		return errors.New("names no host (e.g. https://tools.example.com)")
	case u.User != nil:
		return errors.New("must not hold a user or password")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return errors.New("must not have a query or a fragment")
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
