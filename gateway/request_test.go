package gateway

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/internal/canon"
	"github.com/toolgate/toolgate/toolcall"
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
			var p *toolcall.Problem
			if !errors.As(err, &p) || p.Code != toolcall.CodeMalformedRequest || p.Status() != 400 {
				t.Fatalf("got %v, want a 400 malformed_request", err)
			}
			if !strings.Contains(p.Detail, tt.wantErr) {
				t.Fatalf("detail %q does not mention %q", p.Detail, tt.wantErr)
			}
		})
	}
}

// FuzzParseCallBody feeds arbitrary bytes to the call-body decoder: it must
// never panic, and anything it refuses must be a 400 problem, never an
// internal error (toolcall's FuzzCanonicalize takes the arguments on).
// parseCallBodyDecoder is parseCallBody as it was before its Unmarshal
// fast path: the oracle the fast path is held to.
func parseCallBodyDecoder(data []byte) (callBody, error) {
	var b callBody
	if err := decodeObject(data, &b); err != nil {
		return callBody{}, problem(toolcall.CodeMalformedRequest, "%v", err)
	}
	args := bytes.TrimSpace(b.Arguments)
	if len(args) == 0 || bytes.Equal(args, []byte("null")) {
		return callBody{}, problem(toolcall.CodeMalformedRequest, "the body needs an \"arguments\" object")
	}
	if args[0] != '{' {
		return callBody{}, problem(toolcall.CodeMalformedRequest, "\"arguments\" must be a JSON object")
	}
	b.Arguments = args
	return b, nil
}

// sameAsDecoder fails t unless parseCallBody and the Decoder-only oracle
// give the same body or the same problem detail for data.
func sameAsDecoder(t *testing.T, data []byte) {
	t.Helper()
	got, gerr := parseCallBody(data)
	want, werr := parseCallBodyDecoder(data)
	if fmt.Sprint(gerr) != fmt.Sprint(werr) {
		t.Fatalf("%q: error %v, the Decoder's %v", data, gerr, werr)
	}
	if gerr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: %+v, the Decoder's %+v", data, got, want)
	}
}

func TestParseCallBodySameAsDecoder(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		`{"arguments":{"a":1}}`, ` {"arguments":{"a":1}} `, `{"arguments":{"a":1}} {}`, `{"arguments":{"a":1}}x`, `{"Arguments":{"a":1},"VERSION":"1"}`,
		`{"arguments":{"a":1},"arguments":{"b":2}}`, `{"arguments":{"a":1},"version":2}`, `{"arguments":{"a":1},"provider":"x"}`, `{"arguments":{"a":1},"provider":null}`,
		`{"arguments":{"a":"\ud800"},"correlation_id":"\u00e9\xff"}`, "{\"arguments\":{\"a\":\"\xff\"}}", `{"arguments":null}`, `{"arguments":[]}`, `{"arguments":1}`, `{}`, `[]`, ``, `{`, `{"arguments":{"a":1},}`,
		`{"arguments":{"a":1},"unknown":{"deep":[1,2,{"x":null}]}}`, `{"arguments":{"a":1},"provider":{"name":"openai","call_id":"c","reason":"r","extra":1}}`, `{"arguments":{"n":1e400}}`,
		`{"arguments":{"a":1},"version":"1.0.0","policy_version":"p","correlation_id":"c"}`, "{\"arguments\":{}}\n\n", `null`, `"x"`,
	} {
		sameAsDecoder(t, []byte(s))
	}
}

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
		sameAsDecoder(t, data)
		b, err := parseCallBody(data)
		if err != nil {
			var p *toolcall.Problem
			if !errors.As(err, &p) || p.Status() != 400 {
				t.Fatalf("refusal is not a 400 problem: %v", err)
			}
			return
		}
		if len(b.Arguments) == 0 || b.Arguments[0] != '{' {
			t.Fatalf("accepted arguments %q are not an object", b.Arguments)
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
		if (tr == "") != (sp == "") || tr != "" && (len(tr) != 32 || len(sp) != 16 || !lowerHexID(tr) || !lowerHexID(sp)) {
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
		c, err := canon.Transform(args)
		if err != nil {
			b.Fatal(err)
		}
		_ = sha256.Sum256(c)
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

// lowerHexID reports whether s is lowercase hex and not all zeros, as a
// trace or span id must be.
func lowerHexID(s string) bool {
	nonzero := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
		nonzero = nonzero || c != '0'
	}
	return nonzero
}
