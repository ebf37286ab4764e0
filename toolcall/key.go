package toolcall

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/toolgate/toolgate/internal/canon"
)

// ValidKey reports whether s is an idempotency key or action id: 8 to 255
// visible ASCII characters (0x21-0x7E).
func ValidKey(s string) bool {
	if len(s) < 8 || len(s) > 255 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// canonicalize returns the RFC 8785 (JCS) form of a JSON value and its
// input_hash, "sha256:<hex>". A number whose value a double cannot hold is a
// *canon.NotExactError: canonicalizing it would change it (docs/reference/files.md).
func canonicalize(raw []byte) ([]byte, string, error) {
	c, err := canon.TransformExact(raw)
	if err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(c)
	var d [len("sha256:") + 2*sha256.Size]byte // built on the stack: one allocation, the string
	copy(d[:], "sha256:")
	hex.Encode(d[len("sha256:"):], sum[:])
	return c, string(d[:]), nil
}
