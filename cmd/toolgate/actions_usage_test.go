package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/client"
)

// TestActionsUsage: usage errors exit 2 before anything is sent; --help works
// on every subcommand.
func TestActionsUsage(t *testing.T) {
	t.Parallel()
	down := "http://" + freeAddr(t) // nothing listens there
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string // a substring of stdout, when set
		stderr string // a substring of stderr, when set
	}{
		{name: "no subcommand", args: nil, code: exitUsage, stderr: "Usage: toolgate actions <subcommand>"},
		{name: "help", args: []string{"--help"}, code: exitOK, stdout: "reconcile"},
		{name: "unknown subcommand", args: []string{"purge"}, code: exitUsage, stderr: `unknown subcommand "purge"`},
		{name: "a flag before the subcommand", args: []string{"--state", "unknown"}, code: exitUsage, stderr: "flag provided but not defined: -state (flags follow the subcommand)"},
		{name: "list help", args: []string{"list", "--help"}, code: exitOK, stdout: "Usage: toolgate actions list"},
		{name: "show help", args: []string{"show", "-h"}, code: exitOK, stdout: "Usage: toolgate actions show ID"},
		{name: "reconcile help", args: []string{"reconcile", "--help"}, code: exitOK, stdout: "Usage: toolgate actions reconcile ID"},
		{name: "resolve help", args: []string{"resolve", "--help"}, code: exitOK, stdout: "-result-body"},
		{name: "approve help", args: []string{"approve", "--help"}, code: exitOK, stdout: "Usage: toolgate actions approve ID"},
		{name: "deny help", args: []string{"deny", "--help"}, code: exitOK, stdout: "Usage: toolgate actions deny ID"},
		{name: "show without id", args: []string{"show"}, code: exitUsage, stderr: "want exactly one action id"},
		{name: "show two ids", args: []string{"show", "act-1-xxxx", "act-2-xxxx"}, code: exitUsage, stderr: "got 2 arguments"},
		{name: "list with an argument", args: []string{"list", "unknown"}, code: exitUsage, stderr: `unexpected argument "unknown"`},
		{name: "bad flag", args: []string{"list", "--colour"}, code: exitUsage, stderr: "flag provided but not defined"},
		{name: "bad format", args: []string{"list", "--format", "yaml"}, code: exitUsage, stderr: "--format must be text or json"},
		{name: "bad state", args: []string{"list", "--state", "done"}, code: exitUsage, stderr: `--state "done" is not one of prepared, pending`},
		{name: "bad limit", args: []string{"list", "--limit", "501"}, code: exitUsage, stderr: "--limit must be from 1 to 500"},
		{name: "resolve without outcome", args: []string{"resolve", "act-xxxxxxxx", "--note", "n"}, code: exitUsage, stderr: "--outcome must be"},
		{name: "resolve without note", args: []string{"resolve", "act-xxxxxxxx", "--outcome", "succeeded"}, code: exitUsage, stderr: "--note is required"},
		{name: "resolve body without status", args: []string{"resolve", "act-xxxxxxxx", "--outcome", "succeeded", "--note", "n", "--result-body", "{}"}, code: exitUsage, stderr: "--result-body needs --result-status"},
		{name: "resolve bad status", args: []string{"resolve", "act-xxxxxxxx", "--outcome", "succeeded", "--note", "n", "--result-status", "99"}, code: exitUsage, stderr: "from 200 to 599"},
		{name: "resolve bad body", args: []string{"resolve", "act-xxxxxxxx", "--outcome", "succeeded", "--note", "n", "--result-status", "200", "--result-body", "{nope"}, code: exitUsage, stderr: "not valid JSON"},
		{name: "resolve not_started with result", args: []string{"resolve", "act-xxxxxxxx", "--outcome", "not_started", "--note", "n", "--result-status", "200"}, code: exitUsage, stderr: "takes no --result-status"},
		{name: "not an http URL", args: []string{"list", "--gateway", "ftp://127.0.0.1:21"}, code: exitUsage, stderr: `--gateway "ftp://127.0.0.1:21" is not a gateway address: give host:port (127.0.0.1:8080) or an http(s) URL`},
		{name: "host:port is http", args: []string{"show", "act-xxxxxxxx", "--gateway", strings.TrimPrefix(down, "http://")}, code: exitUsage, stderr: "toolgate actions show: gateway " + down + ": "},
		{name: "not an address", args: []string{"list", "--gateway", "http://"}, code: exitUsage, stderr: `--gateway "http://" is not a gateway address`},
		{name: "unreachable gateway", args: []string{"show", "act-xxxxxxxx", "--gateway", down, "--key", "k-s3cret-123"}, code: exitUsage, stderr: "toolgate actions show: gateway " + down + ": "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := runActionsCLI(t, tc.args...).want(t, tc.code)
			if !strings.Contains(r.stdout, tc.stdout) || !strings.Contains(r.stderr, tc.stderr) {
				t.Errorf("want stdout ~ %q, stderr ~ %q\n--- stdout\n%s--- stderr\n%s", tc.stdout, tc.stderr, r.stdout, r.stderr)
			}
			if strings.Contains(r.stdout+r.stderr, "s3cret") {
				t.Errorf("the key is printed:\n%s%s", r.stdout, r.stderr)
			}
		})
	}
}

// TestActionsGatewayFailure: a 5xx from the gateway (here its ledger is
// closed under it) exits 2 with the problem code, like an unreachable one.
func TestActionsGatewayFailure(t *testing.T) {
	t.Parallel()
	g := startOpGateway(t)
	g.mustRefund("act-fail-0001", 1000, 201)
	g.rt.store.Close()
	r := g.cli("show", "act-fail-0001").want(t, exitUsage)
	if !strings.HasPrefix(r.stderr, "ledger_unavailable: ") {
		t.Errorf("stderr %q", r.stderr)
	}
}

// TestActionsEnvironment reads the address and key from TOOLGATE_URL and
// TOOLGATE_KEY; flags win over them. (Not parallel: it sets the environment.)
func TestActionsEnvironment(t *testing.T) {
	g := startOpGateway(t)
	g.mustRefund("act-env-0001", 1000, 201)
	t.Setenv(envGatewayURL, g.url)
	t.Setenv(envGatewayKey, opKey)
	if r := runActionsCLI(t, "show", "act-env-0001").want(t, exitOK); !strings.Contains(r.stdout, "act-env-0001") {
		t.Errorf("show with the environment:\n%s", r.stdout)
	}
	t.Setenv(envGatewayKey, "wrong-s3cret-key")
	r := runActionsCLI(t, "list").want(t, exitNegative)
	if !strings.HasPrefix(r.stderr, "unauthenticated: ") || strings.Contains(r.stderr, "s3cret") {
		t.Errorf("stderr %q", r.stderr)
	}
	runActionsCLI(t, "list", "--key", opKey).want(t, exitOK)
	t.Setenv(envGatewayURL, "http://"+freeAddr(t))
	runActionsCLI(t, "list", "--gateway", g.url, "--key", opKey).want(t, exitOK)
	runActionsCLI(t, "list", "--key", opKey).want(t, exitUsage)
}

// TestActionsFormatting covers the pieces of the text output that the golden
// files cannot reach: ages, terminal-safe text and result bodies.
func TestActionsFormatting(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	ages := []struct {
		name string
		ago  time.Duration
		want string
	}{
		{name: "future", ago: -time.Minute, want: "0s"},
		{name: "seconds", ago: 59 * time.Second, want: "59s"},
		{name: "minutes", ago: 61 * time.Minute, want: "1h"},
		{name: "hours", ago: 47 * time.Hour, want: "47h"},
		{name: "days", ago: 49 * time.Hour, want: "2d"},
	}
	for _, tc := range ages {
		t.Run("age "+tc.name, func(t *testing.T) {
			if got := age(now, now.Add(-tc.ago)); got != tc.want {
				t.Errorf("age(%s) = %q, want %q", tc.ago, got, tc.want)
			}
		})
	}
	bodies := []struct {
		name string
		res  client.Result
		want string
	}{
		{name: "json", res: client.Result{Body: json.RawMessage(`{"a":[1]}`)}, want: "{\n  \"a\": [\n    1\n  ]\n}"},
		{name: "text", res: client.Result{Body: json.RawMessage(`"line 1\nline 2"`)}, want: "line 1\nline 2"},
		{name: "binary", res: client.Result{BodyBase64: []byte{0xff, 0xfe, 0}}, want: "(3 bytes of binary body; --format json shows body_base64)"},
		{name: "none", res: client.Result{}, want: ""},
	}
	for _, tc := range bodies {
		t.Run("body "+tc.name, func(t *testing.T) {
			if got := resultBody(&tc.res); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	if got := oneLine("a\nb\x1b[31mc\u009bd\te\u202e"); got != `a\nb\x1b[31mc\u009bd\te\u202e` {
		t.Errorf("oneLine: %q", got)
	}
	if got := printable("a\nb\x1b]0;x\x07\tc", true); got != "a\nb\\x1b]0;x\\a\tc" {
		t.Errorf("printable: %q", got)
	}
}
