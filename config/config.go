// Package config reads the gateway configuration, toolgate.yaml (SPEC 2).
//
// Parse takes bytes, not a path: only cmd/ reads files. Every field has a
// documented default, so an empty document is a working sandbox configuration.
package config

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"regexp"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Defaults for a configuration that leaves a field out.
const (
	DefaultListen             = "127.0.0.1:8080"
	DefaultToolsDir           = "./agent-tools"
	DefaultLedger             = "sqlite://./toolgate.db"
	DefaultRetention          = 168 * time.Hour
	DefaultTombstoneRetention = 720 * time.Hour
	DefaultJoinTimeout        = 5 * time.Second
	DefaultMaxBodyBytes       = 1 << 20
	DefaultLease              = 30 * time.Second
	DefaultReconcileInterval  = 5 * time.Second
	DefaultDownstreamTimeout  = 5 * time.Second
	DefaultMaxAttempts        = 3
	DefaultHoldAfter          = 15 * time.Minute
	DefaultSettleAfter        = 10 * time.Second
	DefaultIdempotencyHeader  = "Idempotency-Key"
	DefaultDownstreamKey      = "{tenant}:{action_id}"
	DefaultTenant             = "default"
)

// Config is the whole gateway configuration.
type Config struct {
	Listen             string             `yaml:"listen"`              // default 127.0.0.1:8080
	ToolsDir           string             `yaml:"tools_dir"`           // default ./agent-tools
	Ledger             string             `yaml:"ledger"`              // sqlite://PATH or postgres://…; default sqlite://./toolgate.db
	LedgerHA           bool               `yaml:"ledger_ha"`           // true: refuse to start on PostgreSQL without a synchronous standby; default false
	Retention          time.Duration      `yaml:"retention"`           // default 168h
	TombstoneRetention time.Duration      `yaml:"tombstone_retention"` // default 720h
	JoinTimeout        time.Duration      `yaml:"join_timeout"`        // default 5s
	MaxBodyBytes       int64              `yaml:"max_body_bytes"`      // default 1 MiB
	Lease              time.Duration      `yaml:"lease"`               // default 30s
	ReconcileInterval  time.Duration      `yaml:"reconcile_interval"`  // default 5s
	DecisionLog        DecisionLog        `yaml:"decision_log"`
	Auth               *Auth              `yaml:"auth"` // nil: no auth, loopback only
	Bindings           map[string]Binding `yaml:"bindings"`
}

// DecisionLog configures the decision log (SPEC 5).
type DecisionLog struct {
	Path      string `yaml:"path"`      // "" disables the log
	Arguments string `yaml:"arguments"` // digest | masked | full; default masked
}

// Auth lists the API keys.
type Auth struct {
	Keys []Key `yaml:"keys"`
}

// Key is one API key, stored as the SHA-256 of the bearer token.
type Key struct {
	Name      string   `yaml:"name"`
	KeySHA256 string   `yaml:"key_sha256"`
	Tenant    string   `yaml:"tenant"`
	Role      string   `yaml:"role"`  // agent | operator
	Tools     []string `yaml:"tools"` // tool ids, or "*"
}

// Binding says where a tool runs (SPEC 2).
type Binding struct {
	URL                string        `yaml:"url"`
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
}

// Endpoint is a URL template.
type Endpoint struct {
	URL string `yaml:"url"`
}

// Default returns the configuration an empty file gives.
func Default() *Config {
	c := &Config{}
	c.applyDefaults()
	return c
}

// Parse reads a toolgate.yaml document, applies defaults and checks it. Unknown
// fields are errors, reported with their line.
func Parse(data []byte) (*Config, error) {
	c := &Config{}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("toolgate.yaml: %w", err)
	}
	c.applyDefaults()
	if err := c.check(); err != nil {
		return nil, err
	}
	return c, nil
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
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	setStr(&c.DecisionLog.Arguments, "masked")
	for id, b := range c.Bindings {
		setStr(&b.Method, "POST")
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
}

var hex64 = regexp.MustCompile(`^[0-9a-fA-F]{64}$`)

func (c *Config) check() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		bad("listen: %q is not host:port", c.Listen)
	}
	if l, err := LedgerDSN(c.Ledger); err != nil {
		bad("ledger: %v", err)
	} else if c.LedgerHA && l.Kind != "postgres" {
		bad("ledger_ha: true needs a postgres:// ledger with a synchronous standby; %s has no standby", l.Kind)
	}
	if c.TombstoneRetention < c.Retention {
		bad("tombstone_retention (%s) must not be shorter than retention (%s)", c.TombstoneRetention, c.Retention)
	}
	for name, d := range map[string]time.Duration{"retention": c.Retention, "join_timeout": c.JoinTimeout, "lease": c.Lease, "reconcile_interval": c.ReconcileInterval} {
		if d < 0 {
			bad("%s must not be negative", name)
		}
	}
	if c.MaxBodyBytes < 0 {
		bad("max_body_bytes must not be negative")
	}
	switch c.DecisionLog.Arguments {
	case "digest", "masked", "full":
	default:
		bad("decision_log.arguments: %q is not digest, masked or full", c.DecisionLog.Arguments)
	}
	if c.Auth != nil {
		names := map[string]bool{}
		for i, k := range c.Auth.Keys {
			where := fmt.Sprintf("auth.keys[%d]", i)
			if k.Name == "" {
				bad("%s: name is required", where)
			} else if names[k.Name] {
				bad("%s: name %q is used twice", where, k.Name)
			}
			names[k.Name] = true
			if !hex64.MatchString(k.KeySHA256) {
				bad("%s (%s): key_sha256 must be 64 hex digits", where, k.Name)
			}
			if k.Tenant == "" {
				bad("%s (%s): tenant is required", where, k.Name)
			}
			if k.Role != "agent" && k.Role != "operator" {
				bad("%s (%s): role %q is not agent or operator", where, k.Name, k.Role)
			}
		}
	}
	for id, b := range c.Bindings {
		where := "bindings." + id
		if b.URL == "" {
			bad("%s: url is required", where)
		} else if u, err := url.Parse(strings.NewReplacer("{", "", "}", "").Replace(b.URL)); err != nil || (u.Scheme != "http" && u.Scheme != "https") {
			bad("%s: url %q is not an http(s) URL", where, b.URL)
		}
		if b.Timeout < 0 || b.HoldAfter < 0 || b.SettleAfter < 0 {
			bad("%s: durations must not be negative", where)
		}
		if b.MaxAttempts < 0 {
			bad("%s: max_attempts must not be negative", where)
		}
		for _, s := range b.NotStartedStatuses {
			if s < 500 || s > 599 {
				bad("%s: not_started_statuses: %d is not a 5xx status", where, s)
			}
		}
	}
	return errors.Join(errs...)
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
		return Ledger{Kind: "postgres", Location: s}, nil
	}
	return Ledger{}, fmt.Errorf("%q is neither sqlite://PATH nor postgres://…", s)
}

// Ledger is a parsed ledger setting.
type Ledger struct {
	Kind     string // sqlite | postgres
	Location string // file path, or the whole postgres URL
}

// HashKey returns the hex SHA-256 of a bearer key, the form auth.keys stores.
func HashKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
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
