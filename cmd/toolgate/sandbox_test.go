package main

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/testrig"
)

// TestSandboxCommand runs `toolgate sandbox` on a free loopback port, makes a
// refund on a seeded order over HTTP, and stops it through its context.
func TestSandboxCommand(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb testrig.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, env{Args: []string{"sandbox", "--listen", "127.0.0.1:0", "--order", "ord_12345678:1000:EUR"},
			Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb})
	}()
	addr := regexp.MustCompile(`listening on (http://\S+)`)
	var base string
	for deadline := time.Now().Add(5 * time.Second); base == ""; time.Sleep(5 * time.Millisecond) {
		if m := addr.FindStringSubmatch(out.String()); m != nil {
			base = m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("no listening line; stdout %q stderr %q", out.String(), errb.String())
		}
	}
	req, _ := http.NewRequest("POST", base+"/refunds", strings.NewReader(`{"order_id":"ord_12345678","amount_minor":250,"currency":"EUR"}`))
	req.Header.Set("Idempotency-Key", "acme:cli-1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 201 || !strings.Contains(string(body), `"refund_id":"re_9802e5f97c7eea15"`) { // sandbox.RefundID("acme:cli-1", 1)
		t.Fatalf("refund: %d %s", resp.StatusCode, body)
	}
	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Fatalf("exit %d; stderr %s", code, errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("sandbox did not stop")
	}
	if !strings.Contains(errb.String(), `POST /refunds key="acme:cli-1" fault=- -> 201`) {
		t.Errorf("request log missing: %q", errb.String())
	}
	if !strings.Contains(out.String(), "stopped") {
		t.Errorf("stdout %q", out.String())
	}
}

func TestSandboxUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		args     []string
		code     int
		inStderr string
		inStdout string
	}{
		{name: "help", args: []string{"sandbox", "--help"}, code: exitOK, inStdout: "Usage: toolgate sandbox"},
		{name: "bad order", args: []string{"sandbox", "--order", "ord_1:ten:EUR"}, code: exitUsage, inStderr: "bad total"},
		{name: "stray argument", args: []string{"sandbox", "extra"}, code: exitUsage, inStderr: "unexpected argument"},
		{name: "bad listen", args: []string{"sandbox", "--listen", "256.0.0.1:bad"}, code: exitUsage, inStderr: "toolgate sandbox:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out, errb testrig.Buffer
			code := run(context.Background(), env{Args: tt.args, Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb})
			if code != tt.code || !strings.Contains(errb.String(), tt.inStderr) || !strings.Contains(out.String(), tt.inStdout) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want %d, %q and %q", code, out.String(), errb.String(), tt.code, tt.inStdout, tt.inStderr)
			}
		})
	}
}
