package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/config"
)

// serveWithLimits starts the gateway as serve does, with short HTTP limits.
func serveWithLimits(t *testing.T, yaml string) *gatewayRuntime {
	t.Helper()
	tools, err := filepath.Abs("../../examples/agent-tools")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Listen, cfg.ToolsDir, cfg.Ledger = "127.0.0.1:0", tools, "sqlite://"+filepath.Join(t.TempDir(), "ledger.db")
	rt, err := startGateway(context.Background(), cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)
	return rt
}

// closedWithin reports whether the gateway closes c (or answers and then
// closes) before the deadline: a connection it holds open reads a timeout.
func closedWithin(c net.Conn, d time.Duration) (answer string, closed bool) {
	c.SetReadDeadline(time.Now().Add(d))
	b, err := io.ReadAll(c)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return string(b), false
	}
	return string(b), true
}

func TestServeLimitsSlowClients(t *testing.T) {
	t.Parallel()
	rt := serveWithLimits(t, "http: {read_header_timeout: 1s, read_timeout: 1s, idle_timeout: 1s, max_header_bytes: 8192}\n")
	if rt.http.WriteTimeout != 1*time.Second+5*time.Second+10*time.Second || rt.http.ReadTimeout != time.Second || // no bindings: read + join + margin
		rt.http.IdleTimeout != time.Second || rt.http.MaxHeaderBytes != 8192 {
		t.Fatalf("server limits: read %s write %s idle %s header %d", rt.http.ReadTimeout, rt.http.WriteTimeout, rt.http.IdleTimeout, rt.http.MaxHeaderBytes)
	}
	addr := strings.TrimPrefix(rt.URL(), "http://")

	// A body that trickles: cut after read_timeout.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("POST /v1/tools/payments.issue_refund/calls HTTP/1.1\r\nHost: 127.0.0.1\r\nIdempotency-Key: slow-key-0001\r\nContent-Length: 1000\r\n\r\n{\"arg"))
	if answer, closed := closedWithin(c, 10*time.Second); !closed {
		t.Fatalf("a trickling body held the connection: %q", answer)
	} else if answer != "" && !strings.HasPrefix(answer, "HTTP/1.1 400") {
		t.Fatalf("a trickling body was answered %q", answer)
	}

	// An idle keep-alive connection: closed after idle_timeout.
	c2, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	c2.Write([]byte("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"))
	br := bufio.NewReader(c2)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz: %v %v", resp, err)
	}
	io.Copy(io.Discard, resp.Body)
	c2.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := br.ReadByte(); err == nil || isTimeoutErr(err) {
		t.Fatalf("an idle keep-alive connection stayed open: %v", err)
	}

	// A head over max_header_bytes: 431, never stored or forwarded.
	req, _ := http.NewRequest("POST", rt.URL()+"/v1/tools/payments.issue_refund/calls", strings.NewReader(`{"arguments":{}}`))
	req.Header.Set("Idempotency-Key", "slow-key-0002")
	req.Header.Set("X-Correlation-ID", strings.Repeat("c", 16<<10))
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("a 16 KiB header: %d", r.StatusCode)
	}
}

func isTimeoutErr(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}
