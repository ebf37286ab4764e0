package gateway

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/toolcall"
)

// Resumable MCP streams (streamable HTTP resumability). A tools/call POST
// that asks for server-sent events gets a priming event first — an event id
// and a retry field — and every event of its answer is stored in the
// ledger's database (ledger.StreamStore) before it is sent. A client whose
// stream drops reconnects with GET /mcp and Last-Event-ID, on this gateway or
// any other on the same ledger, and receives the events it missed: the
// stored answer of the one execution, never a second call. The call itself
// runs to its end when the client goes away.
const (
	// MCPStreamRetry is the retry field of the priming event: how long a
	// client waits before it reconnects.
	MCPStreamRetry = time.Second
	// MCPStreamRetention is how long a stream's events are kept.
	MCPStreamRetention = 15 * time.Minute
	// MCPResumeWait is how long a resumed stream waits for events that are
	// not stored yet (the call still in flight) before it ends; the client
	// then reconnects with the same Last-Event-ID.
	MCPResumeWait = 30 * time.Second
	// mcpResumePoll is how often a resumed stream looks for new events.
	mcpResumePoll = 100 * time.Millisecond
	// mcpNoResumeFrom is the first protocol version without Last-Event-ID
	// resumability and without the GET stream (SEP-2575): its streams, and
	// its GET (405), are left to the MCP SDK; it listens for list_changed
	// with subscriptions/listen instead of the notification stream
	// (mcp_notify.go).
	mcpNoResumeFrom = "2026-07-28"
)

// mcpResume serves resumable tools/call streams over a StreamStore. A nil
// *mcpResume (a ledger store that keeps no streams) passes every request on.
type mcpResume struct {
	s         *Server
	store     ledger.StreamStore
	lastPrune atomic.Int64
}

func newMCPResume(s *Server) *mcpResume {
	if s.cfg.Ledger == nil {
		return nil
	}
	st, ok := s.cfg.Ledger.Store.(ledger.StreamStore)
	if !ok {
		return nil
	}
	return &mcpResume{s: s, store: st}
}

// serve handles r: a resumption (GET with Last-Event-ID) itself, a tools/call
// POST through next with its events stored, anything else by next alone.
func (m *mcpResume) serve(w http.ResponseWriter, r *http.Request, p *Principal, next http.Handler) error {
	if m == nil || p == nil || r.Header.Get("Mcp-Protocol-Version") >= mcpNoResumeFrom {
		next.ServeHTTP(w, r)
		return nil
	}
	if r.Method == http.MethodGet && r.Header.Get("Last-Event-ID") != "" {
		return m.resume(w, r, p)
	}
	if r.Method != http.MethodPost || !strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		next.ServeHTTP(w, r)
		return nil
	}
	limit := m.s.cfg.MaxBodyBytes
	if limit <= 0 {
		limit = DefaultMaxBodyBytes
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), r.Body))
	id, ok := toolsCallID(body)
	if err != nil || int64(len(body)) > limit || !ok {
		next.ServeHTTP(w, r)
		return nil
	}
	// The whole body is read: the SDK reads it from memory, after the
	// priming event is sent.
	r.Body = io.NopCloser(bytes.NewReader(body))
	sid := crand.Text()
	now := time.Now()
	if err := m.store.OpenStream(r.Context(), ledger.StreamInfo{ID: sid, Tenant: p.Tenant, Principal: p.Name, Created: now}); err != nil {
		m.s.log().Warn("mcp: the stream is not resumable: the ledger did not store it", "error", err.Error())
		next.ServeHTTP(w, r)
		return nil
	}
	m.prune(now)
	sw := &storedStream{m: m, w: w, rc: http.NewResponseController(w), sid: sid, reqID: id, header: http.Header{}}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache, no-transform")
	w.WriteHeader(http.StatusOK)
	sw.send(fmt.Sprintf("id: %s_0\nretry: %d\ndata: \n\n", sid, MCPStreamRetry.Milliseconds()))
	// The call runs to its end when the client goes away: its answer is
	// stored for the client that resumes.
	next.ServeHTTP(sw, r.WithContext(context.WithoutCancel(r.Context())))
	sw.finish()
	return nil
}

// prune deletes expired streams, at most once a minute per gateway.
func (m *mcpResume) prune(now time.Time) {
	last := m.lastPrune.Load()
	if now.UnixNano()-last < int64(time.Minute) || !m.lastPrune.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := m.store.PruneStreams(ctx, now.Add(-MCPStreamRetention)); err != nil {
			m.s.log().Warn("mcp: pruning expired streams", "error", err.Error())
		}
	}()
}

// toolsCallID returns the id of a body that is one JSON-RPC tools/call request.
func toolsCallID(body []byte) (json.RawMessage, bool) {
	var msg struct {
		Method string          `json:"method"`
		ID     json.RawMessage `json:"id"`
	}
	t := bytes.TrimSpace(body)
	if len(t) == 0 || t[0] != '{' || json.Unmarshal(t, &msg) != nil {
		return nil, false
	}
	return msg.ID, msg.Method == "tools/call" && len(msg.ID) > 0 && !bytes.Equal(msg.ID, []byte("null"))
}

// storedStream is the ResponseWriter the MCP SDK answers a tools/call
// through: each server-sent event it writes is stored, then sent to the client
// with its id, for as long as the client listens.
type storedStream struct {
	m      *mcpResume
	w      http.ResponseWriter
	rc     *http.ResponseController
	sid    string
	reqID  json.RawMessage
	header http.Header // the SDK's headers: ours are sent already

	mu     sync.Mutex
	status int
	buf    []byte // an event not yet complete, or a refusal's text
	idx    int
	gone   bool
}

func (sw *storedStream) Header() http.Header { return sw.header }

func (sw *storedStream) WriteHeader(code int) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if sw.status == 0 {
		sw.status = code
	}
}

func (sw *storedStream) Write(p []byte) (int, error) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if sw.status == 0 {
		sw.status = http.StatusOK
	}
	sw.buf = append(sw.buf, p...)
	if sw.status != http.StatusOK || !strings.HasPrefix(sw.header.Get("Content-Type"), "text/event-stream") {
		return len(p), nil // a refusal: answered as a JSON-RPC error by finish
	}
	for {
		end := bytes.Index(sw.buf, []byte("\n\n"))
		if end < 0 {
			break
		}
		ev := sw.buf[:end]
		sw.buf = sw.buf[end+2:]
		if data := sseData(ev); len(data) > 0 {
			sw.store(data)
		}
	}
	return len(p), nil
}

// Flush sends what is written; the events are flushed as they are sent.
func (sw *storedStream) Flush() {}

// store keeps one event's data and sends it to the client. Called with mu held.
func (sw *storedStream) store(data []byte) {
	sw.idx++
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := sw.m.store.AppendStreamEvent(ctx, sw.sid, sw.idx, data); err != nil {
		sw.m.s.log().Warn("mcp: an event of the stream was not stored; a resumed stream will miss it", "error", err.Error())
	}
	sw.sendLocked(formatEvent(sw.sid, sw.idx, data))
}

func (sw *storedStream) send(s string) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	sw.sendLocked(s)
}

func (sw *storedStream) sendLocked(s string) {
	if sw.gone {
		return
	}
	if _, err := io.WriteString(sw.w, s); err != nil {
		sw.gone = true
		return
	}
	if err := sw.rc.Flush(); err != nil {
		sw.gone = true
	}
}

// finish answers a refusal of the SDK as a JSON-RPC error event (the client
// was told 200 already) and marks the stream done.
func (sw *storedStream) finish() {
	sw.mu.Lock()
	if sw.status != 0 && (sw.status != http.StatusOK || !strings.HasPrefix(sw.header.Get("Content-Type"), "text/event-stream")) {
		msg := strings.TrimSpace(string(sw.buf))
		if msg == "" {
			msg = http.StatusText(sw.status)
		}
		data, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": sw.reqID,
			"error": map[string]any{"code": -32600, "message": msg}})
		sw.store(data)
	}
	sw.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := sw.m.store.CloseStream(ctx, sw.sid); err != nil {
		sw.m.s.log().Warn("mcp: the stream was not marked done; a resumed stream waits for more", "error", err.Error())
	}
}

// resume serves GET /mcp with Last-Event-ID: the stored events after it,
// then those stored later, until the stream is done or MCPResumeWait passes.
func (m *mcpResume) resume(w http.ResponseWriter, r *http.Request, p *Principal) error {
	eid := r.Header.Get("Last-Event-ID")
	sid, after, ok := parseStreamEventID(eid)
	if !ok {
		return problem(toolcall.CodeMalformedRequest, "Last-Event-ID %q is not an event id this gateway sent (STREAM_INDEX)", eid)
	}
	notFound := problem(toolcall.CodeNotFound, "no stream to resume for Last-Event-ID %q: it expired (streams are kept %s) or was never opened with this key", eid, MCPStreamRetention)
	ctx := r.Context()
	info, events, err := m.store.StreamEvents(ctx, sid, after)
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		return notFound
	case err != nil:
		return problem(toolcall.CodeLedgerUnavailable, "the ledger did not answer; reconnect with the same Last-Event-ID")
	case info.Tenant != p.Tenant || info.Principal != p.Name:
		return notFound
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache, no-transform")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	rc.Flush()
	deadline := time.Now().Add(MCPResumeWait)
	for {
		for _, e := range events {
			if _, err := io.WriteString(w, formatEvent(sid, e.Index, e.Data)); err != nil {
				return nil
			}
			after = e.Index
		}
		rc.Flush()
		if info.Done || time.Now().After(deadline) {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(mcpResumePoll):
		}
		if info, events, err = m.store.StreamEvents(ctx, sid, after); err != nil {
			return nil // the answer has begun: the client reconnects
		}
	}
}

// formatEvent is one stored event as the client receives it.
func formatEvent(sid string, idx int, data []byte) string {
	var b strings.Builder
	fmt.Fprintf(&b, "id: %s_%d\nevent: message\n", sid, idx)
	for _, line := range strings.Split(string(data), "\n") {
		b.WriteString("data: ")
		b.WriteString(line)
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	return b.String()
}

// sseData joins the data lines of one server-sent event.
func sseData(ev []byte) []byte {
	var out [][]byte
	for _, line := range bytes.Split(ev, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			out = append(out, bytes.TrimPrefix(rest, []byte(" ")))
		}
	}
	return bytes.TrimSpace(bytes.Join(out, []byte("\n")))
}

// parseStreamEventID reads STREAM_INDEX.
func parseStreamEventID(eid string) (string, int, bool) {
	sid, n, ok := strings.Cut(eid, "_")
	idx, err := strconv.Atoi(n)
	if !ok || err != nil || idx < 0 || strconv.Itoa(idx) != n || sid == "" || len(sid) > 64 || strings.ContainsAny(sid, "_ \t\r\n") {
		return "", 0, false
	}
	return sid, idx, true
}
