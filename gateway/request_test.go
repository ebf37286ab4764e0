package gateway

import (
	"errors"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/contract"
)

func TestParseCallBody(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		body    string
		wantErr string // substring of the problem detail; "" for success
	}{
		{name: "minimal", body: `{"arguments":{}}`},
		{name: "everything", body: `{"arguments":{"a":1},"version":"1.0.0","correlation_id":"c1","provider":{"name":"openai","route":"primary","call_id":"call_1"}}`},
		{name: "unknown fields are ignored", body: `{"arguments":{},"extra":true}`},
		{name: "empty", body: ``, wantErr: "must be a JSON object"},
		{name: "array", body: `[]`, wantErr: "must be a JSON object"},
		{name: "not json", body: `{"arguments":`, wantErr: "not valid JSON"},
		{name: "trailing data", body: `{"arguments":{}} {}`, wantErr: "data after"},
		{name: "no arguments", body: `{"version":"1.0.0"}`, wantErr: "needs an \"arguments\" object"},
		{name: "null arguments", body: `{"arguments":null}`, wantErr: "needs an \"arguments\" object"},
		{name: "array arguments", body: `{"arguments":[1]}`, wantErr: "must be a JSON object"},
		{name: "string arguments", body: `{"arguments":"{}"}`, wantErr: "must be a JSON object"},
		{name: "version not a string", body: `{"arguments":{},"version":2}`, wantErr: "\"version\" must be a string"},
		{name: "provider not an object", body: `{"arguments":{},"provider":"openai"}`, wantErr: "\"provider\" must be an object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := parseCallBody([]byte(tt.body))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("parseCallBody: %v", err)
				}
				return
			}
			var p *Problem
			if !errors.As(err, &p) || p.Code != "malformed_request" || p.Status != 400 {
				t.Fatalf("got %v, want a 400 malformed_request", err)
			}
			if !strings.Contains(p.Detail, tt.wantErr) {
				t.Fatalf("detail %q does not mention %q", p.Detail, tt.wantErr)
			}
		})
	}
}

func TestValidKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		key  string
		want bool
	}{
		{"abcdefgh", true},
		{"abcdefg", false},
		{strings.Repeat("k", 255), true},
		{strings.Repeat("k", 256), false},
		{"refund-2026/11/30#1", true},
		{"has space", false},
		{"tab\there1", false},
		{"ümlautkey", false},
		{"del\x7fkey12", false},
		{"!~!~!~!~", true},
	}
	for _, tt := range tests {
		if got := validKey(tt.key); got != tt.want {
			t.Errorf("validKey(%q) = %v, want %v", tt.key, got, tt.want)
		}
	}
}

func TestCanonicalizeIgnoresKeyOrderAndSpace(t *testing.T) {
	t.Parallel()
	_, a, err := canonicalize([]byte(`{"b":2,"a":{"y":1.0,"x":"é"}}`))
	if err != nil {
		t.Fatal(err)
	}
	_, b, err := canonicalize([]byte("{ \"a\" : {\"x\":\"\\u00e9\", \"y\":1}, \"b\":2 }"))
	if err != nil {
		t.Fatal(err)
	}
	if a != b || !strings.HasPrefix(a, "sha256:") {
		t.Fatalf("digests differ: %s vs %s", a, b)
	}
	_, c, _ := canonicalize([]byte(`{"b":3,"a":{"y":1,"x":"é"}}`))
	if c == a {
		t.Fatal("different arguments gave the same digest")
	}
}

// FuzzParseCallBody feeds arbitrary bytes to the call-body decoder and the
// canonicalizer: they must never panic, and anything they refuse must be a
// 400 problem, never an internal error.
func FuzzParseCallBody(f *testing.F) {
	for _, s := range []string{
		`{"arguments":{"order_id":"ord_12345678","amount_minor":100}}`,
		`{"arguments":{},"version":"1.0.0","provider":{"name":"openai","call_id":"c"}}`,
		`{"arguments":{"a":[1,2,{"b":null}]}}`,
		`{"arguments":{"n":1e400}}`,
		`{"arguments":{"s":"\ud800"}}`,
		`[]`, ``, `{`, `{"arguments":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := parseCallBody(data)
		if err != nil {
			var p *Problem
			if !errors.As(err, &p) || p.Status != 400 {
				t.Fatalf("refusal is not a 400 problem: %v", err)
			}
			return
		}
		if _, _, err := canonicalize(b.Arguments); err == nil {
			return
		}
	})
}

// FuzzValidKey checks the key syntax against its definition.
func FuzzValidKey(f *testing.F) {
	for _, s := range []string{"abcdefgh", "short", "with space 123", "ключ-ключ-ключ"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := len(s) >= 8 && len(s) <= 255 && !strings.ContainsFunc(s, func(r rune) bool { return r < 0x21 || r > 0x7e })
		if got := validKey(s); got != want {
			t.Fatalf("validKey(%q) = %v, want %v", s, got, want)
		}
	})
}

// FuzzParseTraceparent checks the traceparent reader never panics and only
// returns ids of the right shape.
func FuzzParseTraceparent(f *testing.F) {
	for _, s := range []string{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "", "00-xyz-abc-01", "ff-" + strings.Repeat("a", 32) + "-" + strings.Repeat("b", 16) + "-00-extra"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		tr, sp := parseTraceparent(h)
		if (tr == "") != (sp == "") || tr != "" && (len(tr) != 32 || len(sp) != 16 || !isHex(tr) || !isHex(sp)) {
			t.Fatalf("parseTraceparent(%q) = %q, %q", h, tr, sp)
		}
	})
}

// BenchmarkPreLedger is the gateway's own work on a new call before the
// ledger, with its real functions: decode the body, canonicalize and hash the
// arguments, decode them for validation, validate (JSON Schema + CEL).
func BenchmarkPreLedger(b *testing.B) {
	reg, err := contract.Load("../examples/agent-tools")
	if err != nil {
		b.Fatal(err)
	}
	v := reg.Tool("payments.issue_refund").Default()
	raw := []byte(`{"arguments":{"order_id":"ord_8Xk2Lm9Q","amount_minor":1500,"currency":"EUR","reason":"customer_request","customer_email":"jane@example.com"},"correlation_id":"conv-42"}`)
	step := func(b *testing.B, args []byte) {
		if _, _, err := canonicalize(args); err != nil {
			b.Fatal(err)
		}
		decoded, err := contract.DecodeJSON(args)
		if err != nil {
			b.Fatal(err)
		}
		if !v.Validate(decoded).Valid() {
			b.Fatal("invalid")
		}
	}
	b.Run("body+canonicalize+hash+validate", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			body, err := parseCallBody(raw)
			if err != nil {
				b.Fatal(err)
			}
			step(b, body.Arguments)
		}
	})
	body, _ := parseCallBody(raw)
	b.Run("canonicalize+hash+validate", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			step(b, body.Arguments)
		}
	})
}
