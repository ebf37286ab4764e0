// Package sandbox is a reference refund API for demos, tests and benchmarks:
// orders with a refund total, POST /refunds that by default does NOT
// deduplicate by Idempotency-Key (so a gateway bug shows as a double refund),
// a lookup by idempotency key, an effect counter, and fault injection per
// request (delay, hold, drop the connection or answer a status, before or
// after the effect). It is a real net/http handler; docs/sandbox.md is its
// manual.
package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Defaults used when a Config field is zero.
const (
	DefaultAutoCreateTotalMinor = 1_000_000
	DefaultMaxBodyBytes         = 64 << 10
	DefaultRefundStatus         = "succeeded"
)

// Config configures a Server. The zero value works: no orders, no
// auto-created orders, no deduplication.
type Config struct {
	// Orders are created at New and again at every reset.
	Orders []Order
	// AutoCreateOrders creates an unknown order on its first refund, with
	// AutoCreateTotalMinor in the refund's currency. Default false: an unknown
	// order is 404 ORDER_NOT_FOUND.
	AutoCreateOrders bool
	// AutoCreateTotalMinor is an auto-created order's total; default 1_000_000.
	AutoCreateTotalMinor int64
	// Dedupe makes POST /refunds replay the first refund for a repeated
	// Idempotency-Key (201, same body, Idempotent-Replayed: true) instead of
	// applying a second effect. Default false.
	Dedupe bool
	// RefundStatus is the status of a new refund; default "succeeded".
	// "pending_review" plays a payment provider that holds refunds for a
	// person (and, against a log recorded with the default, a downstream
	// whose answers changed: toolgate replay reports the difference).
	RefundStatus string
	// MaxBodyBytes caps request bodies (larger: 413); default 64 KiB.
	MaxBodyBytes int64
	// Now is the clock for effect times; default time.Now.
	Now func() time.Time
	// Logf, if set, gets one line per request (method, path, key, fault, status).
	Logf func(format string, args ...any)
}

// Order is an order as created by POST /orders or Config.Orders.
type Order struct {
	OrderID    string `json:"order_id"`
	TotalMinor int64  `json:"total_minor"`
	Currency   string `json:"currency"`
}

// OrderState is GET /orders/{id}: an order and what has been refunded on it.
type OrderState struct {
	OrderID       string   `json:"order_id"`
	Currency      string   `json:"currency"`
	TotalMinor    int64    `json:"total_minor"`
	RefundedMinor int64    `json:"refunded_minor"`
	Refunds       []string `json:"refunds"`
}

// Refund is the body of a created refund (201) and of its lookup.
type Refund struct {
	RefundID    string `json:"refund_id"`
	OrderID     string `json:"order_id"`
	AmountMinor int64  `json:"amount_minor"`
	Currency    string `json:"currency"`
	Status      string `json:"status"`
	// Reason and IdempotencyKey are kept with the refund but not sent: the
	// answer carries exactly the fields of the example contract's result
	// schema (payments.issue_refund), which is closed.
	Reason         string `json:"-"`
	IdempotencyKey string `json:"-"`
}

// Effect is one applied refund: the thing a gateway must cause exactly once.
type Effect struct {
	RefundID       string    `json:"refund_id"`
	IdempotencyKey string    `json:"idempotency_key"`
	OrderID        string    `json:"order_id"`
	AmountMinor    int64     `json:"amount_minor"`
	At             time.Time `json:"at"`
	// Traceparent is the request's W3C traceparent header, if it had one.
	Traceparent string `json:"traceparent,omitempty"`
}

// Server is the sandbox. It is an http.Handler, safe for concurrent use.
// Call Close before closing an http.Server that serves it, so held and
// delayed requests end.
type Server struct {
	cfg Config
	mux *http.ServeMux

	mu       sync.Mutex
	orders   map[string]*OrderState
	refunds  map[string][]byte   // refund id -> the 201 body
	byKey    map[string][]string // idempotency key -> refund ids, in order
	orderKey map[string][]byte   // idempotency key -> the 201 body of the first order created under it
	effects  []Effect
	keyless  int // refunds applied without an idempotency key
	faults   []*queuedFault
	requests map[string]int     // path -> requests seen (excluding /_sandbox/)
	held     map[*hold]struct{} // requests waiting for a release
	abort    chan struct{}      // closed by Reset and Close: held and delayed requests end without effect
	closed   bool
}

// New returns a sandbox configured by cfg.
func New(cfg Config) *Server {
	if cfg.AutoCreateTotalMinor <= 0 {
		cfg.AutoCreateTotalMinor = DefaultAutoCreateTotalMinor
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.RefundStatus == "" {
		cfg.RefundStatus = DefaultRefundStatus
	}
	s := &Server{cfg: cfg, mux: http.NewServeMux(), held: map[*hold]struct{}{}, abort: make(chan struct{})}
	s.resetLocked()
	s.routes()
	return s
}

func (s *Server) routes() {
	s.mux.HandleFunc("POST /orders", s.handleCreateOrder)
	s.mux.HandleFunc("GET /orders/{id}", s.handleGetOrder)
	s.mux.HandleFunc("GET /orders/by-key/{key...}", s.handleOrderByKey)
	s.mux.HandleFunc("POST /refunds", s.handleCreateRefund)
	s.mux.HandleFunc("POST /form/refunds", s.handleCreateFormRefund)
	s.mux.HandleFunc("GET /refunds/by-key/{key...}", s.handleRefundByKey)
	s.mux.HandleFunc("GET /refunds/{id}", s.handleGetRefund)
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	s.mux.HandleFunc("GET /_sandbox/effects", s.handleEffects)
	s.mux.HandleFunc("POST /_sandbox/reset", s.handleReset)
	s.mux.HandleFunc("POST /_sandbox/faults", s.handleAddFault)
	s.mux.HandleFunc("GET /_sandbox/faults", s.handleListFaults)
	s.mux.HandleFunc("POST /_sandbox/release", s.handleRelease)
	s.mux.HandleFunc("GET /_sandbox/held", s.handleHeld)
	s.mux.HandleFunc("GET /_sandbox/stats", s.handleStats)
}

// resetLocked empties every table and re-seeds Config.Orders.
func (s *Server) resetLocked() {
	s.orders = map[string]*OrderState{}
	s.refunds = map[string][]byte{}
	s.byKey = map[string][]string{}
	s.orderKey = map[string][]byte{}
	s.effects = nil
	s.keyless = 0
	s.faults = nil
	s.requests = map[string]int{}
	for _, o := range s.cfg.Orders {
		s.addOrderLocked(o)
	}
}

func (s *Server) addOrderLocked(o Order) *OrderState {
	st := &OrderState{OrderID: o.OrderID, Currency: o.Currency, TotalMinor: o.TotalMinor, Refunds: []string{}}
	s.orders[o.OrderID] = st
	return st
}

// problem is the sandbox's error body.
type problem struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeRaw(w, status, append(b, '\n'))
}

func writeRaw(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body)
}

func writeProblem(w http.ResponseWriter, status int, code, format string, args ...any) {
	writeJSON(w, status, problem{Code: code, Message: fmt.Sprintf(format, args...)})
}

// decode reads a JSON object body, capped at MaxBodyBytes, into v; unknown
// fields are ignored. It answers the error itself and reports false.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		if _, ok := err.(*http.MaxBytesError); ok {
			writeProblem(w, http.StatusRequestEntityTooLarge, "REQUEST_TOO_LARGE", "body over %d bytes", s.cfg.MaxBodyBytes)
			return false
		}
		writeProblem(w, http.StatusBadRequest, "MALFORMED_REQUEST", "body is not the expected JSON object: %v", err)
		return false
	}
	return true
}

func validCurrency(c string) bool {
	if len(c) != 3 {
		return false
	}
	return strings.IndexFunc(c, func(r rune) bool { return r < 'A' || r > 'Z' }) < 0
}

func (s *Server) handleCreateOrder(w http.ResponseWriter, r *http.Request) {
	var o Order
	if !s.decode(w, r, &o) {
		return
	}
	if o.OrderID == "" || o.TotalMinor < 0 || !validCurrency(o.Currency) {
		writeProblem(w, http.StatusBadRequest, "MALFORMED_REQUEST", "need order_id, total_minor >= 0 and a 3-letter upper-case currency")
		return
	}
	s.mu.Lock()
	st := s.addOrderLocked(o)
	body, err := json.Marshal(cloneState(st))
	if err == nil {
		body = append(body, '\n')
		if key := r.Header.Get("Idempotency-Key"); key != "" && s.orderKey[key] == nil {
			s.orderKey[key] = body
		}
	}
	s.mu.Unlock()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeRaw(w, http.StatusCreated, body)
}

// handleOrderByKey answers GET /orders/by-key/{key}: the same bytes as the
// 201 of the first order created under that Idempotency-Key (a lookup for
// toolgate's reconciler), or 404 ORDER_NOT_FOUND.
func (s *Server) handleOrderByKey(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("key")
	s.mu.Lock()
	body := s.orderKey[key]
	s.mu.Unlock()
	if body == nil {
		writeProblem(w, http.StatusNotFound, "ORDER_NOT_FOUND", "no order with idempotency key %q", key)
		return
	}
	writeRaw(w, http.StatusOK, body)
}

func (s *Server) handleGetOrder(w http.ResponseWriter, r *http.Request) {
	st, ok := s.Order(r.PathValue("id"))
	if !ok {
		writeProblem(w, http.StatusNotFound, "ORDER_NOT_FOUND", "no order %q", r.PathValue("id"))
		return
	}
	writeJSON(w, http.StatusOK, st)
}

type refundRequest struct {
	OrderID     string `json:"order_id"`
	AmountMinor *int64 `json:"amount_minor"`
	Currency    string `json:"currency"`
	Reason      string `json:"reason"`
}

func (s *Server) handleCreateRefund(w http.ResponseWriter, r *http.Request) {
	var in refundRequest
	if !s.decode(w, r, &in) {
		return
	}
	s.refund(w, r, in)
}

// handleCreateFormRefund is POST /refunds for a form-encoded body (as
// Stripe's API takes it): order_id, amount_minor (an integer, read exactly),
// currency and reason; other fields are ignored, as the JSON route ignores
// unknown members, and a field given twice is refused. It checks the
// Idempotency-Key like the JSON route.
func (s *Server) handleCreateFormRefund(w http.ResponseWriter, r *http.Request) {
	if ct, _, _ := strings.Cut(r.Header.Get("Content-Type"), ";"); strings.TrimSpace(ct) != "application/x-www-form-urlencoded" {
		writeProblem(w, http.StatusUnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE", "send application/x-www-form-urlencoded")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
	if err := r.ParseForm(); err != nil {
		if _, ok := err.(*http.MaxBytesError); ok {
			writeProblem(w, http.StatusRequestEntityTooLarge, "REQUEST_TOO_LARGE", "body over %d bytes", s.cfg.MaxBodyBytes)
			return
		}
		writeProblem(w, http.StatusBadRequest, "MALFORMED_REQUEST", "body is not a form: %v", err)
		return
	}
	f := r.PostForm
	for k, vs := range f {
		if len(vs) != 1 {
			writeProblem(w, http.StatusBadRequest, "MALFORMED_REQUEST", "the form field %q is given %d times", k, len(vs))
			return
		}
	}
	in := refundRequest{OrderID: f.Get("order_id"), Currency: f.Get("currency"), Reason: f.Get("reason")}
	if a, err := strconv.ParseInt(f.Get("amount_minor"), 10, 64); err == nil {
		in.AmountMinor = &a
	}
	s.refund(w, r, in)
}

func (s *Server) refund(w http.ResponseWriter, r *http.Request, in refundRequest) {
	if in.OrderID == "" || in.AmountMinor == nil || *in.AmountMinor <= 0 || !validCurrency(in.Currency) {
		writeProblem(w, http.StatusBadRequest, "MALFORMED_REQUEST", "need order_id, amount_minor >= 1 and a 3-letter upper-case currency")
		return
	}
	key := r.Header.Get("Idempotency-Key")
	s.mu.Lock()
	defer s.mu.Unlock()
	if ids := s.byKey[key]; s.cfg.Dedupe && key != "" && len(ids) > 0 {
		w.Header().Set("Idempotent-Replayed", "true")
		writeRaw(w, http.StatusCreated, s.refunds[ids[0]])
		return
	}
	st, ok := s.orders[in.OrderID]
	if !ok && s.cfg.AutoCreateOrders {
		st, ok = s.addOrderLocked(Order{OrderID: in.OrderID, TotalMinor: s.cfg.AutoCreateTotalMinor, Currency: in.Currency}), true
	}
	if !ok {
		writeProblem(w, http.StatusNotFound, "ORDER_NOT_FOUND", "no order %q", in.OrderID)
		return
	}
	if in.Currency != st.Currency {
		writeProblem(w, http.StatusUnprocessableEntity, "CURRENCY_MISMATCH", "order %s is in %s, not %s", st.OrderID, st.Currency, in.Currency)
		return
	}
	amount := *in.AmountMinor
	if remaining := st.TotalMinor - st.RefundedMinor; amount > remaining {
		writeProblem(w, http.StatusUnprocessableEntity, "AMOUNT_EXCEEDS_BALANCE", "amount_minor %d exceeds the remaining %d", amount, remaining)
		return
	}
	nth := len(s.byKey[key]) + 1
	if key == "" {
		s.keyless++
		nth = s.keyless
	}
	ref := Refund{
		RefundID: RefundID(key, nth), OrderID: st.OrderID, AmountMinor: amount,
		Currency: st.Currency, Reason: in.Reason, Status: s.cfg.RefundStatus, IdempotencyKey: key,
	}
	body, _ := json.Marshal(ref) // a struct of strings and ints always marshals
	body = append(body, '\n')
	st.RefundedMinor += amount
	st.Refunds = append(st.Refunds, ref.RefundID)
	s.refunds[ref.RefundID] = body
	if key != "" {
		s.byKey[key] = append(s.byKey[key], ref.RefundID)
	}
	s.effects = append(s.effects, Effect{RefundID: ref.RefundID, IdempotencyKey: key, OrderID: st.OrderID, AmountMinor: amount, At: s.cfg.Now().UTC(), Traceparent: r.Header.Get("traceparent")})
	w.Header().Set("Location", "/refunds/"+ref.RefundID)
	writeRaw(w, http.StatusCreated, body)
}

// RefundID is the id of the nth refund (from 1) applied under an
// idempotency key: "re_" and 16 hex digits of SHA-256 of the key (and, past
// the first, of n). Derived from the key, not from a counter, so a fresh
// sandbox that gets the same keys in the same order gives the same ids: a
// replay of recorded calls (toolgate replay) gets the recorded bodies back.
func RefundID(key string, nth int) string {
	h := sha256.New()
	h.Write([]byte(key))
	if nth > 1 {
		fmt.Fprintf(h, "\x00%d", nth)
	}
	return "re_" + hex.EncodeToString(h.Sum(nil)[:8])
}

func (s *Server) handleRefundByKey(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("key")
	s.mu.Lock()
	ids := s.byKey[key]
	var body []byte
	if len(ids) > 0 {
		body = s.refunds[ids[0]]
	}
	s.mu.Unlock()
	if body == nil {
		writeProblem(w, http.StatusNotFound, "REFUND_NOT_FOUND", "no refund with idempotency key %q", key)
		return
	}
	writeRaw(w, http.StatusOK, body)
}

func (s *Server) handleGetRefund(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	body := s.refunds[r.PathValue("id")]
	s.mu.Unlock()
	if body == nil {
		writeProblem(w, http.StatusNotFound, "REFUND_NOT_FOUND", "no refund %q", r.PathValue("id"))
		return
	}
	writeRaw(w, http.StatusOK, body)
}

func cloneState(st *OrderState) OrderState {
	c := *st
	c.Refunds = slices.Clone(st.Refunds)
	return c
}

// AddOrder creates or replaces an order (its refunds are forgotten; the
// effects stay counted).
func (s *Server) AddOrder(o Order) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addOrderLocked(o)
}

// Order returns an order's state.
func (s *Server) Order(id string) (OrderState, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.orders[id]
	if !ok {
		return OrderState{}, false
	}
	return cloneState(st), true
}

// EffectCount is the number of refunds applied since New or the last reset.
func (s *Server) EffectCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.effects)
}

// Effects returns the applied refunds in order; key != "" keeps only those
// with that idempotency key.
func (s *Server) Effects(key ...string) []Effect {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Effect, 0, len(s.effects))
	for _, e := range s.effects {
		if len(key) == 0 || key[0] == "" || e.IdempotencyKey == key[0] {
			out = append(out, e)
		}
	}
	return out
}

// Requests is how many requests for path (excluding /_sandbox/ ones) arrived,
// whatever became of them.
func (s *Server) Requests(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[path]
}

// Reset forgets orders (re-seeding Config.Orders), refunds, effects, queued
// faults and request counts, and ends held or delayed requests without effect.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resetLocked()
	if !s.closed {
		close(s.abort)
		s.abort = make(chan struct{})
	}
}

// Close ends every held or delayed request (without effect; its connection is
// dropped), now and later. The state stays readable.
func (s *Server) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		close(s.abort)
	}
}
