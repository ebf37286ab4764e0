package bench_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/internal/canon"
)

// The gateway's per-call CPU work before the ledger, step by step, on a
// typical refund call: decode the body, canonicalize the arguments (RFC 8785),
// hash them, decode them for validation, validate (JSON Schema + CEL). The
// gateway's own functions are unexported; these mirror gateway/request.go and
// gateway/call.go call for call, so the figures are the hot path's.

const typicalBody = `{"arguments":{"order_id":"ord_8Xk2Lm9Q","amount_minor":1500,"currency":"EUR","reason":"customer_request","customer_email":"jane@example.com"},"correlation_id":"conv-42"}`

func refundVersion(b *testing.B) *contract.Version {
	reg, err := contract.Load("../examples/agent-tools")
	if err != nil {
		b.Fatal(err)
	}
	return reg.Tool("payments.issue_refund").Default()
}

type body struct {
	Arguments     json.RawMessage `json:"arguments"`
	CorrelationID string          `json:"correlation_id"`
}

func decodeBody(b *testing.B, raw []byte) body {
	var out body
	dec := json.NewDecoder(bytes.NewReader(bytes.TrimSpace(raw)))
	if err := dec.Decode(&out); err != nil {
		b.Fatal(err)
	}
	return out
}

func canonical(b *testing.B, args []byte) ([]byte, string) {
	c, err := canon.Transform(args)
	if err != nil {
		b.Fatal(err)
	}
	sum := sha256.Sum256(c)
	return c, "sha256:" + hex.EncodeToString(sum[:])
}

// BenchmarkHotPath is the whole pre-ledger step; its sub-benchmarks are the
// parts.
func BenchmarkHotPath(b *testing.B) {
	v := refundVersion(b)
	raw := []byte(typicalBody)
	b.Run("all", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			bd := decodeBody(b, raw)
			canonical(b, bd.Arguments)
			args, err := contract.DecodeJSON(bd.Arguments)
			if err != nil {
				b.Fatal(err)
			}
			if !v.Validate(args).Valid() {
				b.Fatal("invalid")
			}
		}
	})
	bd := decodeBody(b, raw)
	args, _ := contract.DecodeJSON(bd.Arguments)
	b.Run("decode-body", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			decodeBody(b, raw)
		}
	})
	b.Run("canonicalize+hash", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			canonical(b, bd.Arguments)
		}
	})
	b.Run("decode-args", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := contract.DecodeJSON(bd.Arguments); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("validate", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if !v.Validate(args).Valid() {
				b.Fatal("invalid")
			}
		}
	})
}

// BenchmarkHotPathArgSize is the pre-ledger step as the arguments grow: the
// refund plus a correlation_id-sized string field repeated in a nested
// object the schema would refuse, so only decode, canonicalize and hash are
// timed (validation of the real tool stops at additionalProperties).
func BenchmarkHotPathArgSize(b *testing.B) {
	for _, n := range []int{0, 10, 100, 1000} {
		var sb strings.Builder
		sb.WriteString(`{"arguments":{"order_id":"ord_8Xk2Lm9Q","amount_minor":1500,"currency":"EUR","reason":"customer_request"`)
		for i := range n {
			fmt.Fprintf(&sb, `,"note_%04d":"refund requested via chat, conversation 42, line %d"`, i, i)
		}
		sb.WriteString(`}}`)
		raw := []byte(sb.String())
		b.Run(fmt.Sprintf("bytes=%d", len(raw)), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				bd := decodeBody(b, raw)
				canonical(b, bd.Arguments)
				if _, err := contract.DecodeJSON(bd.Arguments); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
