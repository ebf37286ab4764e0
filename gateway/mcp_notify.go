package gateway

import (
	crand "crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/toolgate/toolgate/internal/defaults"
	"github.com/toolgate/toolgate/toolcall"
)

// The notification stream of /mcp (streamable HTTP, "listening for messages
// from the server"): a GET /mcp that accepts text/event-stream and names no
// stream to resume opens a stream for the calling key. It carries
// notifications/tools/list_changed when the definitions the key's tools/list
// describes change — a rollout transition on this replica or on another one
// (read on the reconciler's tick), a version that retired, a reload of the
// tools directory — and nothing else but keep-alive comments. A key whose
// definitions did not change is sent nothing.
//
// Every event carries an id, tools-HASH-NONCE: HASH sums up the definitions
// the key was listed when the event was sent. A client that reconnects with
// it as Last-Event-ID (to this replica or any other) is sent list_changed at
// once when the definitions differ from HASH, so a change made while it was
// away is not missed; the NONCE makes every stream's id new, which is how a
// client tells a reconnection that made progress from one that did not.
//
// From protocol version mcpNoResumeFrom on, a GET is the SDK's (405): those
// clients listen with subscriptions/listen, which the SDK serves from the
// key's MCP server (mcp.go keeps it up to date).
const (
	// MCPKeepAlive is how often an idle notification stream is sent a
	// comment, so proxies and load balancers keep it open.
	MCPKeepAlive = 25 * time.Second
	// MCPNotifyMinInterval is the least time between two list_changed on
	// one stream: changes within it are sent as one when it has passed.
	MCPNotifyMinInterval = time.Second
	// DefaultMaxMCPStreamsPerKey and DefaultMaxMCPStreams cap the
	// notification streams open at once for one API key and on one gateway.
	DefaultMaxMCPStreamsPerKey = defaults.MCPStreamsPerKey
	DefaultMaxMCPStreams       = defaults.MCPStreams
	// mcpStreamWriteTimeout bounds one write to a stream: a client that
	// stops reading loses its stream.
	mcpStreamWriteTimeout = 10 * time.Second
	// mcpNotifyIDPrefix starts the id of a notification stream's events.
	mcpNotifyIDPrefix = "tools-"
)

// listChangedEvent is the JSON-RPC notification a stream sends.
const listChangedEvent = `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`

// mcpNotify holds the open notification streams.
type mcpNotify struct {
	s             *Server
	perKey, total int // caps; <= 0: none

	mu      sync.Mutex
	streams map[*Principal]map[*notifyStream]bool
	n       int
	sig     map[*Principal]string // what each key with streams was last listed
	closed  bool
	done    chan struct{} // closed on shutdown
}

// notifyStream is one open stream; kick holds one pending list_changed.
type notifyStream struct {
	kick chan struct{}
}

func newMCPNotify(s *Server) *mcpNotify {
	perKey, total := s.cfg.MaxMCPStreamsPerKey, s.cfg.MaxMCPStreams
	if perKey == 0 {
		perKey = DefaultMaxMCPStreamsPerKey
	}
	if total == 0 {
		total = DefaultMaxMCPStreams
	}
	return &mcpNotify{s: s, perKey: perKey, total: total,
		streams: map[*Principal]map[*notifyStream]bool{}, sig: map[*Principal]string{}, done: make(chan struct{})}
}

// wants reports whether r opens a notification stream: a GET that accepts
// server-sent events, names no stored stream to resume (none, or an id of a
// notification stream) and speaks a protocol version that has the GET
// stream.
func (n *mcpNotify) wants(r *http.Request) bool {
	if r.Method != http.MethodGet || r.Header.Get("Mcp-Protocol-Version") >= mcpNoResumeFrom ||
		!strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		return false
	}
	eid := r.Header.Get("Last-Event-ID")
	_, ok := parseNotifyEventID(eid)
	return eid == "" || ok
}

// open takes a stream slot for p, or returns the 429 problem.
func (n *mcpNotify) open(p *Principal) (*notifyStream, *toolcall.Problem) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.total > 0 && n.n >= n.total {
		n.s.inFlight.refused.WithLabelValues("mcp_streams").Inc()
		return nil, tooMany("this gateway has %d MCP notification streams open, as many as it may (limits.mcp_streams)", n.total)
	}
	if n.perKey > 0 && len(n.streams[p]) >= n.perKey {
		n.s.inFlight.refused.WithLabelValues("mcp_streams_per_key").Inc()
		return nil, tooMany("key %q has %d MCP notification streams open, as many as it may (limits.mcp_streams_per_key)", p.Name, n.perKey)
	}
	st := &notifyStream{kick: make(chan struct{}, 1)}
	if n.streams[p] == nil {
		n.streams[p] = map[*notifyStream]bool{}
		n.sig[p] = n.s.mcp.signature(p)
	}
	n.streams[p][st] = true
	n.n++
	return st, nil
}

func (n *mcpNotify) release(p *Principal, st *notifyStream) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.streams[p], st)
	n.n--
	if len(n.streams[p]) == 0 {
		delete(n.streams, p)
		delete(n.sig, p)
	}
}

// current is what p is listed now, as its streams last learned it.
func (n *mcpNotify) current(p *Principal) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.sig[p]
}

// changed is called after the keys' MCP servers were brought up to date
// (servingChanged): every key with streams whose definitions differ from
// what its streams last learned is sent list_changed.
func (n *mcpNotify) changed() {
	n.mu.Lock()
	keys := make([]*Principal, 0, len(n.streams))
	for p := range n.streams {
		keys = append(keys, p)
	}
	n.mu.Unlock()
	for _, p := range keys {
		sig := n.s.mcp.signature(p)
		n.mu.Lock()
		if old, ok := n.sig[p]; ok && old != sig {
			n.sig[p] = sig
			for st := range n.streams[p] {
				select {
				case st.kick <- struct{}{}:
				default: // one is pending already
				}
			}
		}
		n.mu.Unlock()
	}
}

// shutdown ends every stream and every stream opened from now on (the HTTP
// server's RegisterOnShutdown): Shutdown then finds the connections idle.
func (n *mcpNotify) shutdown() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.closed {
		n.closed = true
		close(n.done)
	}
}

// serve holds a notification stream for p open until the client goes, the
// server shuts down or a write fails.
func (n *mcpNotify) serve(w http.ResponseWriter, r *http.Request, p *Principal) error {
	st, refused := n.open(p)
	if refused != nil {
		return refused
	}
	defer n.release(p, st)
	rc := http.NewResponseController(w)
	// The stream outlives the server's read and write timeouts: each write
	// gets its own deadline instead, and the read deadline would end the
	// request when it passed.
	rc.SetReadDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	send := func(s string) bool {
		rc.SetWriteDeadline(time.Now().Add(mcpStreamWriteTimeout))
		if _, err := io.WriteString(w, s); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	sig := n.current(p)
	if !send(fmt.Sprintf("id: %s\nretry: %d\ndata: \n\n", formatNotifyEventID(sig), MCPStreamRetry.Milliseconds())) {
		return nil
	}
	if was, ok := parseNotifyEventID(r.Header.Get("Last-Event-ID")); ok && was != sig {
		select { // changed while the client was away
		case st.kick <- struct{}{}:
		default: // one is pending already
		}
	}
	keep := time.NewTicker(MCPKeepAlive)
	defer keep.Stop()
	var last time.Time
	for {
		select {
		case <-r.Context().Done():
			return nil
		case <-n.done:
			return nil
		case <-keep.C:
			if !send(": keep-alive\n\n") {
				return nil
			}
		case <-st.kick:
			if wait := MCPNotifyMinInterval - time.Since(last); wait > 0 {
				select {
				case <-r.Context().Done():
					return nil
				case <-n.done:
					return nil
				case <-time.After(wait):
				}
			}
			select {
			case <-st.kick: // changed again meanwhile: one notification
			default:
			}
			last = time.Now()
			if !send(fmt.Sprintf("id: %s\nevent: message\ndata: %s\n\n", formatNotifyEventID(n.current(p)), listChangedEvent)) {
				return nil
			}
		}
	}
}

// signature sums up the definitions p's tools/list describes (mcp.go).
func (api *mcpAPI) signature(p *Principal) string {
	api.mu.Lock()
	defer api.mu.Unlock()
	e := api.entryLocked(p)
	names := make([]string, 0, len(e.defs))
	for name := range e.defs {
		names = append(names, name)
	}
	slices.Sort(names)
	h := sha256.New()
	for _, name := range names {
		fmt.Fprintf(h, "%d:%s%d:%s", len(name), name, len(e.defs[name]), e.defs[name])
	}
	return hex.EncodeToString(h.Sum(nil))[:notifyHashLen]
}

// notifyHashLen is the length of HASH in a notification stream's event id.
const notifyHashLen = 16

// formatNotifyEventID is the id of an event sent while p was listed sig.
func formatNotifyEventID(sig string) string {
	return mcpNotifyIDPrefix + sig + "-" + crand.Text()[:10]
}

// parseNotifyEventID reads tools-HASH-NONCE and returns HASH: 16 lowercase
// hex digits, and a nonce of 1 to 32 base32 letters and digits.
func parseNotifyEventID(eid string) (string, bool) {
	rest, ok := strings.CutPrefix(eid, mcpNotifyIDPrefix)
	if !ok {
		return "", false
	}
	sig, nonce, ok := strings.Cut(rest, "-")
	if !ok || len(sig) != notifyHashLen || len(nonce) == 0 || len(nonce) > 32 {
		return "", false
	}
	for _, c := range []byte(sig) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return "", false
		}
	}
	for _, c := range []byte(nonce) {
		if (c < 'A' || c > 'Z') && (c < '2' || c > '7') {
			return "", false
		}
	}
	return sig, true
}
