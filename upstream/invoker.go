package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolgate/toolgate/internal/defaults"
	"github.com/toolgate/toolgate/internal/mcpmeta"
	"github.com/toolgate/toolgate/invoke"
	"github.com/toolgate/toolgate/ledger"
)

// DefaultKeyMeta is the _meta key of tools/call that carries the downstream
// key (the action's idempotency key as the binding's downstream_key template
// makes it) when the binding names none. It is the key toolgate's own /mcp
// endpoint reads, so a toolgate behind a toolgate sees the same action.
const DefaultKeyMeta = defaults.IdempotencyMeta

// LookupKeyArgument is the argument of a binding's lookup tool that carries
// the downstream key (also sent in _meta, as with tools/call).
const LookupKeyArgument = "idempotency_key"

// Statuses an upstream tool's answer is stored and answered with: MCP has no
// status, the ledger decides by it (2xx succeeded, 4xx rejected).
const (
	StatusOK        = http.StatusOK                  // a result without isError
	StatusToolError = http.StatusUnprocessableEntity // a result with isError: the tool refused; terminal rejected
)

// notStartedCodes are the JSON-RPC errors that prove the server did not run
// the tool: the request was not understood (parse error, invalid request),
// the method is unknown, or the parameters were refused before the tool ran
// (MCP answers an unknown tool with -32602). Any other error code (internal
// error, server-defined codes) comes from a tool that may have started, so
// its attempt is unknown.
var notStartedCodes = []int64{jsonrpc.CodeParseError, jsonrpc.CodeInvalidRequest, jsonrpc.CodeMethodNotFound, jsonrpc.CodeInvalidParams}

// Invoker reaches the tools of upstream MCP servers for the call path (a
// toolcall.Invoker for bindings with MCP set). It is safe for concurrent use.
type Invoker struct {
	pool *Pool
	// stopped, when set, is asked after a session was (re)connected and its
	// definitions checked: a tool that drifted is not sent the call.
	stopped func(url, tool string) string
}

// NewInvoker returns an invoker over pool's sessions.
func NewInvoker(pool *Pool) *Invoker { return &Invoker{pool: pool} }

// Call sends one attempt of r's tools/call, exactly once, and classifies it:
//
//   - a result is Answered: 200, or 422 when it is an isError result (a
//     terminal rejected); the body is Body's rendering of the result;
//   - a JSON-RPC error with a code in notStartedCodes is NotStarted;
//   - an HTTP answer to the call's POST below 500 without a JSON-RPC answer
//     (404 for an expired session, 401, 403, 429…) is NotStarted: the server
//     refused the request before a tool saw it; a 5xx is Lost unless the
//     binding lists it in NotStartedStatuses;
//   - a timeout, a dropped connection or a stream that ended after the
//     request was written is Lost, as is any other JSON-RPC error;
//   - a failure before the request was written (no session could be made,
//     refused, context already done) is NotStarted.
//
// The downstream key goes in the request's _meta under the binding's KeyMeta
// (default DefaultKeyMeta); the arguments are r.Body, the canonical bytes
// that were validated.
func (in *Invoker) Call(ctx context.Context, r invoke.Request) invoke.Result {
	res, sv := in.call(ctx, r)
	if sv != nil {
		res.Err = sv.scrub(res.Err)
	}
	return res
}

func (in *Invoker) call(ctx context.Context, r invoke.Request) (invoke.Result, *server) {
	b, key, err := prepare(r)
	if err != nil {
		return invoke.Result{Outcome: ledger.NotStarted, Err: err}, nil
	}
	m := b.MCP
	ctx, cancel := context.WithTimeout(ctx, b.Timeout)
	defer cancel()
	sv, err := in.pool.server(m.URL, m.Headers)
	if err != nil {
		return invoke.Result{Outcome: ledger.NotStarted, Err: err}, nil
	}
	cs, _, err := sv.session(ctx)
	if err != nil {
		return invoke.Result{Outcome: ledger.NotStarted, Err: err}, sv
	}
	if in.stopped != nil {
		if why := in.stopped(m.URL, m.Tool); why != "" {
			return invoke.Result{Outcome: ledger.NotStarted, Err: fmt.Errorf("mcp %s %s: not sent: the tool's definition drifted: %s", redactURL(m.URL), m.Tool, why)}, sv
		}
	}
	args := r.Body
	if len(args) == 0 {
		args = []byte("{}")
	}
	at := &attempt{now: in.pool.cfg.Now}
	raw := &rawResult{max: in.pool.cfg.MaxResponseBytes}
	res, err := cs.CallTool(context.WithValue(withAttempt(ctx, at), rawKey{}, raw), &mcp.CallToolParams{
		Name: m.Tool, Arguments: json.RawMessage(args), Meta: meta(m, key, r.Traceparent),
	})
	out := invoke.Result{Written: at.written.Load(), SentAt: at.sentAt()}
	if err == nil {
		if res.NeedsInput() {
			// The server wants input toolgate cannot give; what it did so
			// far is not known.
			out.Outcome = ledger.Lost
			out.Err = fmt.Errorf("mcp %s %s: the server asked for input (a multi-round-trip result), which toolgate does not give", redactURL(m.URL), m.Tool)
			return out, sv
		}
		out.Outcome = ledger.Answered
		out.StatusCode, out.ContentType, out.Body = RawBody(res, raw.get())
		out.Written = true
		if out.SentAt.IsZero() {
			out.SentAt = in.pool.cfg.Now()
		}
		return out, sv
	}
	out.Outcome, out.Err = classify(err, at, b, fmt.Sprintf("mcp %s tools/call %s", redactURL(m.URL), m.Tool))
	if serverError(err) == nil {
		sv.drop(cs) // a transport failure: the next call starts a fresh session
	}
	return out, sv
}

// classify says what a failed tools/call proves (see Call).
func classify(err error, at *attempt, b invoke.Binding, what string) (ledger.Outcome, error) {
	if we := serverError(err); we != nil {
		// The server answered with an error. Its message may repeat the
		// arguments, so it is not kept: only its code.
		if slices.Contains(notStartedCodes, we.Code) {
			return ledger.NotStarted, fmt.Errorf("%s: the server answered JSON-RPC error %d (%s): the tool did not run", what, we.Code, codeName(we.Code))
		}
		return ledger.Lost, fmt.Errorf("%s: the server answered JSON-RPC error %d: the tool may have run", what, we.Code)
	}
	if !at.written.Load() {
		return ledger.NotStarted, failed(err, "%s: not sent", what)
	}
	switch st := int(at.status.Load()); {
	case st >= 200 && st < 300, st == 0:
		return ledger.Lost, failed(err, "%s: sent, then", what)
	case st < 500:
		return ledger.NotStarted, fmt.Errorf("%s: the server refused the request with HTTP %d before a tool saw it", what, st)
	case slices.Contains(b.NotStartedStatuses, st):
		return ledger.NotStarted, fmt.Errorf("%s: the server answered HTTP %d (not started)", what, st)
	default:
		return ledger.Lost, fmt.Errorf("%s: the server answered HTTP %d (ambiguous)", what, st)
	}
}

// serverError finds, in err's tree, the JSON-RPC error the server answered;
// nil when there is none. The SDK's own errors are JSON-RPC errors in form
// with codes of its own (unknown error, client or server closing, rejected
// by transport): they are not answers of the server.
func serverError(err error) *jsonrpc.Error {
	var found *jsonrpc.Error
	var walk func(error)
	walk = func(e error) {
		for e != nil && found == nil {
			if we, ok := e.(*jsonrpc.Error); ok && !slices.Contains(sdkCodes, we.Code) {
				found = we
				return
			}
			switch u := e.(type) {
			case interface{ Unwrap() []error }:
				for _, x := range u.Unwrap() {
					walk(x)
				}
				return
			case interface{ Unwrap() error }:
				e = u.Unwrap()
			default:
				return
			}
		}
	}
	walk(err)
	return found
}

// sdkCodes are the codes of the SDK's own errors (see serverError).
var sdkCodes = []int64{0, -32001, -32003, -32004, -32005}

func codeName(code int64) string {
	switch code {
	case jsonrpc.CodeParseError:
		return "parse error"
	case jsonrpc.CodeInvalidRequest:
		return "invalid request"
	case jsonrpc.CodeMethodNotFound:
		return "method not found"
	case jsonrpc.CodeInvalidParams:
		return "invalid params"
	}
	return "error"
}

// prepare checks that r is an MCP binding's request and makes its downstream key.
func prepare(r invoke.Request) (invoke.Binding, string, error) {
	if r.Binding == nil || r.Binding.MCP == nil {
		return invoke.Binding{}, "", errors.New("upstream: the request's binding names no upstream MCP tool")
	}
	b := r.Binding.WithDefaults()
	if b.MCP.URL == "" || b.MCP.Tool == "" {
		return invoke.Binding{}, "", errors.New("upstream: the binding's mcp needs url and tool")
	}
	key, err := invoke.DownstreamKey(&b, r.Vars)
	if err != nil {
		return invoke.Binding{}, "", err
	}
	return b, key, nil
}

func meta(m *invoke.MCPTool, key, traceparent string) mcp.Meta {
	k := m.KeyMeta
	if k == "" {
		k = DefaultKeyMeta
	}
	out := mcp.Meta{k: key}
	if traceparent != "" {
		out["traceparent"] = traceparent // the W3C trace context, as MCP hosts carry it in _meta
	}
	return out
}

// Lookup calls the binding's lookup tool with the downstream key (the
// argument LookupKeyArgument, and _meta as for tools/call) and reads its
// answer: a result whose structuredContent (or, without one, whose only text
// content as a JSON object) has "found": false is NotFound; any other result
// without isError is Found, answered 200 with its rendering as the action's
// result; an isError result or an error is no answer (Err).
func (in *Invoker) Lookup(ctx context.Context, r invoke.Request) invoke.LookupResult {
	res, sv := in.lookup(ctx, r)
	if sv != nil {
		res.Err = sv.scrub(res.Err)
	}
	return res
}

func (in *Invoker) lookup(ctx context.Context, r invoke.Request) (invoke.LookupResult, *server) {
	b, key, err := prepare(r)
	if err != nil {
		return invoke.LookupResult{Err: err}, nil
	}
	m := b.MCP
	if m.LookupTool == "" {
		return invoke.LookupResult{Err: invoke.ErrNoLookup}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, b.Timeout)
	defer cancel()
	sv, err := in.pool.server(m.URL, m.Headers)
	if err != nil {
		return invoke.LookupResult{Err: err}, nil
	}
	cs, _, err := sv.session(ctx)
	if err != nil {
		return invoke.LookupResult{Err: fmt.Errorf("lookup: %w", err)}, sv // session's errors are describe's
	}
	what := fmt.Sprintf("lookup: mcp %s tools/call %s", redactURL(m.URL), m.LookupTool)
	raw := &rawResult{max: in.pool.cfg.MaxResponseBytes}
	res, err := cs.CallTool(context.WithValue(ctx, rawKey{}, raw), &mcp.CallToolParams{
		Name: m.LookupTool, Arguments: map[string]any{LookupKeyArgument: key}, Meta: meta(m, key, r.Traceparent),
	})
	if err != nil {
		if we := serverError(err); we != nil {
			return invoke.LookupResult{Err: fmt.Errorf("%s: the server answered JSON-RPC error %d", what, we.Code)}, sv
		}
		sv.drop(cs)
		return invoke.LookupResult{Err: failed(err, "%s", what)}, sv
	}
	if res.IsError {
		return invoke.LookupResult{Err: fmt.Errorf("%s: the lookup tool answered an error result", what)}, sv
	}
	if notFound(res) {
		return invoke.LookupResult{NotFound: true, StatusCode: StatusOK}, sv
	}
	st, ct, body := RawBody(res, raw.get())
	return invoke.LookupResult{Found: true, StatusCode: st, ContentType: ct, Body: body}, sv
}

// State is the state probe, which MCP bindings do not have.
func (in *Invoker) State(context.Context, invoke.Request) (json.RawMessage, error) { return nil, nil }

// notFound reports a lookup result that says "found": false.
func notFound(res *mcp.CallToolResult) bool {
	var probe struct {
		Found *bool `json:"found"`
	}
	raw, err := json.Marshal(res.StructuredContent)
	if res.StructuredContent == nil || err != nil {
		if len(res.Content) != 1 {
			return false
		}
		tc, ok := res.Content[0].(*mcp.TextContent)
		if !ok {
			return false
		}
		raw = []byte(tc.Text)
	}
	if json.Unmarshal(raw, &probe) != nil || probe.Found == nil {
		return false
	}
	return !*probe.Found
}

// Body renders a tool's result as the answer the HTTP API gives, the ledger
// stores and replays: its structuredContent as JSON when it has one (the
// tool's result schema describes it); else its only text content (as JSON
// when it is a JSON object or array, else as text); else
// {"content": [...]}, the content blocks as MCP writes them. The status is
// StatusOK, or StatusToolError for an isError result.
func Body(res *mcp.CallToolResult) (status int, contentType string, body []byte) {
	status = StatusOK
	if res.IsError {
		status = StatusToolError
	}
	if res.StructuredContent != nil {
		if b, err := marshalPlain(res.StructuredContent); err == nil {
			return status, "application/json", b
		}
	}
	if len(res.Content) == 1 {
		if tc, ok := res.Content[0].(*mcp.TextContent); ok {
			t := []byte(tc.Text)
			if isJSONDoc(t) {
				return status, "application/json", t
			}
			return status, "text/plain; charset=utf-8", t
		}
	}
	content := res.Content
	if content == nil {
		content = []mcp.Content{}
	}
	b, err := marshalPlain(struct {
		Content []mcp.Content `json:"content"`
	}{content})
	if err != nil {
		b = []byte(`{"content":[]}`)
	}
	return status, "application/json", b
}

// RawBody is Body over the result's raw JSON as the server wrote it (nil
// when it was not seen): structuredContent and the content blocks are
// answered as the server's own bytes, so big numbers, the order of keys and
// the escaping of strings stay as they were. The status and the choice of
// what is answered come from the decoded result.
func RawBody(res *mcp.CallToolResult, raw json.RawMessage) (status int, contentType string, body []byte) {
	status, contentType, body = Body(res)
	if len(raw) == 0 {
		return status, contentType, body
	}
	var r struct {
		StructuredContent json.RawMessage `json:"structuredContent"`
		Content           json.RawMessage `json:"content"`
	}
	if json.Unmarshal(raw, &r) != nil {
		return status, contentType, body
	}
	switch {
	case res.StructuredContent != nil:
		if len(r.StructuredContent) > 0 && !bytes.Equal(r.StructuredContent, []byte("null")) {
			return status, "application/json", bytes.Clone(r.StructuredContent)
		}
	case len(res.Content) == 1 && isText(res.Content[0]):
		// the text is the server's string exactly already
	case len(r.Content) > 0 && r.Content[0] == '[':
		return status, "application/json", append(append([]byte(`{"content":`), r.Content...), '}')
	}
	return status, contentType, body
}

func isText(c mcp.Content) bool {
	_, ok := c.(*mcp.TextContent)
	return ok
}

// marshalPlain is json.Marshal without escaping <, > and &.
func marshalPlain(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// isJSONDoc reports a JSON object or array.
func isJSONDoc(b []byte) bool {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case '{', '[':
			return json.Valid(b)
		}
		return false
	}
	return false
}

// CheckMetaKey holds a _meta key to MCP's naming rules (internal/mcpmeta,
// which config applies at load time too): it returns what is wrong, "" when
// nothing is.
func CheckMetaKey(key string) string { return mcpmeta.CheckKey(key) }
