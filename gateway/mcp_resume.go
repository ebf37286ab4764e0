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

	"github.com/prometheus/client_golang/prometheus"
	"github.com/toolgate/toolgate/internal/defaults"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/toolcall"
)

// Resumable MCP streams (streamable HTTP resumability). A tools/call POST
// that asks for server-sent events gets a priming event first — an event id
// and a retry field — and every event of its answer is sent with an id. A
// call that is admitted (its key, allow-list and arguments checked; it goes
// on to execute or to wait for the running action it joins:
// toolcall.Input.Admitted) has its stream stored in the ledger's database
// (ledger.StreamStore) from then on, each event before it is sent. A client
// whose stream drops reconnects with GET /mcp and Last-Event-ID, on this
// gateway or any other on the same ledger, and receives the events it
// missed: the stored answer of the one execution, never a second call. The
// call itself runs to its end when the client goes away. A refused call, a
// replay or an approval wait is answered at once and not stored: its stream
// cannot be resumed (404); the same call sent again gets the same answer.
//
// The stored streams are bounded per key and in all, in count and bytes
// (Config.MaxMCPStored*): a call that finds a bound reached still runs, as
// an SSE stream without event ids (nothing to resume), and
// toolgate_mcp_streams_unstored_total counts it. A stream is kept
// MCPStreamRetention: a resumption of an older one is 404, and the gateway's
// ledger.StreamCleaner deletes it.
const (
	// MCPStreamRetry is the retry field of the priming event: how long a
	// client waits before it reconnects.
	MCPStreamRetry = time.Second
	// MCPStreamRetention is how long a stream's events are kept.
	MCPStreamRetention = ledger.StreamRetention
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
	// mcpPendingEvents bounds the events of a stream kept in memory before
	// its call is admitted (they are stored once it is).
	mcpPendingEvents = 16
)

// Defaults of the bounds of the stored streams (Config.MaxMCPStored*).
const (
	DefaultMaxMCPStoredStreamsPerKey = defaults.MCPStoredStreamsPerKey
	DefaultMaxMCPStoredStreams       = defaults.MCPStoredStreams
	DefaultMaxMCPStoredBytesPerKey   = defaults.MCPStoredBytesPerKey
	DefaultMaxMCPStoredBytes         = defaults.MCPStoredBytes
)

// mcpResume serves resumable tools/call streams over a StreamStore. A nil
// *mcpResume (a ledger store that keeps no streams) passes every request on.
type mcpResume struct {
	s         *Server
	store     ledger.StreamStore
	limits    ledger.StreamLimits
	now       func() time.Time
	unstored  *prometheus.CounterVec
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
	bound := func(v, d int64) int64 {
		switch {
		case v == 0:
			return d
		case v < 0:
			return 0
		}
		return v
	}
	c := s.cfg
	m := &mcpResume{s: s, store: st, now: c.Now, limits: ledger.StreamLimits{
		PerKey:      int(bound(int64(c.MaxMCPStoredStreamsPerKey), DefaultMaxMCPStoredStreamsPerKey)),
		Total:       int(bound(int64(c.MaxMCPStoredStreams), DefaultMaxMCPStoredStreams)),
		PerKeyBytes: bound(c.MaxMCPStoredBytesPerKey, DefaultMaxMCPStoredBytesPerKey),
		TotalBytes:  bound(c.MaxMCPStoredBytes, DefaultMaxMCPStoredBytes),
	}}
	if m.now == nil {
		m.now = time.Now
	}
	m.unstored = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toolgate_mcp_streams_unstored_total",
		Help: "MCP tools/call streams served without being kept for resumption because the stored streams reached a bound: of the key (limit=mcp_stored_streams_per_key, mcp_stored_bytes_per_key) or of all keys (limit=mcp_stored_streams, mcp_stored_bytes), or the ledger did not answer (limit=ledger)."},
		[]string{"limit"})
	if err := c.Prometheus.Register(m.unstored); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			m.unstored = are.ExistingCollector.(*prometheus.CounterVec)
		}
	}
	for _, l := range []string{"mcp_stored_streams_per_key", "mcp_stored_bytes_per_key", "mcp_stored_streams", "mcp_stored_bytes", "ledger"} {
		m.unstored.WithLabelValues(l)
	}
	return m
}

// admittedKey is the context key of a stored stream's admission hook.
type admittedKey struct{}

// admittedHook is the function a tools/call handler passes as
// toolcall.Input.Admitted: it stores the request's stream from then on
// (nil when the request has no stream to store).
func admittedHook(ctx context.Context) func() {
	f, _ := ctx.Value(admittedKey{}).(func())
	return f
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
	now := m.now()
	m.prune(now)
	if why := m.full(r.Context(), p, now); why != "" {
		m.unstored.WithLabelValues(why).Inc()
		next.ServeHTTP(w, r) // served, not kept: no event ids, nothing to resume
		return nil
	}
	sid := crand.Text()
	sw := &storedStream{m: m, w: w, rc: http.NewResponseController(w), sid: sid, reqID: id, header: http.Header{},
		info: ledger.StreamInfo{ID: sid, Tenant: p.Tenant, Principal: p.Name, Created: now}}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache, no-transform")
	w.WriteHeader(http.StatusOK)
	sw.send(fmt.Sprintf("id: %s_0\nretry: %d\ndata: \n\n", sid, MCPStreamRetry.Milliseconds()))
	// The call runs to its end when the client goes away: its answer is
	// stored for the client that resumes, once the call is admitted.
	ctx := context.WithValue(context.WithoutCancel(r.Context()), admittedKey{}, sw.admit)
	next.ServeHTTP(sw, r.WithContext(ctx))
	sw.finish()
	return nil
}

// full names the bound of the stored streams that p's next stream would
// pass ("" when none), or "ledger" when the ledger did not say.
func (m *mcpResume) full(ctx context.Context, p *Principal, now time.Time) string {
	u, err := m.store.StreamUsage(ctx, p.Tenant, p.Name, now.Add(-MCPStreamRetention))
	if err != nil {
		m.s.log().Warn("mcp: the stream is not resumable: the ledger did not say how many streams it keeps", "error", err.Error())
		return "ledger"
	}
	name, held := m.limits.Exceeded(u)
	if name != "" {
		m.s.log().Warn("mcp: the stream is not resumable: the stored streams reached a bound", "limit", "limits."+name, "held", held,
			"principal", p.Name, "tenant", p.Tenant)
	}
	return name
}

// prune deletes expired streams, at most once a minute per gateway (the
// gateway's ledger.StreamCleaner deletes them on its own tick as well).
func (m *mcpResume) prune(now time.Time) {
	last := m.lastPrune.Load()
	if now.UnixNano()-last < int64(time.Minute) || !m.lastPrune.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := m.store.PruneStreams(ctx, now.Add(1-MCPStreamRetention)); err != nil {
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
// through: each server-sent event it writes is sent to the client with its
// id, for as long as the client listens, and stored first once the call is
// admitted.
type storedStream struct {
	m      *mcpResume
	w      http.ResponseWriter
	rc     *http.ResponseController
	sid    string
	info   ledger.StreamInfo
	reqID  json.RawMessage
	header http.Header // the SDK's headers: ours are sent already

	mu       sync.Mutex
	status   int
	buf      []byte // an event not yet complete, or a refusal's text
	idx      int
	gone     bool
	admitted bool                 // the call was admitted: the stream is kept
	opened   bool                 // the ledger holds the stream
	pending  []ledger.StreamEvent // events sent before the call was admitted
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
			sw.event(data)
		}
	}
	return len(p), nil
}

// Flush sends what is written; the events are flushed as they are sent.
func (sw *storedStream) Flush() {}

// admit keeps the stream from now on: it is opened in the ledger with the
// events sent so far. Called by the call service (toolcall.Input.Admitted).
func (sw *storedStream) admit() {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if sw.admitted {
		return
	}
	sw.admitted = true
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := sw.m.store.OpenStream(ctx, sw.info); err != nil {
		sw.m.s.log().Warn("mcp: the stream is not resumable: the ledger did not store it", "error", err.Error())
		return
	}
	sw.opened = true
	for _, e := range sw.pending {
		sw.append(e.Index, e.Data)
	}
	sw.pending = nil
}

// event stores one event's data when the stream is kept (or keeps it in
// memory until the call is admitted) and sends it to the client. Called
// with mu held.
func (sw *storedStream) event(data []byte) {
	sw.idx++
	switch {
	case sw.opened:
		sw.append(sw.idx, data)
	case !sw.admitted && len(sw.pending) < mcpPendingEvents:
		sw.pending = append(sw.pending, ledger.StreamEvent{Index: sw.idx, Data: bytes.Clone(data)})
	}
	sw.sendLocked(formatEvent(sw.sid, sw.idx, data))
}

// append stores one event. Called with mu held.
func (sw *storedStream) append(idx int, data []byte) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := sw.m.store.AppendStreamEvent(ctx, sw.sid, idx, data); err != nil {
		sw.m.s.log().Warn("mcp: an event of the stream was not stored; a resumed stream will miss it", "error", err.Error())
	}
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
// was told 200 already) and marks a kept stream done.
func (sw *storedStream) finish() {
	sw.mu.Lock()
	if sw.status != 0 && (sw.status != http.StatusOK || !strings.HasPrefix(sw.header.Get("Content-Type"), "text/event-stream")) {
		msg := strings.TrimSpace(string(sw.buf))
		if msg == "" {
			msg = http.StatusText(sw.status)
		}
		data, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": sw.reqID,
			"error": map[string]any{"code": -32600, "message": msg}})
		sw.event(data)
	}
	opened := sw.opened
	sw.mu.Unlock()
	if !opened {
		return
	}
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
	case m.now().Sub(info.Created) >= MCPStreamRetention:
		return notFound // expired: what it holds is not given out, whether or not a sweep deleted it yet
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
