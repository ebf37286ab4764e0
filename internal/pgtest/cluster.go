package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// Cluster is a throwaway PostgreSQL cluster in a temporary directory,
// listening on one loopback port. Stop it when done. Shutdown, Start and
// Restart take the server down and up again on the same port and data, as
// a database restart in a fault test. Its methods are not safe for
// concurrent use.
type Cluster struct {
	DSN string // superuser "postgres", database "postgres", trust auth

	bin  string   // the directory of initdb and postgres
	dir  string   // removed by Stop
	args []string // the postmaster's settings (-c name=value …)
	port int
	cred *syscall.Credential // nil when not running as root
	proc *exec.Cmd
	done chan error // the postmaster's exit
}

// fastSettings tune a throwaway cluster for speed, not durability.
var fastSettings = []string{"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
	"-c", "max_connections=300", "-c", "shared_buffers=64MB"}

// BinDir returns the newest /usr/lib/postgresql/*/bin that has initdb and
// postgres, or an error saying none is installed.
func BinDir() (string, error) {
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	var dirs []string
	for _, m := range matches {
		d := filepath.Dir(m)
		if _, err := os.Stat(filepath.Join(d, "postgres")); err == nil {
			dirs = append(dirs, d)
		}
	}
	if len(dirs) == 0 {
		return "", errors.New("no /usr/lib/postgresql/*/bin/initdb")
	}
	version := func(d string) int {
		v, _ := strconv.Atoi(filepath.Base(filepath.Dir(d)))
		return v
	}
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	return dirs[0], nil
}

// StartCluster creates and starts a throwaway cluster (see the package doc).
func StartCluster() (*Cluster, error) {
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "toolgate-pgtest-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{bin: bin, dir: dir, args: fastSettings}
	if err := c.init(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := c.start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return c, nil
}

func (c *Cluster) init() error {
	if err := c.prepare(); err != nil {
		return err
	}
	return c.initData()
}

// prepare hands c.dir to the server user (when running as root) and picks
// a free loopback port.
func (c *Cluster) prepare() error {
	if os.Geteuid() == 0 {
		cred, err := serverUser()
		if err != nil {
			return err
		}
		c.cred = cred
		if err := os.Chown(c.dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return err
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	c.port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	c.DSN = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.port)
	return nil
}

// run runs one of the server's programs (initdb, pg_ctl, …) as the server
// user, in c.dir.
func (c *Cluster) run(prog string, args ...string) error {
	cmd := exec.Command(filepath.Join(c.bin, prog), args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred, Pdeathsig: syscall.SIGKILL}
	cmd.Dir = c.dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %v: %s", prog, err, lastLines(string(out), 10))
	}
	return nil
}

// Port is the loopback port the server listens on.
func (c *Cluster) Port() int { return c.port }

func (c *Cluster) data() string { return filepath.Join(c.dir, "data") }
func (c *Cluster) log() string  { return filepath.Join(c.dir, "postgres.log") }

// serverUser returns the credentials of the "postgres" user, creating a
// system user of that name when there is none.
func serverUser() (*syscall.Credential, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		if out, err := exec.Command("useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", "postgres").CombinedOutput(); err != nil {
			return nil, fmt.Errorf("running as root and there is no postgres user; useradd: %v: %s", err, out)
		}
		if u, err = user.Lookup("postgres"); err != nil {
			return nil, err
		}
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, err
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
}

// start runs the postmaster and waits until it accepts connections.
func (c *Cluster) start() error {
	logf, err := os.OpenFile(c.log(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	if c.cred != nil {
		os.Chown(c.log(), int(c.cred.Uid), int(c.cred.Gid))
	}
	cmd := exec.Command(filepath.Join(c.bin, "postgres"), append([]string{"-D", c.data(),
		"-p", strconv.Itoa(c.port), "-h", "127.0.0.1", "-k", ""}, c.args...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// The postmaster dies with this process even when the tests are killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	c.proc = cmd
	c.done = make(chan error, 1)
	go func() { c.done <- cmd.Wait() }()

	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, c.DSN)
		cancel()
		if err == nil {
			conn.Close(context.Background())
			return nil
		}
		select {
		case werr := <-c.done:
			c.done <- werr
			return fmt.Errorf("postgres exited (%v): %s", werr, c.tail())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			c.kill()
			return fmt.Errorf("postgres did not accept connections within a minute: %v: %s", err, c.tail())
		}
	}
}

func (c *Cluster) tail() string {
	b, _ := os.ReadFile(c.log())
	return lastLines(string(b), 10)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Shutdown stops the server (a fast shutdown: open transactions roll back,
// connections close; killed after 20 seconds) and keeps its data for Start.
// Clients then see their connections closed and new ones refused.
func (c *Cluster) Shutdown() error {
	if c.proc == nil {
		return nil
	}
	c.proc.Process.Signal(syscall.SIGINT)
	var err error
	select {
	case err = <-c.done:
	case <-time.After(20 * time.Second):
		c.kill()
	}
	c.proc = nil
	if err != nil && !strings.Contains(err.Error(), "exit status") {
		return err
	}
	return nil
}

// Start starts a server that Shutdown stopped, on the same port and data,
// and waits until it accepts connections.
func (c *Cluster) Start() error {
	if c.proc != nil {
		return errors.New("pgtest: cluster already running")
	}
	return c.start()
}

// kill SIGKILLs the postmaster and every process it started. Each of them
// runs in a session of its own (PostgreSQL calls setsid), so they are
// found by their parent: the postmaster is stopped first, so that it
// forks nothing more, then its children and it are killed.
func (c *Cluster) kill() {
	pm := c.proc.Process.Pid
	syscall.Kill(pm, syscall.SIGSTOP)
	kids := children(pm)
	for _, pid := range kids {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	syscall.Kill(pm, syscall.SIGKILL)
	<-c.done
	// A process dies on its way back to user space after SIGKILL; wait
	// until each is gone (or a zombie), so that none serves any more.
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range kids {
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
	}
}

// alive reports a process that exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z' && s[i+2] != 'X'
}

// children lists the processes whose parent is pid, from
// /proc/PID/task/PID/children (one read), or else by scanning /proc.
func children(pid int) []int {
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid)); err == nil {
		var out []int
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
		return out
	}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var out []int
	for _, st := range stats {
		b, err := os.ReadFile(st)
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces and parentheses.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 {
			continue
		}
		if ppid, _ := strconv.Atoi(f[1]); ppid == pid {
			child, _ := strconv.Atoi(filepath.Base(filepath.Dir(st)))
			out = append(out, child)
		}
	}
	return out
}

// Kill SIGKILLs every process of the server at once (the postmaster, its
// backends, the WAL writer and senders), as a machine that dies would
// stop: nothing is flushed, no connection is closed politely. The data
// stays for Start (which runs crash recovery).
func (c *Cluster) Kill() {
	if c.proc == nil {
		return
	}
	c.kill()
	c.proc = nil
}

// Restart is Shutdown then Start.
func (c *Cluster) Restart() error {
	if err := c.Shutdown(); err != nil {
		return err
	}
	return c.Start()
}

// Stop shuts the server down and removes its directory.
func (c *Cluster) Stop() error {
	err := c.Shutdown()
	return errors.Join(err, os.RemoveAll(c.dir))
}
