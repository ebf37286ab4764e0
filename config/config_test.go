package config

import (
	"strings"
	"testing"
	"time"
)

func TestParseFullExample(t *testing.T) {
	t.Parallel()
	doc := `
listen: 127.0.0.1:8080
tools_dir: ./agent-tools
ledger: postgres://user:pass@db.internal/toolgate
retention: 168h
tombstone_retention: 720h
join_timeout: 5s
max_body_bytes: 1048576
lease: 30s
reconcile_interval: 5s
decision_log: {path: ./decisions.jsonl, arguments: digest}
auth:
  keys:
    - {name: cs-agent, key_sha256: "` + HashKey("secret-1") + `", tenant: acme, role: agent, tools: [refund.create_request]}
    - {name: oncall, key_sha256: "` + HashKey("secret-2") + `", tenant: acme, role: operator, tools: ["*"]}
bindings:
  refund.create_request:
    url: http://127.0.0.1:9090/refunds
    method: post
    timeout: 2s
    idempotency_header: Idempotency-Key
    downstream_key: "{tenant}:{action_id}"
    lookup: {url: "http://127.0.0.1:9090/refunds/by-key/{downstream_key}"}
    state: {url: "http://127.0.0.1:9090/orders/{args.order_id}"}
    max_attempts: 4
    not_started_statuses: [503]
    hold_after: 15m
    require_approval: true
    settle_after: 10s
`
	c, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	b := c.Bindings["refund.create_request"]
	if c.Ledger != "postgres://user:pass@db.internal/toolgate" || c.DecisionLog.Arguments != "digest" || len(c.Auth.Keys) != 2 ||
		b.Method != "POST" || b.Timeout != 2*time.Second || b.MaxAttempts != 4 || !b.RequireApproval ||
		b.Lookup.URL == "" || b.State.URL == "" || b.NotStartedStatuses[0] != 503 || b.SettleAfter != 10*time.Second {
		t.Fatalf("parsed %+v / %+v", c, b)
	}
	if l, _ := LedgerDSN(c.Ledger); l.Kind != "postgres" {
		t.Fatalf("ledger kind %q", l.Kind)
	}
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{"", "# nothing\n", "bindings:\n  t:\n    url: http://x/y\n"} {
		c, err := Parse([]byte(doc))
		if err != nil {
			t.Fatalf("%q: %v", doc, err)
		}
		if c.Listen != DefaultListen || c.Ledger != DefaultLedger || c.Retention != DefaultRetention || c.JoinTimeout != DefaultJoinTimeout ||
			c.MaxBodyBytes != DefaultMaxBodyBytes || c.DecisionLog.Arguments != "masked" || c.Auth != nil {
			t.Fatalf("%q: defaults %+v", doc, c)
		}
		for _, b := range c.Bindings {
			if b.Method != "POST" || b.Timeout != DefaultDownstreamTimeout || b.MaxAttempts != DefaultMaxAttempts ||
				b.DownstreamKey != DefaultDownstreamKey || b.SettleAfter != DefaultSettleAfter || b.HoldAfter != DefaultHoldAfter {
				t.Fatalf("binding defaults %+v", b)
			}
		}
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, doc, want string
	}{
		{"unknown field with its line", "listen: 127.0.0.1:1\nlisten_addr: x\n", "line 2"},
		{"bad duration", "retention: soon\n", "line 1"},
		{"bad listen", "listen: nowhere\n", "listen"},
		{"bad ledger", "ledger: mysql://x\n", "ledger"},
		{"empty sqlite path", "ledger: sqlite://\n", "names no file"},
		{"tombstone shorter than retention", "retention: 10h\ntombstone_retention: 1h\n", "tombstone_retention"},
		{"bad arguments mode", "decision_log: {arguments: raw}\n", "decision_log.arguments"},
		{"bad key hash", "auth: {keys: [{name: a, key_sha256: abc, tenant: t, role: agent}]}\n", "64 hex"},
		{"bad role", "auth: {keys: [{name: a, key_sha256: " + HashKey("k") + ", tenant: t, role: admin}]}\n", "role"},
		{"no tenant", "auth: {keys: [{name: a, key_sha256: " + HashKey("k") + ", role: agent}]}\n", "tenant"},
		{"duplicate key name", "auth: {keys: [{name: a, key_sha256: " + HashKey("k") + ", tenant: t, role: agent}, {name: a, key_sha256: " + HashKey("j") + ", tenant: t, role: agent}]}\n", "twice"},
		{"binding without url", "bindings: {t: {method: POST}}\n", "url is required"},
		{"binding with a non-http url", "bindings: {t: {url: ftp://x/y}}\n", "http(s)"},
		{"not-started status that is not 5xx", "bindings: {t: {url: http://x/y, not_started_statuses: [404]}}\n", "5xx"},
		{"not a mapping", "- a\n- b\n", "toolgate.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tt.doc))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one mentioning %q", err, tt.want)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"", "listen: 127.0.0.1:8080\n", "bindings: {t: {url: http://x/{args.a}}}\n", "auth: {keys: []}\n", "retention: -1s\n", "{", "\t"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err == nil && (c.Listen == "" || c.Ledger == "" || c.MaxBodyBytes < 0) {
			t.Fatalf("accepted a configuration without defaults: %+v", c)
		}
	})
}
