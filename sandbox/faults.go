package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// FaultHeader carries a per-request fault, e.g. "delay=2s,drop_after",
// "status_before=503" or "hold,status_after=500".
const FaultHeader = "X-Sandbox-Fault"

// Fault kinds. A fault combines at most one of hold and delay's waits (both
// allowed) with at most one of the four actions.
const (
	FaultDelay        = "delay"         // sleep DelayMS before handling
	FaultHold         = "hold"          // wait for Release before handling
	FaultDropBefore   = "drop_before"   // close the connection without answering, no effect
	FaultDropAfter    = "drop_after"    // apply the effect, then close without answering
	FaultStatusBefore = "status_before" // answer Status, no effect
	FaultStatusAfter  = "status_after"  // apply the effect, then answer Status
)

// Fault is a queued fault (POST /_sandbox/faults): it applies to the next
// Count requests that match Path, Method and Key.
type Fault struct {
	// Path matches the request path exactly, or as a prefix when it ends in
	// "*"; "" matches every path. /_sandbox/ paths never take faults.
	Path string `json:"path,omitempty"`
	// Method matches the request method; "" matches any.
	Method string `json:"method,omitempty"`
	// Key matches the request's Idempotency-Key header; "" matches any.
	Key string `json:"key,omitempty"`
	// Fault is one kind or a comma-separated combination: "delay,drop_after".
	Fault string `json:"fault"`
	// DelayMS is the delay for "delay" (a DelayMS without "delay" implies it).
	DelayMS int `json:"delay_ms,omitempty"`
	// Status is the answer for status_before/status_after; default 503.
	Status int `json:"status,omitempty"`
	// Count is how many matching requests take the fault; default 1.
	Count int `json:"count,omitempty"`
}

// plan is what happens to one request.
type plan struct {
	hold   bool
	delay  time.Duration
	action string // "" or one of the drop/status kinds
	status int
}

func (p plan) String() string {
	var parts []string
	if p.hold {
		parts = append(parts, FaultHold)
	}
	if p.delay > 0 {
		parts = append(parts, FaultDelay+"="+p.delay.String())
	}
	switch p.action {
	case FaultStatusBefore, FaultStatusAfter:
		parts = append(parts, p.action+"="+strconv.Itoa(p.status))
	case "":
	default:
		parts = append(parts, p.action)
	}
	return strings.Join(parts, ",")
}

func (p *plan) setAction(a string) error {
	if p.action != "" {
		return fmt.Errorf("both %s and %s", p.action, a)
	}
	p.action = a
	return nil
}

// parsePlan reads a comma list of kinds, each optionally "=value": delay=2s
// (or milliseconds: delay=2000), status_before=503, status_after=500.
func parsePlan(spec string, delay time.Duration, status int) (plan, error) {
	p := plan{delay: delay, status: status}
	for _, item := range strings.Split(spec, ",") {
		name, val, hasVal := strings.Cut(strings.TrimSpace(item), "=")
		switch name {
		case "":
			continue
		case FaultHold:
			p.hold = true
		case FaultDelay:
			if hasVal {
				d, err := parseDelay(val)
				if err != nil {
					return plan{}, err
				}
				p.delay = d
			}
			if p.delay <= 0 {
				return plan{}, errors.New("delay needs a positive duration")
			}
		case FaultDropBefore, FaultDropAfter:
			if err := p.setAction(name); err != nil {
				return plan{}, err
			}
		case FaultStatusBefore, FaultStatusAfter:
			if err := p.setAction(name); err != nil {
				return plan{}, err
			}
			if hasVal {
				n, err := strconv.Atoi(val)
				if err != nil {
					return plan{}, fmt.Errorf("bad status %q", val)
				}
				p.status = n
			}
		default:
			return plan{}, fmt.Errorf("unknown fault %q", name)
		}
	}
	if p.status == 0 {
		p.status = http.StatusServiceUnavailable
	}
	if p.status < 100 || p.status > 599 {
		return plan{}, fmt.Errorf("status %d out of range", p.status)
	}
	if p == (plan{status: p.status}) {
		return plan{}, errors.New("no fault given")
	}
	return p, nil
}

func parseDelay(v string) (time.Duration, error) {
	if ms, err := strconv.Atoi(v); err == nil {
		return time.Duration(ms) * time.Millisecond, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("bad delay %q", v)
	}
	return d, nil
}

type queuedFault struct {
	Fault
	plan plan
	left int
}

func (f *queuedFault) matches(r *http.Request) bool {
	switch {
	case f.Method != "" && !strings.EqualFold(f.Method, r.Method):
		return false
	case f.Key != "" && f.Key != r.Header.Get("Idempotency-Key"):
		return false
	case f.Path == "":
		return true
	case strings.HasSuffix(f.Path, "*"):
		return strings.HasPrefix(r.URL.Path, strings.TrimSuffix(f.Path, "*"))
	}
	return f.Path == r.URL.Path
}

// InjectFault queues f for the next f.Count matching requests.
func (s *Server) InjectFault(f Fault) error {
	p, err := parsePlan(f.Fault, time.Duration(f.DelayMS)*time.Millisecond, f.Status)
	if err != nil {
		return fmt.Errorf("sandbox: fault %q: %w", f.Fault, err)
	}
	if f.Count <= 0 {
		f.Count = 1
	}
	f.Status = p.status
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &queuedFault{Fault: f, plan: p, left: f.Count})
	return nil
}

// takePlan counts the request and returns its fault: the header's if present,
// else the first matching queued fault (whose count it uses up).
func (s *Server) takePlan(r *http.Request) (plan, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests[r.URL.Path]++
	if h := r.Header.Get(FaultHeader); h != "" {
		return parsePlan(h, 0, 0)
	}
	for i, f := range s.faults {
		if f.matches(r) {
			f.left--
			if f.left <= 0 {
				s.faults = append(s.faults[:i:i], s.faults[i+1:]...)
			}
			return f.plan, nil
		}
	}
	return plan{}, nil
}

// hold is one request waiting for a release.
type hold struct {
	key     string
	release chan struct{}
}

// Held is the number of requests currently held.
func (s *Server) Held() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.held)
}

// WaitHeld waits until at least n requests are held, or ctx ends.
func (s *Server) WaitHeld(ctx context.Context, n int) error {
	for s.Held() < n {
		select {
		case <-ctx.Done():
			return fmt.Errorf("sandbox: waiting for %d held requests (have %d): %w", n, s.Held(), ctx.Err())
		case <-time.After(2 * time.Millisecond):
		}
	}
	return nil
}

// WaitEffects waits until at least n effects have been applied, or ctx ends.
func (s *Server) WaitEffects(ctx context.Context, n int) error {
	for s.EffectCount() < n {
		select {
		case <-ctx.Done():
			return fmt.Errorf("sandbox: waiting for %d effects (have %d): %w", n, s.EffectCount(), ctx.Err())
		case <-time.After(2 * time.Millisecond):
		}
	}
	return nil
}

// Release lets held requests proceed and reports how many it released: all
// of them, or with a non-empty key only those whose Idempotency-Key is key.
func (s *Server) Release(key ...string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for h := range s.held {
		if len(key) > 0 && key[0] != "" && h.key != key[0] {
			continue
		}
		close(h.release)
		delete(s.held, h)
		n++
	}
	return n
}

// wait blocks for a release (h != nil) or for d; it reports false when the
// sandbox was reset or closed meanwhile. The client going away does not end
// the wait: a downstream that already has a request finishes it.
func (s *Server) wait(r *http.Request, doHold bool, d time.Duration) bool {
	s.mu.Lock()
	abort := s.abort
	var h *hold
	if doHold {
		h = &hold{key: r.Header.Get("Idempotency-Key"), release: make(chan struct{})}
		s.held[h] = struct{}{}
	}
	s.mu.Unlock()
	if h != nil {
		select {
		case <-h.release:
		case <-abort:
			s.mu.Lock()
			delete(s.held, h)
			s.mu.Unlock()
			return false
		}
	}
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-abort:
			return false
		}
	}
	return true
}

// ServeHTTP runs the request through its fault (if any) and the API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/_sandbox/") {
		s.mux.ServeHTTP(w, r)
		return
	}
	p, err := s.takePlan(r)
	if err != nil {
		writeProblem(w, http.StatusBadRequest, "BAD_FAULT", "%s: %v", FaultHeader, err)
		s.logf(r, p, http.StatusBadRequest)
		return
	}
	if p.hold || p.delay > 0 || p.action != "" {
		// The whole request has arrived before any fault acts on it.
		body, err := io.ReadAll(io.LimitReader(r.Body, s.cfg.MaxBodyBytes+1))
		if err != nil {
			s.logf(r, p, 0)
			drop(w)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	if (p.hold || p.delay > 0) && !s.wait(r, p.hold, p.delay) {
		s.logf(r, p, 0)
		drop(w)
		return
	}
	switch p.action {
	case FaultDropBefore:
		s.logf(r, p, 0)
		drop(w)
		return
	case FaultStatusBefore:
		writeFault(w, p)
		s.logf(r, p, p.status)
		return
	}
	rec := &recorder{header: http.Header{}, status: http.StatusOK}
	s.mux.ServeHTTP(rec, r)
	switch p.action {
	case FaultDropAfter:
		s.logf(r, p, 0)
		drop(w)
	case FaultStatusAfter:
		writeFault(w, p)
		s.logf(r, p, p.status)
	default:
		for k, v := range rec.header {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.status)
		w.Write(rec.body.Bytes())
		s.logf(r, p, rec.status)
	}
}

func (s *Server) logf(r *http.Request, p plan, status int) {
	if s.cfg.Logf == nil {
		return
	}
	st := "dropped"
	if status != 0 {
		st = strconv.Itoa(status)
	}
	fault := p.String()
	if fault == "" {
		fault = "-"
	}
	s.cfg.Logf("%s %s key=%q fault=%s -> %s", r.Method, r.URL.Path, r.Header.Get("Idempotency-Key"), fault, st)
}

func writeFault(w http.ResponseWriter, p plan) {
	writeProblem(w, p.status, "SANDBOX_FAULT", "injected %s", p)
}

// drop closes the connection without an answer.
func drop(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if c, _, err := hj.Hijack(); err == nil {
			c.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

// recorder buffers a handler's answer so an "after" fault can replace it.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
	wrote  bool
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) WriteHeader(code int) {
	if !r.wrote {
		r.status, r.wrote = code, true
	}
}
func (r *recorder) Write(b []byte) (int, error) {
	r.wrote = true
	return r.body.Write(b)
}
