// Command rsslarge measures a toolgate binary's resident memory in the
// scenario of issue 16 (finding 9): 300 calls whose downstream answers about
// 1 MB of JSON, each executed and then replayed, with the decision log on;
// then the gateway idles. It prints VmRSS and VmHWM (the peak) after each
// step and the decision log's size.
//
//	go build -o /tmp/toolgate ./cmd/toolgate
//	go run ./scripts/rsslarge /tmp/toolgate ./examples/agent-tools
package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: rsslarge TOOLGATE_BINARY TOOLS_DIR")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "rsslarge:", err)
		os.Exit(1)
	}
}

func run(bin, tools string) error {
	tools, err := filepath.Abs(tools)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "rsslarge")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	// The downstream: every refund answers 201 with a body of about 1 MB.
	blob := strings.Repeat("x", 1_000_000-64)
	down, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	go http.Serve(down, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"refund_id":"rf_%d","status":"succeeded","blob":"%s"}`, time.Now().UnixNano(), blob)
	}))

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := l.Addr().String()
	l.Close()
	cfg := fmt.Sprintf("listen: %s\ntools_dir: %s\nledger: sqlite://%s/ledger.db\n"+
		"decision_log: {path: %s/decisions.jsonl, arguments: masked}\n"+
		"bindings:\n  payments.issue_refund: {url: http://%s/refunds, timeout: 10s}\n",
		addr, tools, dir, dir, down.Addr())
	if err := os.WriteFile(filepath.Join(dir, "toolgate.yaml"), []byte(cfg), 0o600); err != nil {
		return err
	}
	cmd := exec.Command(bin, "serve", "--config", filepath.Join(dir, "toolgate.yaml"))
	if err := cmd.Start(); err != nil {
		return err
	}
	defer cmd.Process.Kill()
	for i := 0; ; i++ {
		if r, err := http.Get("http://" + addr + "/healthz"); err == nil {
			r.Body.Close()
			break
		}
		if i > 100 {
			return fmt.Errorf("the gateway did not start")
		}
		time.Sleep(100 * time.Millisecond)
	}
	pid := cmd.Process.Pid
	report(pid, "started")
	for _, step := range []string{"after 300 calls", "after 300 replays"} {
		if bad := callAll(addr); bad > 0 {
			fmt.Printf("  %d answers were not 201\n", bad)
		}
		report(pid, step)
	}
	idle := time.Now()
	for _, at := range []time.Duration{30 * time.Second, 90 * time.Second, 170 * time.Second} {
		time.Sleep(time.Until(idle.Add(at)))
		report(pid, fmt.Sprintf("idle %s", at))
	}
	if fi, err := os.Stat(filepath.Join(dir, "decisions.jsonl")); err == nil {
		fmt.Printf("decision log: %d bytes\n", fi.Size())
	}
	return nil
}

// callAll sends the 300 calls, 8 at a time, and returns how many did not
// answer 201.
func callAll(addr string) int {
	var wg sync.WaitGroup
	var mu sync.Mutex
	sem := make(chan struct{}, 8)
	bad := 0
	for i := range 300 {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			body := `{"arguments":{"order_id":"ord_12345678","amount_minor":1500,"currency":"EUR","reason":"customer_request"}}`
			req, _ := http.NewRequest("POST", "http://"+addr+"/v1/tools/payments.issue_refund/calls", bytes.NewReader([]byte(body)))
			req.Header.Set("Idempotency-Key", fmt.Sprintf("rss-key-%06d", i))
			resp, err := http.DefaultClient.Do(req)
			ok := err == nil && resp.StatusCode == http.StatusCreated
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			if !ok {
				mu.Lock()
				bad++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return bad
}

func report(pid int, step string) {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	var rss, hwm string
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 && f[0] == "VmRSS:" {
			rss = f[1]
		}
		if len(f) >= 2 && f[0] == "VmHWM:" {
			hwm = f[1]
		}
	}
	fmt.Printf("%-20s RSS %7s kB   peak %7s kB\n", step+":", rss, hwm)
}
