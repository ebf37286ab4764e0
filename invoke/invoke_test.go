package invoke_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/invoke"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/sandbox"
	"github.com/toolgate/toolgate/sandbox/sandboxtest"
)

const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// setup starts a real sandbox with one order and returns it, its URL and a
// binding for its refunds.
func setup(t *testing.T) (*sandbox.Server, string, *invoke.Binding) {
	t.Helper()
	sb, url := sandboxtest.Start(t, sandbox.Config{Orders: []sandbox.Order{{OrderID: "ord_1", TotalMinor: 10000, Currency: "EUR"}}})
	return sb, url, &invoke.Binding{
		URL:       url + "/refunds",
		LookupURL: url + "/refunds/by-key/{downstream_key}",
		StateURL:  url + "/orders/{args.order_id}",
		Timeout:   2 * time.Second,
	}
}

func refund(order string, amount int) invoke.Request {
	return invoke.Request{
		Vars: invoke.Vars{Tenant: "acme", ActionID: "act-1", Args: map[string]any{"order_id": order, "amount_minor": float64(amount)}},
		Body: []byte(`{"order_id":"` + order + `","amount_minor":` + strconv.Itoa(amount) + `,"currency":"EUR","reason":"damaged"}`),
	}
}

// refusedURL is a loopback address where nothing listens.
func refusedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr + "/refunds"
}

func TestCallOutcomes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		order       string
		amount      int
		fault       string // X-Sandbox-Fault
		binding     func(b *invoke.Binding, t *testing.T)
		want        ledger.Outcome
		wantStatus  int
		wantWritten bool
		wantEffects int
		wantInBody  string
		wantKey     string // the downstream key the effect was recorded under
		wantErr     bool
	}{
		{name: "answered 201", order: "ord_1", amount: 2500, want: ledger.Answered, wantStatus: 201, wantWritten: true, wantEffects: 1, wantInBody: `"refund_id":"re_5de2816b3cf36597"`, wantKey: "acme:act-1"},
		{name: "answered 404", order: "ord_9", amount: 1, want: ledger.Answered, wantStatus: 404, wantWritten: true, wantInBody: "ORDER_NOT_FOUND"},
		{name: "answered 422", order: "ord_1", amount: 10001, want: ledger.Answered, wantStatus: 422, wantWritten: true, wantInBody: "AMOUNT_EXCEEDS_BALANCE"},
		{name: "drop before the effect is unknown", order: "ord_1", amount: 1, fault: "drop_before", want: ledger.Lost, wantWritten: true, wantErr: true},
		{name: "drop after the effect is unknown", order: "ord_1", amount: 1, fault: "drop_after", want: ledger.Lost, wantWritten: true, wantEffects: 1, wantErr: true},
		{name: "listed 503 is not started", order: "ord_1", amount: 1, fault: "status_before=503",
			binding: func(b *invoke.Binding, _ *testing.T) { b.NotStartedStatuses = []int{503} },
			want:    ledger.NotStarted, wantStatus: 503, wantWritten: true, wantInBody: "SANDBOX_FAULT", wantErr: true},
		{name: "unlisted 503 is unknown", order: "ord_1", amount: 1, fault: "status_before=503", want: ledger.Lost, wantStatus: 503, wantWritten: true, wantErr: true},
		{name: "500 is unknown, body kept", order: "ord_1", amount: 1, fault: "status_after=500",
			binding: func(b *invoke.Binding, _ *testing.T) { b.NotStartedStatuses = []int{503} },
			want:    ledger.Lost, wantStatus: 500, wantWritten: true, wantEffects: 1, wantInBody: "SANDBOX_FAULT", wantErr: true},
		{name: "timeout is unknown", order: "ord_1", amount: 1, fault: "delay=300ms",
			binding: func(b *invoke.Binding, _ *testing.T) { b.Timeout = 50 * time.Millisecond },
			want:    ledger.Lost, wantWritten: true, wantErr: true},
		{name: "refused is not started", order: "ord_1", amount: 1,
			binding: func(b *invoke.Binding, t *testing.T) { b.URL = refusedURL(t) },
			want:    ledger.NotStarted, wantErr: true},
		{name: "bad template is not started", order: "ord_1", amount: 1,
			binding: func(b *invoke.Binding, _ *testing.T) { b.URL += "/{args.missing}" },
			want:    ledger.NotStarted, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sb, _, b := setup(t)
			if tt.binding != nil {
				tt.binding(b, t)
			}
			req := refund(tt.order, tt.amount)
			req.Binding = b
			if tt.fault != "" {
				req.Header = http.Header{sandbox.FaultHeader: {tt.fault}}
			}
			c := &invoke.Client{}
			res := c.Call(context.Background(), req)
			if res.Outcome != tt.want || res.StatusCode != tt.wantStatus || res.Written != tt.wantWritten || (res.Err != nil) != tt.wantErr {
				t.Fatalf("got %v status %d written %v err %v; want %v status %d written %v err %v",
					res.Outcome, res.StatusCode, res.Written, res.Err, tt.want, tt.wantStatus, tt.wantWritten, tt.wantErr)
			}
			if res.Written == res.SentAt.IsZero() {
				t.Errorf("SentAt %v with Written %v", res.SentAt, res.Written)
			}
			if !strings.Contains(string(res.Body), tt.wantInBody) {
				t.Errorf("body %q lacks %q", res.Body, tt.wantInBody)
			}
			if tt.wantKey != "" {
				if e := sb.Effects(); len(e) != 1 || e[0].IdempotencyKey != tt.wantKey {
					t.Errorf("effects %+v, want one under key %q", e, tt.wantKey)
				}
			}
			if res.StatusCode != 0 && res.ContentType != "application/json" {
				t.Errorf("content type %q", res.ContentType)
			}
			if tt.name == "timeout is unknown" {
				// The slow request still lands: that is why a timeout is unknown.
				for deadline := time.Now().Add(5 * time.Second); sb.EffectCount() == 0 && time.Now().Before(deadline); {
					time.Sleep(5 * time.Millisecond)
				}
				tt.wantEffects = 1
			}
			if got := sb.EffectCount(); got != tt.wantEffects {
				t.Errorf("effects = %d, want %d", got, tt.wantEffects)
			}
			wantRequests := 1
			if !tt.wantWritten {
				wantRequests = 0
			}
			if got := sb.Requests("/refunds"); got != wantRequests {
				t.Errorf("sandbox saw %d requests, want %d", got, wantRequests)
			}
		})
	}
}

func TestCallCancelledBeforeSend(t *testing.T) {
	t.Parallel()
	sb, _, b := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req := refund("ord_1", 1)
	req.Binding = b
	res := (&invoke.Client{}).Call(ctx, req)
	if res.Outcome != ledger.NotStarted || res.Written || sb.Requests("/refunds") != 0 {
		t.Fatalf("got %v written %v requests %d", res.Outcome, res.Written, sb.Requests("/refunds"))
	}
}

// TestCallHeaders checks what goes on the wire: method, downstream key under
// the binding's header, traceparent, content type, extra headers, the body.
func TestCallHeaders(t *testing.T) {
	t.Parallel()
	got := make(chan *http.Request, 1)
	bodies := make(chan string, 1)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- r
		bodies <- string(b)
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusAccepted)
		io.WriteString(w, "ok")
	}))
	t.Cleanup(ts.Close)
	b := &invoke.Binding{URL: ts.URL + "/t/{tenant}/o/{args.order_id}", Method: http.MethodPut,
		IdempotencyHeader: "X-Request-Key", DownstreamKey: "{tenant}/{action_id}"}
	clock := time.Date(2026, 11, 30, 1, 2, 3, 0, time.UTC)
	res := (&invoke.Client{Now: func() time.Time { return clock }}).Call(context.Background(), invoke.Request{
		Binding: b, Vars: invoke.Vars{Tenant: "acme", ActionID: "a 1", Args: map[string]any{"order_id": "o/1"}},
		Body: []byte(`{"x":1}`), Traceparent: traceparent,
		Header: http.Header{"X-Extra": {"yes"}, "X-Request-Key": {"overridden"}},
	})
	if res.Outcome != ledger.Answered || res.StatusCode != 202 || string(res.Body) != "ok" || res.ContentType != "text/plain" || !res.SentAt.Equal(clock) {
		t.Fatalf("result %+v", res)
	}
	r := <-got
	checks := map[string][2]string{
		"method":      {r.Method, "PUT"},
		"path":        {r.URL.EscapedPath(), "/t/acme/o/o%2F1"},
		"key":         {r.Header.Get("X-Request-Key"), "acme/a 1"},
		"traceparent": {r.Header.Get("Traceparent"), traceparent},
		"type":        {r.Header.Get("Content-Type"), "application/json"},
		"extra":       {r.Header.Get("X-Extra"), "yes"},
		"body":        {<-bodies, `{"x":1}`},
		"no default":  {r.Header.Get("Idempotency-Key"), ""},
	}
	for name, c := range checks {
		if c[0] != c[1] {
			t.Errorf("%s = %q, want %q", name, c[0], c[1])
		}
	}
}

// TestCallNoRedirect checks that a redirect is an answer, not a second request.
func TestCallNoRedirect(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Redirect(w, r, "/elsewhere", http.StatusFound)
	}))
	t.Cleanup(ts.Close)
	for _, c := range []*invoke.Client{{}, {HTTP: &http.Client{}}} {
		res := c.Call(context.Background(), invoke.Request{Binding: &invoke.Binding{URL: ts.URL + "/refunds"}, Vars: invoke.Vars{Tenant: "t", ActionID: "a"}, Body: []byte("{}")})
		if res.Outcome != ledger.Answered || res.StatusCode != http.StatusFound {
			t.Fatalf("got %v %d %v", res.Outcome, res.StatusCode, res.Err)
		}
	}
	if hits.Load() != 2 {
		t.Fatalf("server saw %d requests, want 2 (one per call)", hits.Load())
	}
}

func TestCallBodyCap(t *testing.T) {
	t.Parallel()
	_, _, b := setup(t)
	req := refund("ord_1", 1)
	req.Binding = b
	res := (&invoke.Client{MaxBodyBytes: 16}).Call(context.Background(), req)
	if res.Outcome != ledger.Answered || res.StatusCode != 201 || len(res.Body) != 16 || !errors.Is(res.Err, invoke.ErrResponseTooLarge) {
		t.Fatalf("got %v %d body %q err %v", res.Outcome, res.StatusCode, res.Body, res.Err)
	}
}

func TestLookup(t *testing.T) {
	t.Parallel()
	sb, _, b := setup(t)
	c := &invoke.Client{}
	req := refund("ord_1", 700)
	req.Binding = b

	if lr := c.Lookup(context.Background(), req); !lr.NotFound || lr.Found || lr.Err != nil || lr.StatusCode != 404 {
		t.Fatalf("before the refund: %+v", lr)
	}
	created := c.Call(context.Background(), req)
	if created.StatusCode != 201 {
		t.Fatalf("refund: %+v", created)
	}
	lr := c.Lookup(context.Background(), req)
	if !lr.Found || lr.NotFound || lr.Err != nil || lr.StatusCode != 200 || string(lr.Body) != string(created.Body) || lr.ContentType != "application/json" {
		t.Fatalf("after the refund: %+v (created %s)", lr, created.Body)
	}

	if err := sb.InjectFault(sandbox.Fault{Path: "/refunds/by-key/acme:act-1", Fault: "status_before", Status: 503}); err != nil {
		t.Fatal(err)
	}
	if lr := c.Lookup(context.Background(), req); lr.Found || lr.NotFound || lr.Err == nil || lr.StatusCode != 503 {
		t.Fatalf("lookup answering 503: %+v", lr)
	}

	noLookup := *b
	noLookup.LookupURL = ""
	req.Binding = &noLookup
	if lr := c.Lookup(context.Background(), req); !errors.Is(lr.Err, invoke.ErrNoLookup) {
		t.Fatalf("no lookup: %+v", lr)
	}
	refused := *b
	refused.LookupURL = refusedURL(t)
	req.Binding = &refused
	if lr := c.Lookup(context.Background(), req); lr.Err == nil || lr.Found || lr.NotFound {
		t.Fatalf("refused lookup: %+v", lr)
	}
	slow := *b
	slow.Timeout = 30 * time.Millisecond
	req.Binding = &slow
	req.Header = http.Header{sandbox.FaultHeader: {"delay=300ms"}}
	if lr := c.Lookup(context.Background(), req); lr.Err == nil {
		t.Fatalf("slow lookup: %+v", lr)
	}
}

func TestState(t *testing.T) {
	t.Parallel()
	_, url, b := setup(t)
	c := &invoke.Client{}
	req := refund("ord_1", 1)
	req.Binding = b
	st, err := c.State(context.Background(), req)
	want := `{"order_id":"ord_1","currency":"EUR","total_minor":10000,"refunded_minor":0,"refunds":[]}` + "\n"
	if err != nil || string(st) != want {
		t.Fatalf("state = %s, %v", st, err)
	}
	missing := refund("ord_9", 1)
	missing.Binding = b
	if _, err := c.State(context.Background(), missing); err == nil {
		t.Fatal("state of an unknown order should fail (404)")
	}
	none := *b
	none.StateURL = ""
	req.Binding = &none
	if st, err := c.State(context.Background(), req); st != nil || err != nil {
		t.Fatalf("no probe: %s %v", st, err)
	}
	notJSON := *b
	notJSON.StateURL = url + "/healthz?x={args.order_id}"
	req.Binding = &notJSON
	if _, err := (&invoke.Client{MaxBodyBytes: 4}).State(context.Background(), req); err == nil {
		t.Fatal("a cut-off state body should fail")
	}
}

func BenchmarkCall(b *testing.B) {
	sb := sandbox.New(sandbox.Config{Orders: []sandbox.Order{{OrderID: "ord_1", TotalMinor: 1 << 60, Currency: "EUR"}}})
	ts := httptest.NewServer(sb)
	defer ts.Close()
	defer sb.Close()
	c := &invoke.Client{}
	req := refund("ord_1", 1)
	req.Binding = &invoke.Binding{URL: ts.URL + "/refunds"}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if res := c.Call(context.Background(), req); res.StatusCode != 201 {
				b.Fatalf("got %v %d %v", res.Outcome, res.StatusCode, res.Err)
			}
		}
	})
}

func BenchmarkExpand(b *testing.B) {
	v := invoke.Vars{Tenant: "acme", ActionID: "refund-7f3a9c", Args: map[string]any{"order_id": "ord_12345678"}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := invoke.Expand("http://127.0.0.1:9090/orders/{args.order_id}/refunds/by-key/{downstream_key}", v, "acme:refund-7f3a9c"); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSlowRequestLandsAfterNotFound is the hazard the settle rule guards
// against: an attempt times out (Unknown), the lookup says not found, and
// then the held request lands and the lookup finds it.
func TestSlowRequestLandsAfterNotFound(t *testing.T) {
	t.Parallel()
	sb, _, b := setup(t)
	b.Timeout = 50 * time.Millisecond
	if err := sb.InjectFault(sandbox.Fault{Path: "/refunds", Key: "acme:act-1", Fault: "hold"}); err != nil {
		t.Fatal(err)
	}
	c := &invoke.Client{}
	req := refund("ord_1", 900)
	req.Binding = b
	if res := c.Call(context.Background(), req); res.Outcome != ledger.Lost {
		t.Fatalf("held call: %v %v", res.Outcome, res.Err)
	}
	patient := *b
	patient.Timeout = 5 * time.Second
	req.Binding = &patient
	if lr := c.Lookup(context.Background(), req); !lr.NotFound {
		t.Fatalf("lookup while held: %+v", lr)
	}
	if n := sb.Release(); n != 1 {
		t.Fatalf("released %d", n)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		lr := c.Lookup(context.Background(), req)
		if lr.Found {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the released request never landed: %+v", lr)
		}
	}
	if sb.EffectCount() != 1 {
		t.Fatalf("effects = %d", sb.EffectCount())
	}
}

// TestCallGetHasNoBody checks that a GET binding sends no body, and that the
// request still carries the downstream key.
func TestCallGetHasNoBody(t *testing.T) {
	t.Parallel()
	type seen struct {
		cl   int64
		te   []string
		body string
		key  string
	}
	got := make(chan seen, 1)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.ContentLength, r.TransferEncoding, string(b), r.Header.Get("Idempotency-Key")}
		io.WriteString(w, "{}")
	}))
	t.Cleanup(ts.Close)
	res := (&invoke.Client{}).Call(context.Background(), invoke.Request{
		Binding: &invoke.Binding{URL: ts.URL + "/orders/{args.id}", Method: http.MethodGet},
		Vars:    invoke.Vars{Tenant: "t", ActionID: "a", Args: map[string]any{"id": "o1"}},
		Body:    []byte(`{"id":"o1"}`),
	})
	if res.Outcome != ledger.Answered || res.StatusCode != 200 {
		t.Fatalf("got %v %d %v", res.Outcome, res.StatusCode, res.Err)
	}
	if s := <-got; s.cl != 0 || s.te != nil || s.body != "" || s.key != "t:a" {
		t.Fatalf("server saw %+v", s)
	}
}
