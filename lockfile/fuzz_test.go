package lockfile

import (
	"bytes"
	"testing"
)

// FuzzParse: any input parses or is refused without panicking; what parses round-trips.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"lock_version":1,"versions":[{"tool":"a.b","version":"1.0.0","file":"a.b/schemas/v1.0.0.json","digest":"sha256:00","locked_at":"2026-11-01T00:00:00Z"}]}`))
	f.Add([]byte(`{"lock_version":1,"versions":[{"tool":"a.b","version":"1.0.0","file":"x","digest":"sha256:00","locked_at":"2026-11-01T00:00:00Z","deprecated_at":"2026-11-02T00:00:00Z"}]}`))
	f.Add([]byte(`{"lock_version":2}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := Parse(data)
		if err != nil {
			return
		}
		again, err := Parse(l.Marshal())
		if err != nil || !bytes.Equal(again.Marshal(), l.Marshal()) {
			t.Fatalf("round trip: %v", err)
		}
	})
}

// FuzzParsePin: any pin file parses or is refused without panicking; what
// parses round-trips with the same definition digest.
func FuzzParsePin(f *testing.F) {
	f.Add([]byte(`{"pin_version":1,"tool_id":"crm.create_ticket","source":{"kind":"mcp","url":"http://x/mcp","tool":"create_ticket"},"definition":{"name":"create_ticket","inputSchema":{"type":"object"}},"todo":["rules"]}`))
	f.Add([]byte(`{"pin_version":1,"tool_id":"a.b","source":{"kind":"openapi","file":"api.yaml","operation":"op"},"definition":{"method":"GET","path":"/x"}}`))
	f.Add([]byte(`{"pin_version":1,"tool_id":"a.b","source":{"kind":"mcp"},"definition":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParsePin(data)
		if err != nil {
			return
		}
		again, err := ParsePin(p.Marshal())
		if err != nil || again.Digest() != p.Digest() || p.Digest() == "" {
			t.Fatalf("round trip: %v", err)
		}
	})
}
