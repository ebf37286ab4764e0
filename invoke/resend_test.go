package invoke

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/ledger"
)

// dropSecondServer is a real HTTP/1.1 server on loopback that answers the
// first request on each connection with a keep-alive 200, and on the second
// request of a connection reads it completely and then closes the connection
// without answering: the reused-connection drop of docs/reference/http-api.md.
type dropSecondServer struct {
	ln       net.Listener
	requests atomic.Int32
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    []net.Conn
}

func startDropSecondServer(t *testing.T) *dropSecondServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &dropSecondServer{ln: ln}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				s.serve(c)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		s.mu.Lock()
		for _, c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return s
}

func (s *dropSecondServer) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	for n := 1; ; n++ {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		req.Body.Close()
		s.requests.Add(1)
		if n >= 2 {
			return // read the whole request, then hang up
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
	}
}

func (s *dropSecondServer) url() string { return "http://" + s.ln.Addr().String() + "/refunds" }

// TestCallNeverResends proves the invoker sends a written request once: the
// server drops a reused keep-alive connection after reading the second
// request, and must see that request exactly once, classified ledger.Lost.
func TestCallNeverResends(t *testing.T) {
	t.Parallel()
	srv := startDropSecondServer(t)
	c := &Client{}
	b := &Binding{URL: srv.url(), Timeout: 5 * time.Second}
	v := Vars{Tenant: "acme", ActionID: "resend-1"}

	first := c.Call(context.Background(), Request{Binding: b, Vars: v, Body: []byte(`{"n":1}`)})
	if first.Outcome != ledger.Answered || first.StatusCode != 200 {
		t.Fatalf("warm-up call: %v %d %v", first.Outcome, first.StatusCode, first.Err)
	}
	second := c.Call(context.Background(), Request{Binding: b, Vars: v, Body: []byte(`{"n":2}`)})
	if second.Outcome != ledger.Lost || !second.Written || second.SentAt.IsZero() {
		t.Fatalf("dropped call: outcome %v written %v sentAt %v err %v; want unknown, written", second.Outcome, second.Written, second.SentAt, second.Err)
	}
	// Give a re-send, were there one, time to arrive.
	time.Sleep(100 * time.Millisecond)
	if got := srv.requests.Load(); got != 2 {
		t.Fatalf("server saw %d requests, want 2 (warm-up + one attempt)", got)
	}
}

// TestCallNeverResendsEmptyBody is the same with an empty body, which a plain
// request would mark replayable.
func TestCallNeverResendsEmptyBody(t *testing.T) {
	t.Parallel()
	srv := startDropSecondServer(t)
	c := &Client{}
	b := &Binding{URL: srv.url()}
	v := Vars{Tenant: "acme", ActionID: "resend-2"}
	if r := c.Call(context.Background(), Request{Binding: b, Vars: v}); r.Outcome != ledger.Answered {
		t.Fatalf("warm-up call: %v %v", r.Outcome, r.Err)
	}
	if r := c.Call(context.Background(), Request{Binding: b, Vars: v}); r.Outcome != ledger.Lost {
		t.Fatalf("dropped call: %v %v; want unknown", r.Outcome, r.Err)
	}
	time.Sleep(100 * time.Millisecond)
	if got := srv.requests.Load(); got != 2 {
		t.Fatalf("server saw %d requests, want 2", got)
	}
}

// TestPlainClientResends is the control: it shows the trap is real in this Go
// version. A plain net/http POST with an Idempotency-Key header and a
// rewindable body is sent twice when the reused connection drops.
func TestPlainClientResends(t *testing.T) {
	t.Parallel()
	srv := startDropSecondServer(t)
	hc := &http.Client{Transport: &http.Transport{}}
	post := func() (*http.Response, error) {
		req, _ := http.NewRequest(http.MethodPost, srv.url(), bytes.NewReader([]byte(`{}`)))
		req.Header.Set("Idempotency-Key", "acme:plain")
		return hc.Do(req)
	}
	for i := 0; i < 2; i++ {
		resp, err := post()
		if err != nil {
			t.Fatalf("post %d: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if got := srv.requests.Load(); got != 3 {
		t.Fatalf("server saw %d requests; the plain client was expected to re-send once (3)", got)
	}
}

// retryOnce is a caller's transport that retries a failed round trip once,
// the kind of middleware that would cause a second effect.
type retryOnce struct{ rt http.RoundTripper }

func (r retryOnce) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.rt.RoundTrip(req)
	if err != nil {
		return r.rt.RoundTrip(req)
	}
	return resp, nil
}

// TestCallStopsRetryingTransport checks the second guard: even a caller's
// transport that retries by itself cannot put a second request on the wire
// after the first was written.
func TestCallStopsRetryingTransport(t *testing.T) {
	t.Parallel()
	srv := startDropSecondServer(t)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	c := &Client{HTTP: &http.Client{Transport: retryOnce{tr}}}
	b := &Binding{URL: srv.url()}
	v := Vars{Tenant: "acme", ActionID: "resend-3"}
	if r := c.Call(context.Background(), Request{Binding: b, Vars: v, Body: []byte(`{}`)}); r.Outcome != ledger.Answered {
		t.Fatalf("warm-up call: %v %v", r.Outcome, r.Err)
	}
	r := c.Call(context.Background(), Request{Binding: b, Vars: v, Body: []byte(`{"n":2}`)})
	if r.Outcome != ledger.Lost {
		t.Fatalf("dropped call: %v %v; want unknown", r.Outcome, r.Err)
	}
	time.Sleep(100 * time.Millisecond)
	if got := srv.requests.Load(); got != 2 {
		t.Fatalf("server saw %d requests, want 2 (err %v)", got, r.Err)
	}
}
