package gateway_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/gateway/gatewaytest"
)

// bodyRoutes are the routes that take a request body.
var bodyRoutes = []struct{ method, path string }{
	{"POST", "/v1/tools/payments.issue_refund/calls"},
	{"PUT", "/v1/actions/slow-act-0001"},
	{"POST", "/v1/actions/slow-act-0001/calls"},
	{"POST", "/v1/actions/slow-act-0001/resolve"},
	{"POST", "/v1/actions/slow-act-0001/approve"},
	{"POST", "/v1/actions/slow-act-0001/deny"},
	{"POST", "/v1/actions/slow-act-0001/assign"},
	{"POST", "/v1/actions/slow-act-0001/reconcile"},
	{"POST", "/v1/calls/openai"},
	{"POST", "/v1/calls/anthropic"},
	{"POST", "/mcp"},
	{"POST", "/ui/api/actions/slow-act-0001/resolve"},
	{"POST", "/ui/api/actions/slow-act-0001/approve"},
}

// rawRequest sends a request's head and the first bytes of a body that
// announces more, and returns the first line of the answer and whether the
// gateway then closed the connection (instead of waiting for the rest).
func rawRequest(t *testing.T, url, method, path string, headers ...string) (status string, closed bool) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	head := method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n"
	for i := 0; i+1 < len(headers); i += 2 {
		head += headers[i] + ": " + headers[i+1] + "\r\n"
	}
	if _, err := c.Write([]byte(head + "\r\n{\"argu")); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return "", false
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	_, err = br.ReadByte()
	return resp.Status, err != nil && !isTimeout(err)
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// A request without a valid key is answered 401 at once, whatever its body
// still has to come: the gateway neither reads nor waits for the body of a
// caller it does not know, and closes the connection.
func TestUnauthenticatedRequestsDoNotWaitForTheirBody(t *testing.T) {
	t.Parallel()
	g := newRig(t, withKeys)
	for _, rt := range bodyRoutes {
		for _, auth := range []string{"", "Bearer wrong-key"} {
			var hdr []string
			if auth != "" {
				hdr = []string{"Authorization", auth}
			}
			status, closed := rawRequest(t, g.url, rt.method, rt.path, hdr...)
			want := "401"
			if strings.HasPrefix(rt.path, "/ui/") {
				want = "403" // the dashboard's guard refuses a request without its header first
			}
			if !strings.HasPrefix(status, want) || !closed {
				t.Errorf("%s %s (%q): answer %q, connection closed %v; want 401 at once and a closed connection", rt.method, rt.path, auth, status, closed)
			}
		}
	}
	// An operator route refused to an agent: 403 at once too.
	if status, closed := rawRequest(t, g.url, "POST", "/v1/actions/slow-act-0001/resolve", "Authorization", "Bearer key-acme-agent"); !strings.HasPrefix(status, "403") || !closed {
		t.Errorf("agent on resolve: %q, closed %v", status, closed)
	}
}

// A key, and a tenant, may have only so many requests in flight at once; more
// are answered 429 too_many_requests with Retry-After, and nothing is done.
func TestInFlightRequestsAreCappedPerKeyAndTenant(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var mu sync.Mutex
	arrived := 0
	slow := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		arrived++
		mu.Unlock()
		<-release
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"ok":true}`))
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go slow.Serve(ln)
	t.Cleanup(func() { slow.Close() })
	rec := &recorder{url: "http://" + ln.Addr().String()}
	g := newRig(t, withKeys, withLimitTools(t, rec), func(c *gatewaytest.Config) {
		c.MaxInFlightPerKey, c.MaxInFlightPerTenant = 2, 3
		for i := range c.Keys {
			c.Keys[i].Tools = []string{"*"}
		}
	})
	agent, oncall := bearer("key-acme-agent"), bearer("key-acme-oncall")
	done := make(chan reply, 3)
	for i, key := range []string{"inflight-key-01", "inflight-key-02"} {
		go func() { done <- g.transfer(key, `{"account":"acc-`+string(rune('1'+i))+`"}`, agent...) }()
	}
	waitFor(t, "two calls in flight", func() bool { mu.Lock(); defer mu.Unlock(); return arrived == 2 })
	r := g.transfer("inflight-key-03", `{"account":"acc-3"}`, agent...)
	r.wantProblem(t, 429, "too_many_requests")
	if r.header.Get("Retry-After") == "" {
		t.Fatal("429 without Retry-After")
	}
	// Reads count too; another key of the tenant has room for one more.
	g.do("GET", "/v1/actions", "", agent...).wantProblem(t, 429, "too_many_requests")
	go func() { done <- g.transfer("inflight-key-04", `{"account":"acc-4"}`, oncall...) }()
	waitFor(t, "a third call in flight", func() bool { mu.Lock(); defer mu.Unlock(); return arrived == 3 })
	g.do("GET", "/v1/actions", "", oncall...).wantProblem(t, 429, "too_many_requests") // the tenant's cap
	// Another tenant is not affected.
	if r := g.do("GET", "/v1/actions", "", bearer("key-globex-agent")...); r.status != 200 {
		t.Fatalf("other tenant: %d %s", r.status, r.body)
	}
	close(release)
	for range 3 {
		if r := <-done; r.status != 200 {
			t.Fatalf("a call in flight: %d %s", r.status, r.body)
		}
	}
	// Room again.
	if r := g.transfer("inflight-key-03", `{"account":"acc-3"}`, agent...); r.status != 200 {
		t.Fatalf("after the calls ended: %d %s", r.status, r.body)
	}
}
