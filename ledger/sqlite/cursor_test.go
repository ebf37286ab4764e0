package sqlite

import (
	"encoding/base64"
	"errors"
	"testing"
)

func encodeRaw(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

func TestCursorRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		at   int64
		id   string
	}{
		{"plain", 1764464523456789012, "act-1"},
		{"colons in id", 1, "a:b:c"},
		{"negative time", -5, "x"},
		{"unicode", 0, "日本語"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			at, id, err := decodeCursor(encodeCursor(tt.at, tt.id))
			if err != nil || at != tt.at || id != tt.id {
				t.Fatalf("round trip: %d %q %v", at, id, err)
			}
		})
	}
}

func TestCursorRejectsForeign(t *testing.T) {
	t.Parallel()
	for _, c := range []string{"x", "!!!", encodeRaw("v2:1:a"), encodeRaw("v1:1:"), encodeRaw("v1:abc:a"), encodeRaw("v1:1"), encodeRaw("")} {
		if _, _, err := decodeCursor(c); !errors.Is(err, ErrBadCursor) {
			t.Errorf("decodeCursor(%q) = %v, want ErrBadCursor", c, err)
		}
	}
}

// FuzzDecodeCursor: a cursor comes from a client; decoding never panics, and
// whatever decodes re-encodes to a cursor that decodes the same.
func FuzzDecodeCursor(f *testing.F) {
	f.Add(encodeCursor(1764464523456789012, "act-1"))
	f.Add(encodeCursor(0, "a:b"))
	f.Add("")
	f.Add("djE6MTo")
	f.Fuzz(func(t *testing.T, c string) {
		at, id, err := decodeCursor(c)
		if err != nil {
			return
		}
		at2, id2, err := decodeCursor(encodeCursor(at, id))
		if err != nil || at2 != at || id2 != id {
			t.Fatalf("re-encoded cursor of (%d, %q) decodes to (%d, %q, %v)", at, id, at2, id2, err)
		}
	})
}
