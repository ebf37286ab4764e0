package sandbox_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/sandbox"
	"github.com/toolgate/toolgate/sandbox/sandboxtest"
)

type answer struct {
	status int
	header http.Header
	body   string
	err    error
}

func do(t *testing.T, method, url, body string, header map[string]string) answer {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	// A fresh connection per request, so a dropped one cannot be retried.
	resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
	if err != nil {
		return answer{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: string(b), err: err}
}

func setup(t *testing.T, cfg sandbox.Config) (*sandbox.Server, string) {
	t.Helper()
	if cfg.Orders == nil {
		cfg.Orders = []sandbox.Order{{OrderID: "ord_1", TotalMinor: 10000, Currency: "EUR"}}
	}
	return sandboxtest.Start(t, cfg)
}

func refundBody(order string, amount int) string {
	b, _ := json.Marshal(map[string]any{"order_id": order, "amount_minor": amount, "currency": "EUR", "reason": "damaged", "extra": 1})
	return string(b)
}

func TestRefunds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		body       string
		wantStatus int
		wantCode   string
		effects    int
	}{
		{name: "applied", body: refundBody("ord_1", 2500), wantStatus: 201, effects: 1},
		{name: "whole balance", body: refundBody("ord_1", 10000), wantStatus: 201, effects: 1},
		{name: "over balance", body: refundBody("ord_1", 10001), wantStatus: 422, wantCode: "AMOUNT_EXCEEDS_BALANCE"},
		{name: "unknown order", body: refundBody("ord_404", 1), wantStatus: 404, wantCode: "ORDER_NOT_FOUND"},
		{name: "other currency", body: `{"order_id":"ord_1","amount_minor":1,"currency":"USD"}`, wantStatus: 422, wantCode: "CURRENCY_MISMATCH"},
		{name: "not json", body: `{`, wantStatus: 400, wantCode: "MALFORMED_REQUEST"},
		{name: "fractional amount", body: `{"order_id":"ord_1","amount_minor":1.5,"currency":"EUR"}`, wantStatus: 400, wantCode: "MALFORMED_REQUEST"},
		{name: "zero amount", body: `{"order_id":"ord_1","amount_minor":0,"currency":"EUR"}`, wantStatus: 400, wantCode: "MALFORMED_REQUEST"},
		{name: "missing amount", body: `{"order_id":"ord_1","currency":"EUR"}`, wantStatus: 400, wantCode: "MALFORMED_REQUEST"},
		{name: "too large", body: `{"reason":"` + strings.Repeat("x", 70000) + `"}`, wantStatus: 413, wantCode: "REQUEST_TOO_LARGE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sb, url := setup(t, sandbox.Config{})
			a := do(t, "POST", url+"/refunds", tt.body, map[string]string{"Idempotency-Key": "acme:k1"})
			if a.err != nil || a.status != tt.wantStatus {
				t.Fatalf("status %d (%v), body %s; want %d", a.status, a.err, a.body, tt.wantStatus)
			}
			if tt.wantCode != "" && !strings.Contains(a.body, `"code":"`+tt.wantCode+`"`) {
				t.Errorf("body %s lacks code %s", a.body, tt.wantCode)
			}
			if got := sb.EffectCount(); got != tt.effects {
				t.Errorf("effects = %d, want %d", got, tt.effects)
			}
		})
	}
}

func TestRefundLifecycle(t *testing.T) {
	t.Parallel()
	sb, url := setup(t, sandbox.Config{})
	key := map[string]string{"Idempotency-Key": "acme:key/1"}
	created := do(t, "POST", url+"/refunds", refundBody("ord_1", 2500), key)
	want := `{"refund_id":"re_1a3fb1021e39055b","order_id":"ord_1","amount_minor":2500,"currency":"EUR","status":"succeeded"}` + "\n"
	if created.status != 201 || created.body != want {
		t.Fatalf("create: %d %q; want 201 %q", created.status, created.body, want)
	}
	if ct := created.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("content type %q", ct)
	}
	lookup := do(t, "GET", url+"/refunds/by-key/acme:key%2F1", "", nil)
	if lookup.status != 200 || lookup.body != created.body {
		t.Fatalf("lookup: %d %q; want 200 and the 201 body", lookup.status, lookup.body)
	}
	if a := do(t, "GET", url+"/refunds/by-key/acme:nope", "", nil); a.status != 404 {
		t.Fatalf("lookup of an unknown key: %d", a.status)
	}
	// No dedupe by default: the same key applies a second effect.
	second := do(t, "POST", url+"/refunds", refundBody("ord_1", 2500), key)
	if second.status != 201 || !strings.Contains(second.body, "re_f992ccac86a74187") {
		t.Fatalf("second: %d %s", second.status, second.body)
	}
	if again := do(t, "GET", url+"/refunds/by-key/acme:key%2F1", "", nil); again.body != created.body {
		t.Fatalf("lookup with two effects should answer the first: %s", again.body)
	}
	order := do(t, "GET", url+"/orders/ord_1", "", nil)
	wantOrder := `{"order_id":"ord_1","currency":"EUR","total_minor":10000,"refunded_minor":5000,"refunds":["re_1a3fb1021e39055b","re_f992ccac86a74187"]}` + "\n"
	if order.status != 200 || order.body != wantOrder {
		t.Fatalf("order: %d %s", order.status, order.body)
	}
	effects := do(t, "GET", url+"/_sandbox/effects?key=acme:key/1", "", nil)
	var ev struct {
		Count   int              `json:"count"`
		Effects []sandbox.Effect `json:"effects"`
	}
	if err := json.Unmarshal([]byte(effects.body), &ev); err != nil || ev.Count != 2 || ev.Effects[1].RefundID != "re_f992ccac86a74187" {
		t.Fatalf("effects: %s (%v)", effects.body, err)
	}
	if got := len(sb.Effects("acme:key/1")); got != 2 {
		t.Fatalf("Effects(key) = %d", got)
	}
	if a := do(t, "POST", url+"/_sandbox/reset", "", nil); a.status != 200 || sb.EffectCount() != 0 {
		t.Fatalf("reset: %d, effects %d", a.status, sb.EffectCount())
	}
	if st, ok := sb.Order("ord_1"); !ok || st.RefundedMinor != 0 {
		t.Fatalf("reset should re-seed orders: %+v %v", st, ok)
	}
}

func TestOrders(t *testing.T) {
	t.Parallel()
	_, url := setup(t, sandbox.Config{})
	if a := do(t, "POST", url+"/orders", `{"order_id":"ord_2","total_minor":500,"currency":"USD"}`, nil); a.status != 201 {
		t.Fatalf("create order: %d %s", a.status, a.body)
	}
	if a := do(t, "POST", url+"/orders", `{"order_id":"ord_3","total_minor":500,"currency":"usd"}`, nil); a.status != 400 {
		t.Fatalf("bad currency: %d %s", a.status, a.body)
	}
	if a := do(t, "GET", url+"/orders/ord_2", "", nil); a.status != 200 || !strings.Contains(a.body, `"refunds":[]`) {
		t.Fatalf("get order: %d %s", a.status, a.body)
	}
	if a := do(t, "GET", url+"/orders/ord_9", "", nil); a.status != 404 || !strings.Contains(a.body, "ORDER_NOT_FOUND") {
		t.Fatalf("unknown order: %d %s", a.status, a.body)
	}
}

// TestOrderByKey: an order created under an Idempotency-Key is found by it,
// with the bytes of its 201 (what a reconciler's lookup replays); another key
// is 404, a reset forgets it.
func TestOrderByKey(t *testing.T) {
	t.Parallel()
	sb, url := setup(t, sandbox.Config{})
	created := do(t, "POST", url+"/orders", `{"order_id":"ord_7","total_minor":700,"currency":"EUR"}`, map[string]string{"Idempotency-Key": "default:order-7"})
	if created.status != 201 {
		t.Fatalf("create: %d %s", created.status, created.body)
	}
	// A second order under the key (the sandbox does not deduplicate) does not move the lookup.
	do(t, "POST", url+"/orders", `{"order_id":"ord_8","total_minor":800,"currency":"EUR"}`, map[string]string{"Idempotency-Key": "default:order-7"})
	if a := do(t, "GET", url+"/orders/by-key/default:order-7", "", nil); a.status != 200 || a.body != created.body {
		t.Fatalf("by key: %d %q, want 200 %q", a.status, a.body, created.body)
	}
	if a := do(t, "GET", url+"/orders/by-key/default:other", "", nil); a.status != 404 || !strings.Contains(a.body, "ORDER_NOT_FOUND") {
		t.Fatalf("unknown key: %d %s", a.status, a.body)
	}
	sb.Reset()
	if a := do(t, "GET", url+"/orders/by-key/default:order-7", "", nil); a.status != 404 {
		t.Fatalf("after reset: %d %s", a.status, a.body)
	}
}

func TestAutoCreateAndDedupe(t *testing.T) {
	t.Parallel()
	sb, url := setup(t, sandbox.Config{AutoCreateOrders: true, Dedupe: true})
	key := map[string]string{"Idempotency-Key": "k-dedupe"}
	first := do(t, "POST", url+"/refunds", refundBody("ord_new", 700), key)
	again := do(t, "POST", url+"/refunds", refundBody("ord_new", 700), key)
	if first.status != 201 || again.status != 201 || again.body != first.body || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("dedupe: %d %s / %d %s", first.status, first.body, again.status, again.body)
	}
	if sb.EffectCount() != 1 {
		t.Fatalf("effects = %d, want 1", sb.EffectCount())
	}
	st, ok := sb.Order("ord_new")
	if !ok || st.TotalMinor != sandbox.DefaultAutoCreateTotalMinor || st.Currency != "EUR" {
		t.Fatalf("auto-created order: %+v", st)
	}
}

func TestFaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		fault      *sandbox.Fault // queued
		header     string         // or per request
		wantStatus int            // 0: connection dropped
		effects    int
	}{
		{name: "drop before", fault: &sandbox.Fault{Path: "/refunds", Fault: "drop_before"}, effects: 0},
		{name: "drop after", fault: &sandbox.Fault{Path: "/refunds", Fault: "drop_after"}, effects: 1},
		{name: "status before", fault: &sandbox.Fault{Fault: "status_before", Status: 503}, wantStatus: 503, effects: 0},
		{name: "status after", fault: &sandbox.Fault{Key: "k", Fault: "status_after", Status: 500}, wantStatus: 500, effects: 1},
		{name: "delay", fault: &sandbox.Fault{Path: "/ref*", Fault: "delay", DelayMS: 20}, wantStatus: 201, effects: 1},
		{name: "other path does not match", fault: &sandbox.Fault{Path: "/orders/ord_1", Fault: "drop_before"}, wantStatus: 201, effects: 1},
		{name: "other key does not match", fault: &sandbox.Fault{Key: "other", Fault: "drop_before"}, wantStatus: 201, effects: 1},
		{name: "header drop after", header: "delay=10ms,drop_after", effects: 1},
		{name: "header status before", header: "status_before=502", wantStatus: 502, effects: 0},
		{name: "header status default", header: "status_after", wantStatus: 503, effects: 1},
		{name: "header bad", header: "explode", wantStatus: 400, effects: 0},
		{name: "header two actions", header: "drop_after,status_before", wantStatus: 400, effects: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sb, url := setup(t, sandbox.Config{})
			if tt.fault != nil {
				if err := sb.InjectFault(*tt.fault); err != nil {
					t.Fatal(err)
				}
			}
			h := map[string]string{"Idempotency-Key": "k"}
			if tt.header != "" {
				h[sandbox.FaultHeader] = tt.header
			}
			a := do(t, "POST", url+"/refunds", refundBody("ord_1", 100), h)
			if tt.wantStatus == 0 {
				if a.err == nil {
					t.Fatalf("want a dropped connection, got %d %s", a.status, a.body)
				}
			} else if a.err != nil || a.status != tt.wantStatus {
				t.Fatalf("status %d (%v) %s; want %d", a.status, a.err, a.body, tt.wantStatus)
			}
			if got := sb.EffectCount(); got != tt.effects {
				t.Fatalf("effects = %d, want %d", got, tt.effects)
			}
			// A queued fault is used up: the next request is clean.
			if b := do(t, "POST", url+"/refunds", refundBody("ord_1", 100), map[string]string{"Idempotency-Key": "k"}); b.status != 201 {
				t.Fatalf("follow-up: %d %v %s", b.status, b.err, b.body)
			}
			if got := sb.Requests("/refunds"); got != 2 {
				t.Fatalf("requests = %d, want 2", got)
			}
		})
	}
}

func TestFaultCountAndHTTPQueue(t *testing.T) {
	t.Parallel()
	sb, url := setup(t, sandbox.Config{})
	if a := do(t, "POST", url+"/_sandbox/faults", `{"path":"/refunds","fault":"status_before","status":503,"count":2}`, nil); a.status != 201 {
		t.Fatalf("queue fault: %d %s", a.status, a.body)
	}
	if a := do(t, "POST", url+"/_sandbox/faults", `{"fault":"teleport"}`, nil); a.status != 400 {
		t.Fatalf("bad fault accepted: %d %s", a.status, a.body)
	}
	var got []int
	for i := 0; i < 3; i++ {
		got = append(got, do(t, "POST", url+"/refunds", refundBody("ord_1", 1), nil).status)
	}
	if got[0] != 503 || got[1] != 503 || got[2] != 201 || sb.EffectCount() != 1 {
		t.Fatalf("statuses %v, effects %d; want [503 503 201], 1", got, sb.EffectCount())
	}
}

// TestHoldRelease holds a refund, checks that nothing is applied while it is
// held, and that the effect lands after the release even though the client
// has gone away meanwhile (a downstream finishes what it received).
func TestHoldRelease(t *testing.T) {
	t.Parallel()
	sb, url := setup(t, sandbox.Config{})
	if err := sb.InjectFault(sandbox.Fault{Path: "/refunds", Fault: "hold,drop_after"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, "POST", url+"/refunds", strings.NewReader(refundBody("ord_1", 100)))
		req.Header.Set("Idempotency-Key", "held")
		_, err := http.DefaultClient.Do(req)
		done <- err
	}()
	wctx, wcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer wcancel()
	if err := sb.WaitHeld(wctx, 1); err != nil {
		t.Fatal(err)
	}
	if a := do(t, "GET", url+"/refunds/by-key/held", "", nil); a.status != 404 || sb.EffectCount() != 0 {
		t.Fatalf("while held: lookup %d, effects %d", a.status, sb.EffectCount())
	}
	cancel() // the client gives up
	if err := <-done; err == nil {
		t.Fatal("client should have failed")
	}
	if a := do(t, "GET", url+"/_sandbox/held", "", nil); !strings.Contains(a.body, `"count":1`) {
		t.Fatalf("held: %s", a.body)
	}
	if a := do(t, "POST", url+"/_sandbox/release", "", nil); !strings.Contains(a.body, `"released":1`) {
		t.Fatalf("release: %s", a.body)
	}
	if err := sb.WaitEffects(wctx, 1); err != nil {
		t.Fatal(err)
	}
	if a := do(t, "GET", url+"/refunds/by-key/held", "", nil); a.status != 200 {
		t.Fatalf("after release: lookup %d", a.status)
	}
}

// TestCloseEndsHeld checks that Close ends a held request without effect, so
// an http.Server can shut down.
func TestCloseEndsHeld(t *testing.T) {
	t.Parallel()
	sb, url := setup(t, sandbox.Config{})
	done := make(chan answer, 1)
	go func() {
		done <- do(t, "POST", url+"/refunds", refundBody("ord_1", 100), map[string]string{sandbox.FaultHeader: "hold"})
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := sb.WaitHeld(ctx, 1); err != nil {
		t.Fatal(err)
	}
	sb.Close()
	if a := <-done; a.err == nil {
		t.Fatalf("held request answered %d after Close", a.status)
	}
	if sb.EffectCount() != 0 || sb.Held() != 0 {
		t.Fatalf("effects %d, held %d after Close", sb.EffectCount(), sb.Held())
	}
}

// TestConcurrentRefunds applies many refunds at once; the balance never goes
// negative and every applied refund is one effect.
func TestConcurrentRefunds(t *testing.T) {
	t.Parallel()
	sb, url := setup(t, sandbox.Config{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	created := 0
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if a := do(t, "POST", url+"/refunds", refundBody("ord_1", 300), map[string]string{"Idempotency-Key": "same"}); a.status == 201 {
				mu.Lock()
				created++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	st, _ := sb.Order("ord_1")
	if created != 33 || sb.EffectCount() != 33 || st.RefundedMinor != 9900 {
		t.Fatalf("created %d, effects %d, refunded %d; want 33, 33, 9900", created, sb.EffectCount(), st.RefundedMinor)
	}
}

// TestReleaseByKey holds two refunds and releases them one key at a time; the
// traceparent of each is recorded with its effect.
func TestReleaseByKey(t *testing.T) {
	t.Parallel()
	sb, url := setup(t, sandbox.Config{})
	done := make(chan answer, 2)
	for _, k := range []string{"a", "b"} {
		go func() {
			done <- do(t, "POST", url+"/refunds", refundBody("ord_1", 100), map[string]string{
				"Idempotency-Key": k, sandbox.FaultHeader: "hold", "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-0" + k,
			})
		}()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := sb.WaitHeld(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if a := do(t, "POST", url+"/_sandbox/release?key=b", "", nil); !strings.Contains(a.body, `"released":1`) {
		t.Fatalf("release b: %s", a.body)
	}
	if a := <-done; a.status != 201 {
		t.Fatalf("b: %d %s", a.status, a.body)
	}
	if e := sb.Effects(); len(e) != 1 || e[0].IdempotencyKey != "b" {
		t.Fatalf("effects after releasing b: %+v", e)
	}
	if sb.Held() != 1 || sb.EffectCount() != 1 {
		t.Fatalf("held %d, effects %d after releasing b", sb.Held(), sb.EffectCount())
	}
	if n := sb.Release("a"); n != 1 {
		t.Fatalf("released %d for a", n)
	}
	if a := <-done; a.status != 201 {
		t.Fatalf("a: %d %s", a.status, a.body)
	}
	e := sb.Effects()
	if len(e) != 2 || e[0].IdempotencyKey != "b" || !strings.HasSuffix(e[0].Traceparent, "-0b") || !strings.HasSuffix(e[1].Traceparent, "-0a") {
		t.Fatalf("effects %+v", e)
	}
}

// Refund ids come from the idempotency key, not from a counter: two fresh
// sandboxes given the same requests in the same order answer the same bytes
// (what toolgate replay relies on), whatever other traffic interleaves, and
// distinct keys, repeats of one key and keyless refunds get distinct ids.
func TestRefundIDsDerivedFromTheKey(t *testing.T) {
	t.Parallel()
	script := []struct{ key, order string }{
		{"default:a", "ord_1"}, {"", "ord_1"}, {"default:b", "ord_1"}, {"default:a", "ord_1"}, {"", "ord_1"},
	}
	run := func(noise bool) []string {
		_, url := setup(t, sandbox.Config{AutoCreateOrders: true})
		var bodies []string
		for i, s := range script {
			if noise && i == 2 {
				do(t, "POST", url+"/refunds", refundBody("ord_other", 10), map[string]string{"Idempotency-Key": "default:noise"})
			}
			h := map[string]string{}
			if s.key != "" {
				h["Idempotency-Key"] = s.key
			}
			a := do(t, "POST", url+"/refunds", refundBody(s.order, 100), h)
			if a.status != 201 {
				t.Fatalf("refund %d: %d %s", i, a.status, a.body)
			}
			bodies = append(bodies, a.body)
		}
		return bodies
	}
	first, second := run(false), run(true)
	seen := map[string]bool{}
	for i := range first {
		if first[i] != second[i] {
			t.Errorf("refund %d: %s in one sandbox, %s in another", i, first[i], second[i])
		}
		var r sandbox.Refund
		if err := json.Unmarshal([]byte(first[i]), &r); err != nil || !strings.HasPrefix(r.RefundID, "re_") || len(r.RefundID) != 19 {
			t.Fatalf("refund %d: %s (%v)", i, first[i], err)
		}
		if seen[r.RefundID] {
			t.Errorf("refund id %s given twice", r.RefundID)
		}
		seen[r.RefundID] = true
	}
	if got := sandbox.RefundID("default:a", 1); !strings.Contains(first[0], got) {
		t.Errorf("RefundID(default:a, 1) = %s, not in %s", got, first[0])
	}
}

func TestRefundStatus(t *testing.T) {
	t.Parallel()
	_, url := setup(t, sandbox.Config{RefundStatus: "pending_review"})
	a := do(t, "POST", url+"/refunds", refundBody("ord_1", 100), map[string]string{"Idempotency-Key": "k"})
	if a.status != 201 || !strings.Contains(a.body, `"status":"pending_review"`) {
		t.Fatalf("refund: %d %s", a.status, a.body)
	}
}

// The form-encoded refund route applies a refund once per Idempotency-Key
// (with Dedupe, a repeat answers the first refund), reads amount_minor as
// an exact integer, and refuses another content type or a repeated field.
func TestFormRefunds(t *testing.T) {
	t.Parallel()
	sb, base := setup(t, sandbox.Config{Dedupe: true})
	form := map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Idempotency-Key": "t:form-1"}
	body := "order_id=ord_1&amount_minor=2500&currency=EUR&reason=damaged&metadata[ticket]=T-1"
	first := do(t, "POST", base+"/form/refunds", body, form)
	if first.status != 201 || !strings.Contains(first.body, `"amount_minor":2500`) {
		t.Fatalf("%+v", first)
	}
	again := do(t, "POST", base+"/form/refunds", body, form)
	if again.status != 201 || again.body != first.body || again.header.Get("Idempotent-Replayed") != "true" || sb.EffectCount() != 1 {
		t.Fatalf("the repeat: %+v, %d effects", again, sb.EffectCount())
	}
	for _, tc := range []struct {
		name, body string
		header     map[string]string
		status     int
	}{
		{"json content type", body, map[string]string{"Content-Type": "application/json", "Idempotency-Key": "t:form-2"}, 415},
		{"repeated field", body + "&currency=EUR", map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Idempotency-Key": "t:form-3"}, 400},
		{"amount not an integer", "order_id=ord_1&amount_minor=1.5&currency=EUR", map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Idempotency-Key": "t:form-4"}, 400},
		{"bad escape", "order_id=%zz", map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Idempotency-Key": "t:form-5"}, 400},
	} {
		if a := do(t, "POST", base+"/form/refunds", tc.body, tc.header); a.status != tc.status {
			t.Errorf("%s: %+v, want %d", tc.name, a, tc.status)
		}
	}
	if sb.EffectCount() != 1 {
		t.Fatalf("%d effects", sb.EffectCount())
	}
}
