package gateway

import (
	"strings"
	"testing"
)

// The id of a notification stream's event, tools-HASH-NONCE, comes back
// from clients as Last-Event-ID: what formatNotifyEventID writes is read
// back, and anything else is not taken for it.
func TestNotifyEventID(t *testing.T) {
	t.Parallel()
	sig := "0123456789abcdef"
	id := formatNotifyEventID(sig)
	if got, ok := parseNotifyEventID(id); !ok || got != sig {
		t.Fatalf("parse(%q) = %q %v, want %q", id, got, ok, sig)
	}
	if _, _, ok := parseStreamEventID(id); ok {
		t.Fatalf("%q reads as a tools/call stream's id too", id)
	}
	for _, tt := range []struct {
		name, id string
		ok       bool
	}{
		{"written", "tools-0123456789abcdef-ABCDEFGHIJ", true},
		{"short nonce", "tools-0123456789abcdef-A", true},
		{"empty", "", false},
		{"a tools/call stream's id", "NKFHE6GKSHUO4FOIIT7VVKZJ5X_0", false},
		{"no nonce", "tools-0123456789abcdef", false},
		{"empty nonce", "tools-0123456789abcdef-", false},
		{"short hash", "tools-0123456789abcde-ABC", false},
		{"upper-case hash", "tools-0123456789ABCDEF-ABC", false},
		{"nonce not base32", "tools-0123456789abcdef-abc", false},
		{"nonce with a dash", "tools-0123456789abcdef-AB-C", false},
		{"long nonce", "tools-0123456789abcdef-" + strings.Repeat("A", 33), false},
		{"other prefix", "Tools-0123456789abcdef-ABC", false},
	} {
		if _, ok := parseNotifyEventID(tt.id); ok != tt.ok {
			t.Errorf("%s: parse(%q) ok = %v, want %v", tt.name, tt.id, ok, tt.ok)
		}
	}
}

// FuzzNotifyEventID: any Last-Event-ID parses without a panic, and one that
// parses has the shape formatNotifyEventID writes.
func FuzzNotifyEventID(f *testing.F) {
	for _, s := range []string{"", "tools-0123456789abcdef-ABCDEFGHIJ", "tools--", "x_1", "tools-0123456789abcdef-AB-C"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		sig, ok := parseNotifyEventID(id)
		if !ok {
			return
		}
		if len(sig) != notifyHashLen || !strings.HasPrefix(id, mcpNotifyIDPrefix+sig+"-") || strings.Count(id, "-") != 2 {
			t.Fatalf("parse(%q) = %q: not tools-HASH-NONCE", id, sig)
		}
	})
}
