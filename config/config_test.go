package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
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

// TestDefaults: a configuration that leaves everything out gets the defaults
// docs/configuration.md promises. The expectations are the documented
// values written out, not the constants the code uses, so a constant that
// drifts from the docs fails here.
func TestDefaults(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{"", "# nothing\n", "bindings:\n  t:\n    url: http://x/y\n"} {
		c, err := Parse([]byte(doc))
		if err != nil {
			t.Fatalf("%q: %v", doc, err)
		}
		got := map[string]any{
			"listen": c.Listen, "ledger": c.Ledger, "retention": c.Retention, "join_timeout": c.JoinTimeout,
			"max_body_bytes": c.MaxBodyBytes, "decision_log.arguments": c.DecisionLog.Arguments, "auth": c.Auth == nil,
		}
		want := map[string]any{
			"listen": "127.0.0.1:8080", "ledger": "sqlite://./toolgate.db", "retention": 168 * time.Hour,
			"join_timeout": 5 * time.Second, "max_body_bytes": int64(1048576), "decision_log.arguments": "masked", "auth": true,
		}
		for k, w := range want {
			if fmt.Sprint(got[k]) != fmt.Sprint(w) {
				t.Errorf("%q: %s = %v, the docs say %v", doc, k, got[k], w)
			}
		}
		for id, b := range c.Bindings {
			got := map[string]any{"method": b.Method, "timeout": b.Timeout, "max_attempts": b.MaxAttempts,
				"downstream_key": b.DownstreamKey, "settle_after": b.SettleAfter, "hold_after": b.HoldAfter}
			want := map[string]any{"method": "POST", "timeout": 5 * time.Second, "max_attempts": 3,
				"downstream_key": "{tenant}:{action_id}", "settle_after": 10 * time.Second, "hold_after": 15 * time.Minute}
			for k, w := range want {
				if fmt.Sprint(got[k]) != fmt.Sprint(w) {
					t.Errorf("%q: bindings.%s.%s = %v, the docs say %v", doc, id, k, got[k], w)
				}
			}
		}
	}
}

// TestParseErrors: every problem of a configuration on its own, with the file named once,
// the line, the YAML path and its fix; never a Go type name.
func TestParseErrors(t *testing.T) {
	t.Parallel()
	key := HashKey("k")
	tests := []struct {
		name, doc, want string
	}{
		{"unknown field with did-you-mean", "bindings:\n  crm.close_ticket:\n    url: http://x/y\n    timout: 5s\n",
			`toolgate.yaml:4: bindings.crm.close_ticket.timout: unknown field; did you mean "timeout"?`},
		{"unknown top-level field", "listen: 127.0.0.1:1\nlisten_addr: x\n",
			`toolgate.yaml:2: listen_addr: unknown field (known fields: auth, bindings, decision_log, http, join_timeout, lease, ledger, ledger_ha, ledger_session, limits, listen, max_body_bytes, mcp, reconcile_interval, replay_cache, replica_id, retention, tombstone_retention, tools_dir, tools_reload_interval, upstream_check_interval)`},
		{"duration without a unit", "bindings:\n  t:\n    url: http://x/y\n    timeout: 5\n",
			`toolgate.yaml:4: bindings.t.timeout: 5 has no unit: write a number with a unit, such as 500ms, 5s, 15m or 168h (5s for seconds)`},
		{"duration that is a word", "retention: soon\n",
			`toolgate.yaml:1: retention: "soon" is not a duration: write a number with a unit, such as 500ms, 5s, 15m or 168h`},
		{"syntax error at its line", "listen: 127.0.0.1:1\nbindings:\n  t:\n    url: http://x/y\n   method: GET\n",
			`toolgate.yaml:5: invalid YAML: value is not allowed in this context (check this line's indentation against the lines above)`},
		{"key set twice", "listen: 127.0.0.1:1\nlisten: 127.0.0.1:2\n", `toolgate.yaml:2: listen: is set twice (first at line 1); remove one`},
		{"bad listen", "listen: nowhere\n", `toolgate.yaml:1: listen: "nowhere" is not host:port (e.g. 127.0.0.1:8080)`},
		{"bad ledger", "ledger: mysql://x\n", `toolgate.yaml:1: ledger: "mysql://x" is neither sqlite://PATH nor postgres://…`},
		{"ledger password not echoed", "ledger: mysql://u:secret@h/db\n", `toolgate.yaml:1: ledger: "mysql://u:xxxxx@h/db" is neither sqlite://PATH nor postgres://…`},
		{"empty sqlite path", "ledger: sqlite://\n", `toolgate.yaml:1: ledger: "sqlite://" names no file`},
		{"tombstone shorter than retention", "retention: 10h\ntombstone_retention: 1h\n", `toolgate.yaml:2: tombstone_retention: tombstone_retention (1h0m0s) must not be shorter than retention (10h0m0s)`},
		{"negative duration", "join_timeout: -1s\n", `toolgate.yaml:1: join_timeout: must not be negative`},
		{"bad arguments mode", "decision_log: {arguments: maskd}\n", `toolgate.yaml:1: decision_log.arguments: arguments mode "maskd" is not digest, masked or full; did you mean "masked"?`},
		{"bad key hash", "auth:\n  keys:\n    - {name: a, key_sha256: abc, tenant: t, role: agent}\n", `toolgate.yaml:3: auth.keys[0].key_sha256: key_sha256 must be 64 hex digits, the SHA-256 of the bearer key (sha256sum)`},
		{"bad role", "auth: {keys: [{name: a, key_sha256: " + key + ", tenant: t, role: operater}]}\n", `toolgate.yaml:1: auth.keys[0].role: role "operater" is not agent or operator; did you mean "operator"?`},
		{"no tenant", "auth:\n  keys:\n  - name: a\n    key_sha256: " + key + "\n    role: agent\n", `toolgate.yaml:3: auth.keys[0]: tenant is required`},
		{"duplicate key name", "auth: {keys: [{name: a, key_sha256: " + key + ", tenant: t, role: agent}, {name: a, key_sha256: " + HashKey("j") + ", tenant: t, role: agent}]}\n", `toolgate.yaml:1: auth.keys[1].name: name "a" is used twice`},
		{"unknown key field", "auth:\n  keys:\n    - name: a\n      key_sha265: x\n      key_sha256: " + key + "\n      tenant: t\n      role: agent\n", `toolgate.yaml:4: auth.keys[0].key_sha265: unknown field; did you mean "key_sha256"?`},
		{"binding without url", "bindings:\n  t:\n    method: POST\n", `toolgate.yaml:2: bindings.t: url is required (or mcp: {url, tool} for a tool of an upstream MCP server)`},
		{"binding with a non-http url", "bindings: {t: {url: ftp://x/y}}\n", `toolgate.yaml:1: bindings.t.url: "ftp://x/y" is not an http(s) URL`},
		{"relative url", "bindings: {t: {url: /refunds}}\n", `toolgate.yaml:1: bindings.t.url: "/refunds" is not an absolute http(s) URL (write http://host/path)`},
		{"placeholder in the host", "bindings:\n  t:\n    url: http://{tenant}.example.com/refunds\n", `toolgate.yaml:3: bindings.t.url: placeholder {tenant} in the host of "http://{tenant}.example.com/refunds": the host must be fixed, so a call's arguments cannot choose where it goes (placeholders may stand in the path and query)`},
		{"placeholder in the scheme", "bindings: {t: {url: \"{args.scheme}://x/y\"}}\n", `toolgate.yaml:1: bindings.t.url: placeholder {args.scheme} in the scheme of "{args.scheme}://x/y": the scheme must be fixed (placeholders may stand in the path and query)`},
		{"unknown placeholder", "bindings:\n  t:\n    url: http://x/y\n    lookup: {url: \"http://x/by-key/{downstream_kye}\"}\n", `toolgate.yaml:4: bindings.t.lookup.url: unknown placeholder {downstream_kye}; did you mean {downstream_key}? (placeholders: {action_id}, {downstream_key}, {tenant} or {args.FIELD})`},
		{"arg instead of args", "bindings:\n  t:\n    url: http://x/y\n    state: {url: \"http://x/o/{arg.order_id}\"}\n", `toolgate.yaml:4: bindings.t.state.url: unknown placeholder {arg.order_id}; did you mean {args.order_id}? (placeholders: {action_id}, {downstream_key}, {tenant} or {args.FIELD})`},
		{"unclosed placeholder", "bindings: {t: {url: \"http://x/{tenant\"}}\n", `toolgate.yaml:1: bindings.t.url: "http://x/{tenant": unclosed "{" at byte 9`},
		{"downstream_key in downstream_key", "bindings: {t: {url: http://x/y, downstream_key: \"{downstream_key}\"}}\n", `toolgate.yaml:1: bindings.t.downstream_key: {downstream_key} cannot stand here: the downstream key is built from this template (use {tenant}, {action_id} or {args.FIELD})`},
		{"method typo", "bindings:\n  t:\n    url: http://x/y\n    method: POTS\n", `toolgate.yaml:4: bindings.t.method: method "POTS" is not GET, POST, PUT, PATCH or DELETE; did you mean "POST"?`},
		{"bad header name", "bindings: {t: {url: http://x/y, idempotency_header: \"Idem Key\"}}\n", `toolgate.yaml:1: bindings.t.idempotency_header: "Idem Key" is not a valid HTTP header name`},
		{"not-started status that is not 5xx", "bindings:\n  t:\n    url: http://x/y\n    not_started_statuses: [503, 404]\n", `toolgate.yaml:4: bindings.t.not_started_statuses[1]: 404 is not a 5xx status (only a 5xx answer can prove nothing was done)`},
		{"url and mcp", "bindings: {t: {url: http://x/y, mcp: {url: http://m/mcp, tool: t}}}\n", `toolgate.yaml:1: bindings.t.mcp: a binding has either url (an HTTP endpoint) or mcp (a tool of an upstream MCP server), not both`},
		{"mcp without tool", "bindings:\n  t:\n    mcp: {url: http://m/mcp}\n", `toolgate.yaml:3: bindings.t.mcp: mcp.tool is required: the tool's name on the upstream MCP server`},
		{"mcp_tool lookup on a url binding", "bindings:\n  t:\n    url: http://x/y\n    lookup: {mcp_tool: find}\n", `toolgate.yaml:4: bindings.t.lookup.mcp_tool: mcp_tool is for bindings to an upstream MCP server (mcp:); this binding has url: use lookup.url`},
		{"mcp url with a placeholder", "bindings:\n  t:\n    mcp: {url: \"http://m/{tenant}/mcp\", tool: t}\n", `toolgate.yaml:3: bindings.t.mcp.url: "http://m/{tenant}/mcp": the server's endpoint is one fixed URL (no placeholders)`},
		{"mcp url not http", "bindings:\n  t:\n    mcp: {url: \"stdio:server\", tool: t}\n", `toolgate.yaml:3: bindings.t.mcp.url: "stdio:server" is not an absolute http(s) URL (write http://host/path)`},
		{"mcp header the transport sets", "bindings:\n  t:\n    mcp:\n      url: http://m/mcp\n      tool: t\n      headers: {mcp-session-id: x}\n", `toolgate.yaml:6: bindings.t.mcp.headers.mcp-session-id: Mcp-Session-Id is set by the MCP transport and cannot be configured`},
		{"mcp meta key", "bindings:\n  t:\n    mcp: {url: http://m/mcp, tool: t, idempotency_meta: \"io.mcp.x/key\"}\n", `toolgate.yaml:3: bindings.t.mcp.idempotency_meta: "io.mcp.x/key": prefix "io.mcp.x/" is reserved for MCP itself`},
		{"mcp binding with an HTTP field", "bindings:\n  t:\n    mcp: {url: http://m/mcp, tool: t}\n    idempotency_header: X-Key\n", `toolgate.yaml:4: bindings.t.idempotency_header: idempotency_header is for HTTP bindings: an MCP binding sends the key in _meta: use mcp.idempotency_meta`},
		{"mcp binding with a URL lookup", "bindings:\n  t:\n    mcp: {url: http://m/mcp, tool: t}\n    lookup: {url: http://m/by-key}\n", `toolgate.yaml:4: bindings.t.lookup.url: lookup.url is for HTTP bindings: an MCP binding's lookup is a tool of the server: use lookup.mcp_tool`},
		{"mcp field typo", "bindings:\n  t:\n    mcp: {url: http://m/mcp, tool: t, header: {a: b}}\n", `toolgate.yaml:3: bindings.t.mcp.header: unknown field; did you mean "headers"?`},
		{"body typo", "bindings:\n  t:\n    url: http://x/y\n    body: from\n", `toolgate.yaml:4: bindings.t.body: body "from" is not json, form or none; did you mean "form"?`},
		{"body on an mcp binding", "bindings:\n  t:\n    mcp: {url: http://m/mcp, tool: t}\n    body: form\n", `toolgate.yaml:4: bindings.t.body: body, body_arg, body_omit and form_encoding are for HTTP bindings (url:); an upstream MCP tool takes the arguments as they are`},
		{"form_encoding without a form", "bindings:\n  t:\n    url: http://x/y\n    form_encoding: {m: {style: deepObject}}\n", `toolgate.yaml:4: bindings.t.form_encoding: form_encoding is for body: form`},
		{"form style typo", "bindings:\n  t:\n    url: http://x/y\n    body: form\n    form_encoding: {m: {style: deepobject}}\n", `toolgate.yaml:5: bindings.t.form_encoding.m.style: style "deepobject" is not form, spaceDelimited, pipeDelimited or deepObject; did you mean "deepObject"?`},
		{"form field typo", "bindings:\n  t:\n    url: http://x/y\n    body: form\n    form_encoding: {m: {explod: true}}\n", `toolgate.yaml:5: bindings.t.form_encoding.m.explod: unknown field; did you mean "explode"?`},
		{"body none with body_omit", "bindings:\n  t:\n    url: http://x/y\n    body: none\n    body_omit: [a]\n", `toolgate.yaml:4: bindings.t.body: body: none sends no body, so body_arg and body_omit have nothing to shape`},
		{"bool as a word", "ledger_ha: yes\n", `toolgate.yaml:1: ledger_ha: must be true or false, not "yes"`},
		{"bytes with a unit", "max_body_bytes: 1MB\n", `toolgate.yaml:1: max_body_bytes: must be a whole number, not "1MB"`},
		{"not a mapping", "- a\n- b\n", `toolgate.yaml:1: must be a mapping of fields, not a list`},
		{"second document", "listen: 127.0.0.1:1\n---\nlisten: 127.0.0.1:2\n", `toolgate.yaml:2: a second YAML document starts here; the file holds exactly one`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tt.doc))
			if err == nil || err.Error() != tt.want {
				t.Fatalf("error:\n%v\nwant:\n%s", err, tt.want)
			}
			var ce *Error
			if !errors.As(err, &ce) || len(ce.Problems) != 1 || ce.Problems[0].Line == 0 || ce.Problems[0].Rule == "" {
				t.Fatalf("problems %+v", ce)
			}
		})
	}
}

// TestParseFileNamesTheFileOnce: the file is named once, at the start of each problem.
func TestParseFileNamesTheFileOnce(t *testing.T) {
	t.Parallel()
	_, err := ParseFile("conf/gw.yaml", []byte("listen: 127.0.0.1:1\nlisten: 127.0.0.1:2\nretention: 5\n"))
	want := "conf/gw.yaml:2: listen: is set twice (first at line 1); remove one\n" +
		"conf/gw.yaml:3: retention: 5 has no unit: write a number with a unit, such as 500ms, 5s, 15m or 168h (5s for seconds)"
	if err == nil || err.Error() != want {
		t.Fatalf("got:\n%v\nwant:\n%s", err, want)
	}
}

// TestDocumentedKeysAccepted: every key docs/configuration.md documents parses, including those other parts of
// the gateway implement (mcp bindings, ledger_ha).
func TestDocumentedKeysAccepted(t *testing.T) {
	t.Parallel()
	doc := `listen: 127.0.0.1:8080
tools_dir: ./agent-tools
ledger: sqlite://./toolgate.db
ledger_ha: false
lease: 30s
reconcile_interval: 5s
retention: 168h
tombstone_retention: 720h
join_timeout: 5s
max_body_bytes: 1048576
decision_log: {path: ./decisions.jsonl, arguments: masked}
auth:
  keys:
    - {name: cs-agent, key_sha256: "` + HashKey("a") + `", tenant: acme, role: agent, tools: [refund.create_request]}
    - {name: oncall, key_sha256: "` + HashKey("b") + `", tenant: acme, role: operator, tools: ["*"]}
  oauth:
    issuer: https://idp.example.com
    audience: https://gw.example.com/mcp
    tenant_claim: tenant
    tools_claim: toolgate_tools
    agent_scope: toolgate:call
    operator_scope: toolgate:operate
bindings:
  refund.create_request:
    url: http://127.0.0.1:9090/refunds
    method: POST
    timeout: 5s
    idempotency_header: Idempotency-Key
    downstream_key: "{tenant}:{action_id}"
    lookup: {url: "http://127.0.0.1:9090/refunds/by-key/{downstream_key}"}
    state: {url: "http://127.0.0.1:9090/orders/{args.order_id}"}
    max_attempts: 3
    not_started_statuses: [503]
    hold_after: 15m
    require_approval: false
    settle_after: 10s
  crm.create_ticket:
    mcp: {url: "http://127.0.0.1:7070/mcp", tool: create_ticket}
    lookup: {mcp_tool: find_ticket_by_key}
`
	c, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	m := c.Bindings["crm.create_ticket"]
	if m.MCP == nil || m.MCP.Tool != "create_ticket" || m.Lookup.MCPTool != "find_ticket_by_key" || c.LedgerHA || c.Lease != 30*time.Second {
		t.Fatalf("parsed %+v", m)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"", "listen: 127.0.0.1:8080\n", "bindings: {t: {url: http://x/{args.a}}}\n", "auth: {keys: []}\n", "retention: -1s\n", "{", "\t",
		"bindings:\n  a.b:\n    url: http://x/{tenant}\n    timout: 5\n", "a: &x [*x]\n", "listen: a\n---\nb: 1\n", "bindings: {x: {url: \"http://{a}/\"}}\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err == nil {
			if c.Listen == "" || c.Ledger == "" || c.MaxBodyBytes < 0 {
				t.Fatalf("accepted a configuration without defaults: %+v", c)
			}
			return
		}
		var ce *Error
		if !errors.As(err, &ce) || len(ce.Problems) == 0 {
			t.Fatalf("error %v is not a list of problems", err)
		}
		for _, p := range ce.Problems {
			if p.Line <= 0 || p.Message == "" || p.Rule == "" || p.Severity != SeverityError {
				t.Fatalf("problem without a line, message or rule: %+v", p)
			}
			if strings.Contains(p.Message, "config.") || strings.Contains(p.Message, "time.Duration") {
				t.Fatalf("a Go name leaks: %s", p.Message)
			}
		}
	})
}

// TestDocumentedConfigurationsParse: every toolgate.yaml snippet in the docs parses, so
// no documented example is refused by the strict reader.
func TestDocumentedConfigurationsParse(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob("../docs/*.md")
	more, _ := filepath.Glob("../docs/reference/*.md")
	files = append(files, more...)
	files = append(files, "../README.md", "../examples/toolgate.yaml")
	configKey := regexp.MustCompile(`(?m)^(listen|tools_dir|ledger|ledger_ha|lease|reconcile_interval|retention|tombstone_retention|join_timeout|max_body_bytes|decision_log|auth|bindings):`)
	checked := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		blocks := []string{string(b)}
		if strings.HasSuffix(f, ".md") {
			blocks = nil
			for _, part := range strings.Split(string(b), "```yaml\n")[1:] {
				blocks = append(blocks, strings.SplitN(part, "```", 2)[0])
			}
		}
		for _, block := range blocks {
			if !configKey.MatchString(block) {
				continue
			}
			checked++
			if _, err := Parse([]byte(block)); err != nil {
				t.Errorf("%s: a documented configuration does not parse:\n%v\n%s", f, err, block)
			}
		}
	}
	if checked < 3 {
		t.Fatalf("only %d documented configurations found", checked)
	}
}
