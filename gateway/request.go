package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/toolcall"
)

// callBody is the body of POST /v1/tools/{tool_id}/calls and /v1/actions/{id}/calls.
type callBody struct {
	Arguments     json.RawMessage `json:"arguments"`
	Version       string          `json:"version"`
	CorrelationID string          `json:"correlation_id"`
	PolicyVersion string          `json:"policy_version"`
	Provider      *providerBody   `json:"provider"`
}

type providerBody struct {
	Name   string `json:"name"`
	Route  string `json:"route"`
	CallID string `json:"call_id"`
	Reason string `json:"reason"`
}

// readBody reads at most limit bytes of the request body; a longer one is
// request_too_large.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, problem(toolcall.CodeRequestTooLarge, "the body is larger than %d bytes", limit)
		}
		return nil, problem(toolcall.CodeMalformedRequest, "the body could not be read: %v", err)
	}
	return body, nil
}

// readCallBody reads and decodes the body of a one-shot or two-phase call.
func (s *Server) readCallBody(w http.ResponseWriter, r *http.Request) (toolcall.Body, error) {
	raw, err := readBody(w, r, s.cfg.MaxBodyBytes)
	if err != nil {
		return toolcall.Body{}, err
	}
	b, err := parseCallBody(raw)
	if err != nil {
		return toolcall.Body{}, err
	}
	out := toolcall.Body{Arguments: b.Arguments, Version: b.Version, CorrelationID: b.CorrelationID, PolicyVersion: b.PolicyVersion}
	if pb := b.Provider; pb != nil {
		out.Provider = &ledger.ProviderCall{Name: pb.Name, Route: pb.Route, CallID: pb.CallID}
		out.ProviderReason = pb.Reason
	}
	return out, nil
}

// decodeBody reads the request body into v: at most MaxBodyBytes, exactly
// one JSON object, or (with optional) nothing at all.
func (s *Server) decodeBody(w http.ResponseWriter, r *http.Request, v any, optional bool) error {
	raw, err := readBody(w, r, s.cfg.MaxBodyBytes)
	if err != nil {
		return err
	}
	if optional && len(raw) == 0 {
		return nil
	}
	if err := decodeObject(raw, v); err != nil {
		return problem(toolcall.CodeMalformedRequest, "%v", err)
	}
	return nil
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
	// One JSON object and nothing after it decodes the same with Unmarshal
	// as with decodeObject's Decoder, without the Decoder's buffer; any
	// other body (not an object, trailing data, a syntax or type error) is
	// decoded again by decodeObject, whose error the answer quotes.
	if trimmed := bytes.TrimSpace(data); len(trimmed) == 0 || trimmed[0] != '{' || json.Unmarshal(trimmed, &b) != nil {
		b = callBody{}
		if err := decodeObject(data, &b); err != nil {
			return b, problem(toolcall.CodeMalformedRequest, "%v", err)
		}
	}
	args := bytes.TrimSpace(b.Arguments)
	if len(args) == 0 || bytes.Equal(args, []byte("null")) {
		return b, problem(toolcall.CodeMalformedRequest, "the body needs an \"arguments\" object")
	}
	if args[0] != '{' {
		return b, problem(toolcall.CodeMalformedRequest, "\"arguments\" must be a JSON object")
	}
	b.Arguments = args
	return b, nil
}
