package ledger

import (
	"encoding/base64"
	"strconv"
	"strings"
)

// EncodeCursor makes the opaque List cursor every store issues: the last
// listed action's creation time (unix nanoseconds) and id, as
// base64url("v1:" + nanos + ":" + id). Stores share it so a cursor means the
// same on SQLite and PostgreSQL.
func EncodeCursor(at int64, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte("v1:" + strconv.FormatInt(at, 10) + ":" + id))
}

// DecodeCursor reads a cursor made by EncodeCursor; anything else is ErrBadCursor.
func DecodeCursor(c string) (int64, string, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, "", ErrBadCursor
	}
	rest, ok := strings.CutPrefix(string(b), "v1:")
	if !ok {
		return 0, "", ErrBadCursor
	}
	num, id, ok := strings.Cut(rest, ":")
	if !ok || id == "" {
		return 0, "", ErrBadCursor
	}
	at, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		return 0, "", ErrBadCursor
	}
	return at, id, nil
}
