package harness

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/toolgate/toolgate/sandbox"
)

// pgCut is a loopback TCP proxy in front of PostgreSQL for one gateway:
// Cut drops every connection through it and refuses new ones for a while,
// as a network between that gateway and its ledger that fails. The
// PostgreSQL server sees the sessions end (their advisory locks go); the
// gateway process lives on.
type pgCut struct {
	target string
	ln     net.Listener

	mu      sync.Mutex
	conns   []net.Conn
	refused time.Time // refuse new connections until then
}

func newPGCut(t *testing.T, target string) *pgCut {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &pgCut{target: target, ln: ln}
	go p.accept()
	t.Cleanup(func() { ln.Close(); p.Cut(0) })
	return p
}

func (p *pgCut) addr() string { return p.ln.Addr().String() }

func (p *pgCut) accept() {
	for {
		down, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		refused := time.Now().Before(p.refused)
		p.mu.Unlock()
		if refused {
			down.Close()
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			down.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, up, down)
		p.mu.Unlock()
		go func() { io.Copy(up, down); up.Close(); down.Close() }()
		go func() { io.Copy(down, up); up.Close(); down.Close() }()
	}
}

// Cut closes every connection through the proxy and refuses new ones for d.
func (p *pgCut) Cut(d time.Duration) {
	p.mu.Lock()
	p.refused = time.Now().Add(d)
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

// sendWindowPostgres returns a DSN of a PostgreSQL server in a schema of its
// own: TOOLGATE_TEST_POSTGRES's server when set, else a throwaway cluster.
func sendWindowPostgres(t *testing.T, schema string) string {
	t.Helper()
	if dsn := os.Getenv("TOOLGATE_TEST_POSTGRES"); dsn != "" {
		schema += "_" + strings.ReplaceAll(time.Now().UTC().Format("150405.000000"), ".", "_")
		conn, err := pgx.Connect(t.Context(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(t.Context(), "CREATE SCHEMA "+schema); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if conn, err := pgx.Connect(context.Background(), dsn); err == nil {
				conn.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
				conn.Close(context.Background())
			}
		})
		return withSearchPath(t, dsn, schema)
	}
	dsn, _ := startPostgres(t)
	return withSearchPath(t, dsn, schema)
}

func withSearchPath(t *testing.T, dsn, schema string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("the PostgreSQL DSN is not a URL: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// through returns dsn with its host and port replaced by addr.
func through(t *testing.T, dsn, addr string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = addr
	return u.String()
}

// sendWindowConfig: a binding whose calls may take 8s, a lookup that
// settles 1s after a request can no longer land, a reconciler every second.
func sendWindowConfig(t *testing.T, listen, dsn, downstream, extra string) string {
	return fmt.Sprintf(`listen: %s
tools_dir: %s
ledger: %q
reconcile_interval: 1s
join_timeout: 1s
%sbindings:
  payments.issue_refund:
    url: %s/refunds
    timeout: 8s
    lookup: {url: "%s/refunds/by-key/{downstream_key}"}
    not_started_statuses: [503]
    settle_after: 1s
`, listen, toolsDir(t), dsn, extra, downstream, downstream)
}

// TestSharedReplicaNoDuplicate: gateway A's call is in flight (held by the
// downstream) when its ledger connections drop for 3 s. Gateway B then
// takes over A's claims: through the replica lock when both share a
// replica_id, through the lease when A cannot renew a lease shorter than
// the call. While A's request may still land, B must neither declare the
// claim lost nor trust a lookup's "not found", so the agent's retries
// through B never run the action again: the downstream counts exactly one
// refund once A's request is let through.
func TestSharedReplicaNoDuplicate(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real gateway processes and PostgreSQL")
	}
	t.Parallel()
	cases := []struct {
		name, schema, extra string
	}{
		{"shared replica_id", "sendwindow_replica", "replica_id: shared-1\nlease: 10s\n"},
		{"lease shorter than the call", "sendwindow_lease", "lease: 2s\n"},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel() // each its own schema, gateways, cut and sandbox
			dsn := sendWindowPostgres(t, tt.schema)
			host, err := url.Parse(dsn)
			if err != nil {
				t.Fatal(err)
			}
			cut := newPGCut(t, host.Host)
			sb, downstream := startSandbox(t, 1)
			binary(t)

			addrA, err := freeAddr()
			if err != nil {
				t.Fatal(err)
			}
			a := startHAGateway(t, addrA, sendWindowConfig(t, addrA, through(t, dsn, cut.addr()), downstream, tt.extra))
			waitUntil(t, 30*time.Second, a.logs, func() bool { s, _ := a.get("/readyz"); return s == http.StatusOK })
			addrB, err := freeAddr()
			if err != nil {
				t.Fatal(err)
			}
			b := startHAGateway(t, addrB, sendWindowConfig(t, addrB, dsn, downstream, tt.extra))
			waitUntil(t, 30*time.Second, b.logs, func() bool { s, _ := b.get("/healthz"); return s == http.StatusOK })

			if err := sb.InjectFault(sandbox.Fault{Path: "/refunds", Method: http.MethodPost, Fault: sandbox.FaultHold, Count: 1}); err != nil {
				t.Fatal(err)
			}
			const key = "shared-replica-0001"
			client := &http.Client{Timeout: time.Minute}
			firstDone := make(chan string, 1)
			go func() {
				status, body := a.call(client, key, orderID(0))
				firstDone <- fmt.Sprintf("%d %s", status, body)
			}()
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			if err := sb.WaitHeld(ctx, 1); err != nil {
				t.Fatalf("the call did not reach the downstream: %v\n%s", err, a.logs)
			}
			sent := time.Now()
			cut.Cut(3 * time.Second)

			// B serves (it holds the replica id, or never needed it); give it
			// the time today's takeover needed to settle a "not found" and
			// retry through it meanwhile, as an agent would.
			waitUntil(t, 20*time.Second, b.logs, func() bool { s, _ := b.get("/readyz"); return s == http.StatusOK })
			var answers []string
			for time.Since(sent) < 5*time.Second {
				status, _ := b.call(client, key, orderID(0))
				answers = append(answers, fmt.Sprintf("%d", status))
				time.Sleep(300 * time.Millisecond)
			}
			// A's request lands, inside its 8 s timeout.
			if n := sb.Release(); n != 1 {
				t.Fatalf("released %d requests, want A's one", n)
			}
			t.Logf("A's call: %s", <-firstDone)
			var final string
			waitUntil(t, 40*time.Second, b.logs, func() bool {
				status, body := b.call(client, key, orderID(0))
				final = fmt.Sprintf("%d %s", status, body)
				return status == http.StatusCreated
			})
			t.Logf("retries through B while A's request was held: %s; then %s", strings.Join(answers, " "), final)
			if got := sb.EffectCount(); got != 1 {
				act, _ := b.action(key)
				t.Fatalf("%d refunds for one key, want 1; the action: %+v\nA's log:\n%s\nB's log:\n%s", got, act, a.logs, b.logs)
			}
			act, err := b.action(key)
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range act.History {
				if h.From == "unknown" && h.To == "pending" {
					t.Errorf("the action went back to pending (%s) although its request landed", h.Reason)
				}
			}
		})
	}
}
