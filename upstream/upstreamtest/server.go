// Package upstreamtest serves a small ticketing MCP server (streamable HTTP,
// the official Go SDK) for tests of toolgate's upstream bindings: it counts
// its effects, can hold or fail a call on purpose, and can change its tool
// definitions while it runs. It is a naive upstream: it never deduplicates,
// so a second tools/call for one key shows up as a second ticket.
package upstreamtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// KeyMeta is the _meta key the server reads the idempotency key from.
const KeyMeta = "toolgate/idempotency_key"

// Ticket is one effect of create_ticket.
type Ticket struct {
	ID       string `json:"ticket_id"`
	Subject  string `json:"subject"`
	Priority string `json:"priority"`
	Key      string `json:"-"`
}

// Fault is what the next create_ticket call does besides its effect.
type Fault int

// Faults.
const (
	None       Fault = iota
	HoldAfter        // apply the effect, then wait until Release (the client times out or is cut off)
	HoldBefore       // wait until Release, then apply the effect
	ToolError        // no effect; an isError result
	RPCError         // apply the effect, then answer a JSON-RPC internal error
	// EchoRPCError applies the effect, then answers a JSON-RPC internal
	// error whose message repeats the call's raw arguments (as careless
	// servers do).
	EchoRPCError
	// EchoInvalidParams has no effect and answers JSON-RPC invalid params
	// (-32602) repeating the raw arguments.
	EchoInvalidParams
)

// Server is the ticketing MCP server.
type Server struct {
	URL  string
	HTTP *httptest.Server

	mcp *mcp.Server

	mu       sync.Mutex
	tickets  []Ticket
	faults   []Fault
	calls    int
	release  chan struct{}
	held     int
	heldCh   chan struct{}
	lookups  int
	lookup   bool // find_ticket_by_key is listed
	posts    int
	sessions int
	// httpFaults answer the next tools/call POSTs at the HTTP layer, before
	// the MCP server sees them (HTTPFault).
	httpFaults []int
	// raws answer the next tools/call POSTs with these JSON-RPC results,
	// written byte for byte (RawAnswer).
	raws []rawAnswer
	// lists counts tools/list requests.
	lists int
}

type rawAnswer struct {
	msg string // with IDPlaceholder for the request's id
	sse bool
}

// IDPlaceholder stands for the request's JSON-RPC id in RawReply.
const IDPlaceholder = "@ID@"

// CreateTicketTool is create_ticket's definition as the server first lists it.
func CreateTicketTool() *mcp.Tool {
	return &mcp.Tool{
		Name:        "create_ticket",
		Title:       "Create a ticket",
		Description: "Open a support ticket. Use it once per customer problem.",
		InputSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"subject":  map[string]any{"type": "string", "description": "One line saying what is wrong.", "minLength": 1, "maxLength": 200},
				"priority": map[string]any{"type": "string", "enum": []any{"low", "normal", "urgent"}, "description": "How soon someone must look."},
				"email":    map[string]any{"type": "string", "format": "email", "description": "Where to write back."},
			},
			"required":             []any{"subject", "priority"},
			"additionalProperties": false,
		},
		OutputSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"ticket_id": map[string]any{"type": "string", "description": "The new ticket's id."},
				"subject":   map[string]any{"type": "string", "description": "The subject as stored."},
				"priority":  map[string]any{"type": "string", "description": "The priority as stored."},
			},
			"required": []any{"ticket_id"},
		},
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: false, DestructiveHint: ptr(false)},
	}
}

// FindTicketTool is the lookup tool's definition.
func FindTicketTool() *mcp.Tool {
	return &mcp.Tool{
		Name:        "find_ticket_by_key",
		Description: "Find the ticket created under an idempotency key.",
		InputSchema: map[string]any{
			"type":       "object",
			"properties": map[string]any{"idempotency_key": map[string]any{"type": "string", "description": "The key create_ticket was called with."}},
			"required":   []any{"idempotency_key"},
		},
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}
}

// ListTicketsTool is a read-only tool.
func ListTicketsTool() *mcp.Tool {
	return &mcp.Tool{
		Name:        "count_tickets",
		Description: "Count the open tickets.",
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{}, "additionalProperties": false},
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}
}

func ptr[T any](v T) *T { return &v }

// Start serves a new server on loopback until the test ends. lookup lists
// find_ticket_by_key; stateless serves without sessions.
func Start(t testing.TB, lookup, stateless bool) *Server {
	t.Helper()
	s := &Server{release: make(chan struct{}), heldCh: make(chan struct{}, 64), lookup: lookup}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "tickets", Version: "1"}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
		InitializedHandler: func(context.Context, *mcp.InitializedRequest) {
			s.mu.Lock()
			s.sessions++
			s.mu.Unlock()
		},
	})
	s.mcp.AddTool(CreateTicketTool(), s.createTicket)
	s.mcp.AddTool(ListTicketsTool(), s.countTickets)
	if lookup {
		s.mcp.AddTool(FindTicketTool(), s.findTicket)
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{Stateless: stateless})
	s.HTTP = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			s.mu.Lock()
			s.posts++
			s.mu.Unlock()
			if s.httpFault(w, r) || s.rawAnswer(w, r) {
				return
			}
		}
		h.ServeHTTP(w, r)
	}))
	s.URL = s.HTTP.URL + "/mcp"
	t.Cleanup(func() {
		s.Release()
		s.HTTP.CloseClientConnections()
		s.HTTP.Close()
	})
	return s
}

// SetTool adds or replaces a tool's definition; connected clients are told
// the list changed. A replaced create_ticket keeps its handler.
func (s *Server) SetTool(tool *mcp.Tool) {
	switch tool.Name {
	case "find_ticket_by_key":
		s.mcp.AddTool(tool, s.findTicket)
	case "count_tickets":
		s.mcp.AddTool(tool, s.countTickets)
	default:
		s.mcp.AddTool(tool, s.createTicket)
	}
}

// RemoveTool stops listing a tool.
func (s *Server) RemoveTool(name string) { s.mcp.RemoveTools(name) }

// Fault queues what the next create_ticket calls do, in order.
func (s *Server) Fault(f ...Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, f...)
}

// HTTPFault makes the next tools/call POSTs answer these HTTP statuses, in
// order, with a JSON-RPC error body whose message repeats the whole request
// (arguments included); the MCP server never sees those requests.
func (s *Server) HTTPFault(status ...int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.httpFaults = append(s.httpFaults, status...)
}

// RawAnswer makes the next tools/call POST answer with result (a JSON-RPC
// result, written exactly as given: the test decides its bytes), as one
// JSON body or, with sse, as an event stream after a progress notification.
// The tool does not run.
func (s *Server) RawAnswer(result string, sse bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.raws = append(s.raws, rawAnswer{`{"jsonrpc":"2.0","id":` + IDPlaceholder + `,"result":` + result + `}`, sse})
}

// RawReply makes the next tools/call POST answer with msg, any text (a
// JSON-RPC error, a malformed message), IDPlaceholder replaced by the
// request's id; the tool does not run.
func (s *Server) RawReply(msg string, sse bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.raws = append(s.raws, rawAnswer{msg, sse})
}

// Lists counts the tools/list requests the server received.
func (s *Server) Lists() int { s.mu.Lock(); defer s.mu.Unlock(); return s.lists }

// peek reads a POST's JSON-RPC id and method, leaving its body readable.
func peek(r *http.Request) (id json.RawMessage, method string, body []byte) {
	body, err := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if err != nil || json.Unmarshal(body, &msg) != nil {
		return nil, "", body
	}
	return msg.ID, msg.Method, body
}

func (s *Server) rawAnswer(w http.ResponseWriter, r *http.Request) bool {
	id, method, _ := peek(r)
	s.mu.Lock()
	if method == "tools/list" {
		s.lists++
	}
	if method != "tools/call" || len(s.raws) == 0 {
		s.mu.Unlock()
		return false
	}
	a := s.raws[0]
	s.raws = s.raws[1:]
	s.mu.Unlock()
	msg := strings.ReplaceAll(a.msg, IDPlaceholder, string(id))
	if sid := r.Header.Get("Mcp-Session-Id"); sid != "" {
		w.Header().Set("Mcp-Session-Id", sid)
	}
	if !a.sse {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(msg))
		return true
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprintf(w, ": a comment\n\nevent: message\ndata: %s\n\n", `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1}}`)
	fmt.Fprintf(w, "event: message\nid: 1\ndata: %s\n\n", msg)
	return true
}

func (s *Server) httpFault(w http.ResponseWriter, r *http.Request) bool {
	s.mu.Lock()
	pending := len(s.httpFaults) > 0
	s.mu.Unlock()
	if !pending {
		return false
	}
	var msg struct {
		ID     json.RawMessage
		Method string
	}
	var body []byte
	msg.ID, msg.Method, body = peek(r)
	if msg.Method != "tools/call" {
		return false
	}
	s.mu.Lock()
	status := s.httpFaults[0]
	s.httpFaults = s.httpFaults[1:]
	s.mu.Unlock()
	code := jsonrpc.CodeInternalError
	if status < 500 {
		code = jsonrpc.CodeInvalidParams
	}
	out, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": msg.ID,
		"error": map[string]any{"code": code, "message": "cannot handle " + string(body)}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(out)
	return true
}

// Release lets every held call go on.
func (s *Server) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.release:
	default:
		close(s.release)
	}
}

// WaitHeld waits until a call is held.
func (s *Server) WaitHeld(t testing.TB) {
	t.Helper()
	select {
	case <-s.heldCh:
	case <-time.After(10 * time.Second):
		t.Fatal("no call was held")
	}
}

// Tickets returns the effects, in order; with a key, only that key's.
func (s *Server) Tickets(key ...string) []Ticket {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Ticket
	for _, tk := range s.tickets {
		if len(key) == 0 || tk.Key == key[0] {
			out = append(out, tk)
		}
	}
	return out
}

// Calls counts create_ticket calls that reached the handler; Lookups
// find_ticket_by_key calls; Posts every POST to the endpoint.
func (s *Server) Calls() int   { s.mu.Lock(); defer s.mu.Unlock(); return s.calls }
func (s *Server) Lookups() int { s.mu.Lock(); defer s.mu.Unlock(); return s.lookups }
func (s *Server) Posts() int   { s.mu.Lock(); defer s.mu.Unlock(); return s.posts }

// Sessions counts the sessions clients initialized.
func (s *Server) Sessions() int { s.mu.Lock(); defer s.mu.Unlock(); return s.sessions }

func (s *Server) nextFault() (Fault, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if len(s.faults) == 0 {
		return None, s.release
	}
	f := s.faults[0]
	s.faults = s.faults[1:]
	return f, s.release
}

func (s *Server) hold(release <-chan struct{}) {
	s.heldCh <- struct{}{}
	<-release
}

func (s *Server) createTicket(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct {
		Subject  string `json:"subject"`
		Priority string `json:"priority"`
	}
	if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "arguments: " + err.Error()}
	}
	key, _ := req.Params.Meta[KeyMeta].(string)
	f, release := s.nextFault()
	if f == EchoInvalidParams {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "cannot take " + string(req.Params.Arguments)}
	}
	if f == ToolError {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "the ticket queue for " + args.Priority + " is closed"}}}, nil
	}
	if f == HoldBefore {
		s.hold(release)
	}
	s.mu.Lock()
	tk := Ticket{ID: fmt.Sprintf("T-%d", len(s.tickets)+1), Subject: args.Subject, Priority: args.Priority, Key: key}
	s.tickets = append(s.tickets, tk)
	s.mu.Unlock()
	switch f {
	case HoldAfter:
		s.hold(release)
	case RPCError:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the ticket store failed after writing " + tk.ID}
	case EchoRPCError:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the ticket store failed after writing " + tk.ID + " for " + string(req.Params.Arguments)}
	}
	return s.ticketResult(tk), nil
}

func (s *Server) ticketResult(tk Ticket) *mcp.CallToolResult {
	b, _ := json.Marshal(tk)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: json.RawMessage(b)}
}

func (s *Server) findTicket(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct {
		Key string `json:"idempotency_key"`
	}
	_ = json.Unmarshal(req.Params.Arguments, &args)
	s.mu.Lock()
	s.lookups++
	s.mu.Unlock()
	if args.Key == "" {
		return nil, errors.New("idempotency_key is required")
	}
	if tks := s.Tickets(args.Key); len(tks) > 0 {
		return s.ticketResult(tks[0]), nil
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `{"found":false}`}}, StructuredContent: map[string]any{"found": false}}, nil
}

func (s *Server) countTickets(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	n := len(s.Tickets())
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(`{"open":%d}`, n)}}}, nil
}

// EndSessions ends every session on the server's side (as a restarted
// server would have forgotten them): a client's next request on one is
// answered 404.
func (s *Server) EndSessions() {
	for ss := range s.mcp.Sessions() {
		ss.Close()
	}
}
