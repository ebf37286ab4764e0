package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/deploy"
)

// PatroniConfig shapes a PatroniSet. Zero values take the defaults.
type PatroniConfig struct {
	// TTL, LoopWait and RetryTimeout are Patroni's, in seconds (defaults
	// 6, 1 and 2: a bounded test; Patroni's own defaults are 30, 10, 10).
	TTL, LoopWait, RetryTimeout int
}

// PatroniSet is a two-node Patroni 3 cluster (Debian's patroni package)
// with one etcd 3.4 (etcd-server) as its DCS, on loopback ports, each node
// started from the sample configuration deploy/postgres/patroni.yml
// (synchronous_mode on, pg_rewind). Patroni and PostgreSQL run as the
// "postgres" user when the tests run as root. Patroni decides and
// performs every promotion; the set only kills, restarts and asks for
// switchovers. Its methods are not safe for concurrent use.
type PatroniSet struct {
	cfg      PatroniConfig
	dir      string
	bin      string
	password string
	cred     *syscall.Credential
	etcd     *exec.Cmd
	etcdDone chan error
	etcdURL  string
	nodes    [2]*patroniNode
	killed   int // the node KillPrimary killed, or -1
	old      int // the leader before the last failover or switchover
}

type patroniNode struct {
	name     string
	dir      string
	pgPort   int
	restPort int
	cmd      *exec.Cmd
	done     chan error
}

// PatroniBins finds patroni, patronictl and etcd.
func PatroniBins() error {
	for _, b := range []string{"patroni", "patronictl", "etcd"} {
		if _, err := exec.LookPath(b); err != nil {
			return fmt.Errorf("%s is not installed (apt-get install patroni etcd-server)", b)
		}
	}
	_, err := BinDir()
	return err
}

// NewPatroniSet starts a PatroniSet for t and stops it when t ends.
// Without patroni, etcd or PostgreSQL the test skips, or fails under
// CI=true.
func NewPatroniSet(t testing.TB, cfg PatroniConfig) *PatroniSet {
	t.Helper()
	if err := PatroniBins(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err.Error() + " (CI=true: failing instead of skipping)")
		}
		t.Skip(err.Error())
	}
	p, err := StartPatroniSet(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("patroni's logs:\n%s", p.Logs())
		}
		p.Stop()
	})
	return p
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// StartPatroniSet starts etcd, then the first node (which bootstraps and
// leads), then the second (a base backup of the first), and returns once
// the second is the leader's synchronous standby.
func StartPatroniSet(cfg PatroniConfig) (_ *PatroniSet, err error) {
	if cfg.TTL == 0 {
		cfg.TTL, cfg.LoopWait, cfg.RetryTimeout = 6, 1, 2
	}
	if err := PatroniBins(); err != nil {
		return nil, err
	}
	bin, _ := BinDir()
	dir, err := os.MkdirTemp("", "toolgate-patroni-")
	if err != nil {
		return nil, err
	}
	p := &PatroniSet{cfg: cfg, dir: dir, bin: bin, password: "pgtest-secret", killed: -1, old: -1}
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w\n%s", err, p.Logs())
			p.Stop()
		}
	}()
	if os.Geteuid() == 0 {
		if p.cred, err = serverUser(); err != nil {
			return nil, err
		}
		os.Chown(dir, int(p.cred.Uid), int(p.cred.Gid))
	}
	if err := p.startEtcd(); err != nil {
		return nil, err
	}
	for i := range p.nodes {
		// Names as a StatefulSet gives them: Patroni double-quotes them in
		// synchronous_standby_names.
		n := &patroniNode{name: fmt.Sprintf("toolgate-db-%d", i), dir: filepath.Join(dir, fmt.Sprintf("node%d", i))}
		if n.pgPort, err = freePort(); err != nil {
			return nil, err
		}
		if n.restPort, err = freePort(); err != nil {
			return nil, err
		}
		if err := os.MkdirAll(n.dir, 0o700); err != nil {
			return nil, err
		}
		if p.cred != nil {
			os.Chown(n.dir, int(p.cred.Uid), int(p.cred.Gid))
		}
		yml, err := deploy.Fill(deploy.PatroniYML, map[string]string{
			"SCOPE": "toolgate-pgtest", "NAME": n.name, "HOST": "127.0.0.1",
			"REST_PORT": strconv.Itoa(n.restPort), "PG_PORT": strconv.Itoa(n.pgPort),
			"ETCD_HOSTS": strings.TrimPrefix(p.etcdURL, "http://"),
			"TTL":        strconv.Itoa(cfg.TTL), "LOOP_WAIT": strconv.Itoa(cfg.LoopWait), "RETRY_TIMEOUT": strconv.Itoa(cfg.RetryTimeout),
			"REPLICATION_USER": "replicator", "REPLICATION_PASSWORD": p.password, "SUPERUSER_PASSWORD": p.password,
			"CLIENT_NET": "127.0.0.1/32", "DATA_DIR": filepath.Join(n.dir, "data"), "BIN_DIR": bin, "DIR": n.dir,
		})
		if err != nil {
			return nil, err
		}
		p.nodes[i] = n
		if err := os.WriteFile(p.config(i), []byte(yml), 0o600); err != nil {
			return nil, err
		}
		if p.cred != nil {
			os.Chown(p.config(i), int(p.cred.Uid), int(p.cred.Gid))
		}
	}
	if err := p.startNode(0); err != nil {
		return nil, err
	}
	if err := p.waitREST(0, "/primary", 90*time.Second); err != nil {
		return nil, fmt.Errorf("the first node did not become the leader: %w", err)
	}
	if err := p.startNode(1); err != nil {
		return nil, err
	}
	if err := p.waitREST(1, "/sync", 90*time.Second); err != nil {
		return nil, fmt.Errorf("the second node did not become the synchronous standby: %w", err)
	}
	return p, nil
}

func (p *PatroniSet) config(i int) string { return filepath.Join(p.nodes[i].dir, "patroni.yml") }

func (p *PatroniSet) startEtcd() error {
	client, err := freePort()
	if err != nil {
		return err
	}
	peer, err := freePort()
	if err != nil {
		return err
	}
	p.etcdURL = fmt.Sprintf("http://127.0.0.1:%d", client)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peer)
	logf, err := os.Create(filepath.Join(p.dir, "etcd.log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command("etcd", "--name", "pgtest", "--data-dir", filepath.Join(p.dir, "etcd"),
		"--listen-client-urls", p.etcdURL, "--advertise-client-urls", p.etcdURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "pgtest="+peerURL, "--initial-cluster-state", "new")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start etcd: %w", err)
	}
	p.etcd, p.etcdDone = cmd, make(chan error, 1)
	go func() { p.etcdDone <- cmd.Wait() }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := probeClient.Get(p.etcdURL + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("etcd did not answer within 30s: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

var probeClient = &http.Client{Timeout: time.Second}

func (p *PatroniSet) startNode(i int) error {
	n := p.nodes[i]
	logf, err := os.OpenFile(filepath.Join(n.dir, "patroni.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command("patroni", p.config(i))
	cmd.Dir = n.dir
	cmd.Env = append(os.Environ(), "HOME="+n.dir, "PYTHONUNBUFFERED=1")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start patroni %s: %w", n.name, err)
	}
	n.cmd, n.done = cmd, make(chan error, 1)
	go func() { n.done <- cmd.Wait() }()
	return nil
}

// rest asks node i's REST API for path and returns the status code.
func (p *PatroniSet) rest(i int, path string) int {
	resp, err := probeClient.Get(fmt.Sprintf("http://127.0.0.1:%d%s", p.nodes[i].restPort, path))
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

func (p *PatroniSet) waitREST(i int, path string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for p.rest(i, path) != 200 {
		if n := p.nodes[i]; n.cmd != nil {
			select {
			case err := <-n.done:
				n.done <- err
				return fmt.Errorf("patroni %s exited: %v", n.name, err)
			default:
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not answer 200 on %s within %s", p.nodes[i].name, path, d)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

// Leader returns the index of the node Patroni made the primary, or -1.
func (p *PatroniSet) Leader() int {
	for i := range p.nodes {
		if p.nodes[i].cmd != nil && p.rest(i, "/primary") == 200 {
			return i
		}
	}
	return -1
}

// DSN names both nodes with target_session_attrs=read-write, as the
// gateways' ledger setting would (superuser "postgres", database
// "postgres").
func (p *PatroniSet) DSN() string {
	return fmt.Sprintf("postgres://postgres:%s@127.0.0.1:%d,127.0.0.1:%d/postgres?sslmode=disable&target_session_attrs=read-write",
		url.QueryEscape(p.password), p.nodes[0].pgPort, p.nodes[1].pgPort)
}

// NodeDSN is the DSN of node i alone.
func (p *PatroniSet) NodeDSN(i int) string {
	return fmt.Sprintf("postgres://postgres:%s@127.0.0.1:%d/postgres?sslmode=disable", url.QueryEscape(p.password), p.nodes[i].pgPort)
}

// TTL is Patroni's ttl, loop_wait and retry_timeout of this set.
func (p *PatroniSet) TTL() (ttl, loopWait, retryTimeout int) {
	return p.cfg.TTL, p.cfg.LoopWait, p.cfg.RetryTimeout
}

// Name is node i's Patroni name.
func (p *PatroniSet) Name(i int) string { return p.nodes[i].name }

// SyncNames reads the leader's synchronous_standby_names, as Patroni
// wrote it.
func (p *PatroniSet) SyncNames() (string, error) {
	i := p.Leader()
	if i < 0 {
		return "", errors.New("no leader")
	}
	var v string
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := queryRow(ctx, p.NodeDSN(i), `SELECT current_setting('synchronous_standby_names')`, &v)
	return v, err
}

// StallReplication does nothing: Patroni's cluster has no link to stall.
func (p *PatroniSet) StallReplication() {}

// KillPrimary SIGKILLs the leader's Patroni and every process of its
// PostgreSQL at once, as a machine that dies: nobody releases the leader
// key, Patroni's ttl must run out.
func (p *PatroniSet) KillPrimary() error {
	i := p.Leader()
	if i < 0 {
		return errors.New("pgtest: no Patroni leader to kill")
	}
	p.killNode(i)
	p.killed, p.old = i, i
	return nil
}

// killNode SIGKILLs node i's Patroni and PostgreSQL.
func (p *PatroniSet) killNode(i int) {
	n := p.nodes[i]
	if n.cmd == nil {
		return
	}
	pat := n.cmd.Process.Pid
	syscall.Kill(pat, syscall.SIGSTOP)
	pm := p.postmaster(i)
	var kids []int
	if pm > 0 {
		syscall.Kill(pm, syscall.SIGSTOP)
		kids = children(pm)
		for _, pid := range kids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		syscall.Kill(pm, syscall.SIGKILL)
	}
	syscall.Kill(pat, syscall.SIGKILL)
	<-n.done
	n.cmd = nil
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range append(kids, pm) {
		for pid > 0 && alive(pid) && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
	}
}

// postmaster is node i's postmaster pid, from postmaster.pid, or 0.
func (p *PatroniSet) postmaster(i int) int {
	b, err := os.ReadFile(filepath.Join(p.nodes[i].dir, "data", "postmaster.pid"))
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, _ := strconv.Atoi(strings.TrimSpace(line))
	if pid > 0 && !alive(pid) {
		return 0
	}
	return pid
}

// Promote promotes nothing: it waits until Patroni has made the other
// node the primary and it takes writes (bounded by 2 minutes).
func (p *PatroniSet) Promote() error {
	other := 1 - p.old
	if err := p.waitREST(other, "/primary", 2*time.Minute); err != nil {
		return err
	}
	return waitFor(30*time.Second, func(ctx context.Context) error {
		var ro bool
		if err := queryRow(ctx, p.NodeDSN(other), `SELECT pg_is_in_recovery()`, &ro); err != nil {
			return err
		}
		if ro {
			return errors.New("still in recovery")
		}
		return nil
	})
}

// Rejoin restarts the killed node's Patroni (after a switchover: nothing
// to restart) and waits until that node is the new leader's synchronous
// standby again; Patroni rewinds it (pg_rewind) when it must.
func (p *PatroniSet) Rejoin() (string, error) {
	how := "patroni"
	if p.killed >= 0 {
		if err := p.startNode(p.killed); err != nil {
			return "", err
		}
		p.killed = -1
		how = "patroni restart (pg_rewind when needed)"
	}
	if err := p.waitREST(p.old, "/sync", 2*time.Minute); err != nil {
		return "", err
	}
	return how, nil
}

// Switchover asks Patroni (patronictl switchover) to hand the leadership
// to the other node, under load; it returns once patronictl does.
func (p *PatroniSet) Switchover() error {
	i := p.Leader()
	if i < 0 {
		return errors.New("pgtest: no Patroni leader to switch over from")
	}
	p.old = i
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "patronictl", "-c", p.config(i), "switchover",
		"--leader", p.nodes[i].name, "--candidate", p.nodes[1-i].name, "--force").CombinedOutput()
	if err != nil {
		return fmt.Errorf("patronictl switchover: %v: %s", err, out)
	}
	return nil
}

// Switchovers is p seen by a failover harness whose "kill" is a planned
// switchover: KillPrimary starts patronictl switchover and returns at
// once (the switchover is under way: the harness times from there),
// Promote waits for patronictl and for the new leader to take writes,
// Rejoin for the old leader to be its synchronous standby.
func (p *PatroniSet) Switchovers() *PatroniSwitchover { return &PatroniSwitchover{p: p} }

// PatroniSwitchover: see PatroniSet.Switchovers.
type PatroniSwitchover struct {
	p    *PatroniSet
	done chan error
}

func (s *PatroniSwitchover) StallReplication() {}

func (s *PatroniSwitchover) KillPrimary() error {
	s.done = make(chan error, 1)
	if s.p.Leader() < 0 {
		return errors.New("pgtest: no Patroni leader to switch over from")
	}
	go func() { s.done <- s.p.Switchover() }()
	return nil
}

func (s *PatroniSwitchover) Promote() error {
	if err := <-s.done; err != nil {
		return err
	}
	return s.p.Promote()
}

func (s *PatroniSwitchover) Rejoin() (string, error) { return s.p.Rejoin() }

// Verb says what KillPrimary does, for a harness's log.
func (s *PatroniSwitchover) Verb() string { return "patronictl switchover of" }

func (p *PatroniSet) String() string {
	return fmt.Sprintf("Patroni 2 nodes, etcd, synchronous_mode, ttl %ds, loop_wait %ds, retry_timeout %ds", p.cfg.TTL, p.cfg.LoopWait, p.cfg.RetryTimeout)
}

// Logs returns the end of every node's Patroni log and etcd's.
func (p *PatroniSet) Logs() string {
	var b strings.Builder
	for _, n := range p.nodes {
		if n == nil {
			continue
		}
		data, _ := os.ReadFile(filepath.Join(n.dir, "patroni.log"))
		fmt.Fprintf(&b, "--- %s patroni.log\n%s\n", n.name, lastLines(string(data), 25))
	}
	data, _ := os.ReadFile(filepath.Join(p.dir, "etcd.log"))
	fmt.Fprintf(&b, "--- etcd.log\n%s\n", lastLines(string(data), 5))
	return b.String()
}

// Stop kills both nodes and etcd and removes the directory.
func (p *PatroniSet) Stop() error {
	for i, n := range p.nodes {
		if n != nil {
			p.killNode(i)
		}
	}
	if p.etcd != nil {
		p.etcd.Process.Kill()
		<-p.etcdDone
		p.etcd = nil
	}
	return os.RemoveAll(p.dir)
}
