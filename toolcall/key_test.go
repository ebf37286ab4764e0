package toolcall

import (
	"strings"
	"testing"
)

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
		if got := ValidKey(tt.key); got != tt.want {
			t.Errorf("ValidKey(%q) = %v, want %v", tt.key, got, tt.want)
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

// FuzzValidKey checks the key syntax against its definition.
func FuzzValidKey(f *testing.F) {
	for _, s := range []string{"abcdefgh", "short", "with space 123", "ключ-ключ-ключ"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := len(s) >= 8 && len(s) <= 255 && !strings.ContainsFunc(s, func(r rune) bool { return r < 0x21 || r > 0x7e })
		if got := ValidKey(s); got != want {
			t.Fatalf("ValidKey(%q) = %v, want %v", s, got, want)
		}
	})
}

// FuzzCanonicalize feeds arbitrary JSON text to the canonicalizer: it never
// panics, and what it accepts it maps to a fixed point with a sha256 digest.
func FuzzCanonicalize(f *testing.F) {
	for _, s := range []string{`{"order_id":"ord_12345678","amount_minor":100}`, `{"a":[1,2,{"b":null}]}`, `{"n":1e400}`, `{"s":"\ud800"}`, `{`, `1`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, digest, err := canonicalize(data)
		if err != nil {
			return
		}
		again, digest2, err := canonicalize(c)
		if err != nil || string(again) != string(c) || digest2 != digest || !strings.HasPrefix(digest, "sha256:") || len(digest) != 71 {
			t.Fatalf("canonical form of %q is not a fixed point: %q (%v), %s vs %s", data, again, err, digest, digest2)
		}
	})
}
