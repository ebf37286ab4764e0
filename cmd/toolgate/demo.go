package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/examples"
	"github.com/toolgate/toolgate/sandbox"
)

func init() {
	register(command{Name: "demo", Summary: "sandbox + gateway on loopback, scripted scenarios", Run: runDemo, Grace: drainGrace})
}

// runDemo starts the sandbox and a gateway on an embedded SQLite file and
// tells the exactly-once story scenario by scenario, each with the sandbox's
// own count of refunds. It exits 1 if any scenario did not come out as told.
func runDemo(ctx context.Context, e env) int {
	flags := newFlagSet(e, "demo", "[--keep] [--decision-log FILE [--log-arguments digest|masked|full]]")
	keep := flags.Bool("keep", false, "keep the gateway and sandbox running after the scenarios (Ctrl-C to stop)")
	verbose := flags.Bool("v", false, "print the gateway's log too")
	logPath := flags.String("decision-log", "", "write the gateway's decision log to `FILE` (toolgate replay can replay it against a fresh sandbox)")
	logArgs := flags.String("log-arguments", "full", "the decision log's arguments setting: digest, masked or full (the demo's downstream is a sandbox)")
	if _, code, ok := parseFlags(flags, e.Args); !ok {
		return code
	}
	if *logArgs != "digest" && *logArgs != "masked" && *logArgs != "full" {
		fmt.Fprintf(e.Stderr, "toolgate demo: --log-arguments %q is not digest, masked or full\n", *logArgs)
		return exitUsage
	}
	dir, err := os.MkdirTemp("", "toolgate-demo-")
	if err != nil {
		fmt.Fprintf(e.Stderr, "toolgate demo: %v\n", err)
		return exitUsage
	}
	defer os.RemoveAll(dir)
	sb := sandbox.New(sandbox.Config{Orders: []sandbox.Order{{OrderID: "ord_8Xk2Lm9Q", TotalMinor: 500_000, Currency: "EUR"}}})
	sln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintf(e.Stderr, "toolgate demo: %v\n", err)
		return exitUsage
	}
	sbSrv := &http.Server{Handler: sb}
	go sbSrv.Serve(sln)
	defer func() { sb.Close(); sbSrv.Close() }()

	cfg := config.Default()
	cfg.Listen = "127.0.0.1:0"
	cfg.Ledger = "sqlite://" + filepath.Join(dir, "demo.db")
	cfg.ReconcileInterval = 200 * time.Millisecond
	cfg.Bindings = sandboxBindings("http://" + sln.Addr().String())
	if *logPath != "" {
		cfg.DecisionLog = config.DecisionLog{Path: *logPath, Arguments: *logArgs}
	}
	refund := cfg.Bindings["payments.issue_refund"]
	// settle_after must outlast the slowest request the downstream may still
	// apply after the gateway gave up on it (here: the 1.2s delay below).
	refund.Timeout = 500 * time.Millisecond
	refund.SettleAfter = 3 * time.Second
	cfg.Bindings["payments.issue_refund"] = refund
	logw := io.Discard
	if *verbose {
		logw = e.Stderr
	}
	rt, err := startGatewayWith(ctx, cfg, examples.AgentTools(), logw)
	if err != nil {
		fmt.Fprintf(e.Stderr, "toolgate demo: %v\n", err)
		return exitUsage
	}
	defer rt.Close()

	d := &demo{w: e.Stdout, gw: rt.URL(), sb: sb}
	fmt.Fprintf(e.Stdout, "toolgate demo: gateway %s, sandbox refund API http://%s, ledger %s\n", rt.URL(), sln.Addr(), cfg.Ledger)
	fmt.Fprintf(e.Stdout, "Tool payments.issue_refund v1.0.0 on order ord_8Xk2Lm9Q (EUR 5000.00). The sandbox does NOT deduplicate: a second send would be a second refund.\n")
	d.run()
	fmt.Fprintf(e.Stdout, "\n%d of %s came out as told; the sandbox applied %s for %s.\n", d.passed, count(d.total, "scenario"), count(sb.EffectCount(), "refund"), count(d.intended, "intended action"))
	if *keep {
		fmt.Fprintf(e.Stdout, "Still running: try  curl -s %s/v1/actions | head  (Ctrl-C to stop)\n", rt.URL())
		<-ctx.Done()
	}
	if d.passed != d.total {
		return exitNegative
	}
	return exitOK
}

type demo struct {
	w        io.Writer
	gw       string
	sb       *sandbox.Server
	n        int
	passed   int
	total    int
	intended int
}

type demoReply struct {
	status   int
	replayed string
	state    string
	body     string
}

func (d *demo) call(key, args string) demoReply {
	req, _ := http.NewRequest("POST", d.gw+"/v1/tools/payments.issue_refund/calls", strings.NewReader(`{"arguments":`+args+`}`))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	return d.send(req)
}

func (d *demo) post(path string) demoReply {
	req, _ := http.NewRequest("POST", d.gw+path, nil)
	return d.send(req)
}

func (d *demo) send(req *http.Request) demoReply {
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return demoReply{body: err.Error()}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return demoReply{status: resp.StatusCode, replayed: resp.Header.Get("Idempotent-Replayed"), state: resp.Header.Get("Toolgate-Action-State"), body: strings.TrimSpace(string(b))}
}

func (d *demo) scenario(title string) {
	d.n++
	fmt.Fprintf(d.w, "\n%d. %s\n", d.n, title)
}

func (d *demo) show(label string, r demoReply) {
	extra := ""
	if r.replayed != "" {
		extra += " Idempotent-Replayed: " + r.replayed
	}
	if r.state != "" {
		extra += " state: " + r.state
	}
	fmt.Fprintf(d.w, "   %-28s -> %d%s\n      %s\n", label, r.status, extra, clip(r.body, 160))
	var p struct {
		Errors []struct{ Pointer, Code, Detail string } `json:"errors"`
	}
	if json.Unmarshal([]byte(r.body), &p) == nil {
		for _, fe := range p.Errors {
			fmt.Fprintf(d.w, "      error at %-14s %-10s %s\n", fe.Pointer, fe.Code, fe.Detail)
		}
	}
}

func (d *demo) check(ok bool, effects int) {
	d.total++
	verdict := "as told"
	if ok && d.sb.EffectCount() == effects {
		d.passed++
	} else {
		verdict = "NOT as told"
	}
	fmt.Fprintf(d.w, "   sandbox refunds so far: %d (%s)\n", d.sb.EffectCount(), verdict)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func args(amount int) string {
	return fmt.Sprintf(`{"order_id":"ord_8Xk2Lm9Q","amount_minor":%d,"currency":"EUR","reason":"customer_request","customer_email":"jane.doe@example.com"}`, amount)
}

func (d *demo) run() {
	d.scenario("A clean refund")
	d.intended++
	first := d.call("demo-refund-0001", args(1999))
	d.show("POST key demo-refund-0001", first)
	d.check(first.status == 201 && first.replayed == "false", 1)

	d.scenario("The SDK retries the same call: the stored answer comes back, nothing is re-sent")
	retry := d.call("demo-refund-0001", args(1999))
	d.show("POST key demo-refund-0001", retry)
	d.check(retry.status == 201 && retry.replayed == "true" && retry.body == first.body, 1)

	d.scenario("A different payload under the same key is refused, the original untouched")
	other := d.call("demo-refund-0001", args(9999))
	d.show("POST key demo-refund-0001", other)
	d.check(other.status == 409 && strings.Contains(other.body, "idempotency_key_reused"), 1)

	d.scenario("Twenty concurrent duplicates (queue redelivery, a reconnecting client)")
	d.intended++
	var wg sync.WaitGroup
	replies := make([]demoReply, 20)
	for i := range replies {
		wg.Add(1)
		go func(i int) { defer wg.Done(); replies[i] = d.call("demo-refund-0002", args(500)) }(i)
	}
	wg.Wait()
	executed, same := 0, true
	for _, r := range replies {
		if r.replayed == "false" {
			executed++
		}
		same = same && r.status == 201 && r.body == replies[0].body
	}
	fmt.Fprintf(d.w, "   20 x POST key demo-refund-0002 -> all 201 with one body: %v; executed once, %d replayed or joined\n", same, 20-executed)
	d.check(same && executed == 1, 2)

	d.scenario("The downstream is slow: the gateway times out, the action is unknown, never re-run blind")
	d.intended++
	d.sb.InjectFault(sandbox.Fault{Path: "/refunds", Fault: "delay", DelayMS: 1200})
	slow := d.call("demo-refund-0003", args(700))
	d.show("POST key demo-refund-0003", slow)
	again := d.call("demo-refund-0003", args(700))
	d.show("retry while unknown", again)
	d.waitEffects(3)
	settled := d.waitSettled("demo-refund-0003")
	replay := d.call("demo-refund-0003", args(700))
	d.show("retry after reconciliation", replay)
	d.check(slow.status == 504 && again.status == 409 && settled == "succeeded" && replay.replayed == "true", 3)

	d.scenario("The connection drops after the refund was applied: unknown, reconciled, still one refund")
	d.intended++
	d.sb.InjectFault(sandbox.Fault{Path: "/refunds", Fault: "drop_after"})
	lost := d.call("demo-refund-0004", args(300))
	d.show("POST key demo-refund-0004", lost)
	settled = d.waitSettled("demo-refund-0004")
	replay = d.call("demo-refund-0004", args(300))
	d.show("retry after reconciliation", replay)
	d.check(lost.status == 504 && settled == "succeeded" && replay.replayed == "true", 4)

	d.scenario("An agent sends an email where the order id belongs, and a decimal amount")
	bad := d.call("demo-refund-0005", `{"order_id":"jane@example.com","amount_minor":9.99,"currency":"EUR","reason":"customer_request"}`)
	d.show("POST key demo-refund-0005", bad)
	d.check(bad.status == 422 && strings.Contains(bad.body, `"/order_id"`) && strings.Contains(bad.body, `"/amount_minor"`), 4)
}

func (d *demo) waitEffects(n int) {
	deadline := time.Now().Add(10 * time.Second)
	for d.sb.EffectCount() < n && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
}

// waitSettled lets the background reconciler settle an unknown action and
// reports the state it reached.
func (d *demo) waitSettled(id string) string {
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get(d.gw + "/v1/actions/" + id)
		state := ""
		if err == nil {
			var rec struct {
				State string `json:"state"`
			}
			json.NewDecoder(resp.Body).Decode(&rec)
			resp.Body.Close()
			state = rec.State
		}
		if state != "unknown" && state != "running" || time.Now().After(deadline) {
			fmt.Fprintf(d.w, "   the reconciler looked the key up downstream: action is now %s\n", state)
			return state
		}
		time.Sleep(50 * time.Millisecond)
	}
}
