package gateway

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/toolgate/toolgate/internal/canon"
)

// callBody is the body of POST /v1/tools/{tool_id}/calls and /v1/actions/{id}/calls.
type callBody struct {
	Arguments     json.RawMessage `json:"arguments"`
	Version       string          `json:"version"`
	CorrelationID string          `json:"correlation_id"`
	Provider      *providerBody   `json:"provider"`
}

type providerBody struct {
	Name   string `json:"name"`
	Route  string `json:"route"`
	CallID string `json:"call_id"`
}

// readBody reads at most limit bytes of the request body; a longer one is
// request_too_large.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, problem("request_too_large", "the body is larger than %d bytes", limit)
		}
		return nil, problem("malformed_request", "the body could not be read: %v", err)
	}
	return body, nil
}

// decodeObject decodes data, which must be exactly one JSON object, into v.
func decodeObject(data []byte, v any) error {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return errors.New("the body must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("the body is not valid JSON: %v", jsonErrText(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("the body has data after its JSON object")
	}
	return nil
}

func jsonErrText(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field != "" {
			return fmt.Sprintf("%q must be %s, not %s", te.Field, jsonKind(te.Type.Kind().String()), te.Value)
		}
	}
	return err.Error()
}

func jsonKind(k string) string {
	switch k {
	case "string":
		return "a string"
	case "ptr", "struct", "map":
		return "an object"
	case "slice":
		return "an array"
	}
	return k
}

// parseCallBody decodes a call body: one JSON object whose "arguments" is an object.
func parseCallBody(data []byte) (callBody, error) {
	var b callBody
	if err := decodeObject(data, &b); err != nil {
		return b, problem("malformed_request", "%v", err)
	}
	args := bytes.TrimSpace(b.Arguments)
	if len(args) == 0 || bytes.Equal(args, []byte("null")) {
		return b, problem("malformed_request", "the body needs an \"arguments\" object")
	}
	if args[0] != '{' {
		return b, problem("malformed_request", "\"arguments\" must be a JSON object")
	}
	b.Arguments = args
	return b, nil
}

// canonicalize returns the RFC 8785 (JCS) form of a JSON value and its
// input_hash, "sha256:<hex>".
func canonicalize(raw []byte) ([]byte, string, error) {
	c, err := canon.Transform(raw)
	if err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(c)
	return c, "sha256:" + hex.EncodeToString(sum[:]), nil
}

// validKey reports whether s is an idempotency key or action id: 8 to 255
// visible ASCII characters (0x21-0x7E).
func validKey(s string) bool {
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
