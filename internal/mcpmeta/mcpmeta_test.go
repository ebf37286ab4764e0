package mcpmeta

import "testing"

func TestCheckKey(t *testing.T) {
	t.Parallel()
	for key, ok := range map[string]bool{
		"toolgate/idempotency_key": true, "idempotency_key": true, "com.example.api/key": true, "a/b.c-d_e": true, "io.mcp/key": true,
		"": false, "/key": false, "-x/key": false, "x-/key": false, "x/": false, "x/_key": false,
		"io.mcp.tools/key": false, "modelcontextprotocol.io/key": false,
	} {
		if got := CheckKey(key); (got == "") != ok {
			t.Errorf("%q: %q, want ok %v", key, got, ok)
		}
	}
}
