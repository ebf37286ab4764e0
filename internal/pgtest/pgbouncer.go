package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/toolgate/toolgate/deploy"
)

// PgBouncer is a real pgbouncer (Debian's package) in transaction pooling
// mode, started from the sample configuration deploy/postgres/pgbouncer.ini
// in front of one PostgreSQL server, on a free loopback port. It runs as
// the "postgres" user when the tests run as root (pgbouncer refuses root).
type PgBouncer struct {
	// DSN reaches the backend's database through the pooler, with the
	// backend's user and password (scram-sha-256 to the pooler).
	DSN string
	// Backend is the DSN the pooler was started for (the direct
	// connection).
	Backend string

	dir  string
	proc *exec.Cmd
	done chan error
}

// PgBouncerBin finds pgbouncer, in PATH or /usr/sbin.
func PgBouncerBin() (string, error) {
	if p, err := exec.LookPath("pgbouncer"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/sbin/pgbouncer"); err == nil {
		return "/usr/sbin/pgbouncer", nil
	}
	return "", errors.New("pgbouncer is not installed (apt-get install pgbouncer)")
}

// NewPgBouncer starts a PgBouncer in front of backend (a URL DSN) for t and
// stops it when t ends. Without pgbouncer the test skips, or fails under
// CI=true. Each of extra is a line appended to the [pgbouncer] section of
// the sample configuration (a later line overrides an earlier one, e.g.
// "pool_mode = statement").
func NewPgBouncer(t testing.TB, backend string, extra ...string) *PgBouncer {
	t.Helper()
	if _, err := PgBouncerBin(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err.Error() + " (CI=true: failing instead of skipping)")
		}
		t.Skip(err.Error())
	}
	b, err := StartPgBouncer(backend, extra...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("pgbouncer's log:\n%s", b.Log())
		}
		b.Stop()
	})
	return b
}

// StartPgBouncer starts a PgBouncer in front of backend (a URL DSN), with
// extra lines appended to the sample configuration (see NewPgBouncer).
func StartPgBouncer(backend string, extra ...string) (_ *PgBouncer, err error) {
	bin, err := PgBouncerBin()
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(backend)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return nil, fmt.Errorf("pgtest: pgbouncer needs a postgres:// URL backend, not %q", backend)
	}
	user := u.User.Username()
	pass, hasPass := u.User.Password()
	if !hasPass {
		// The backend trusts; the pooler still asks the client for one.
		pass = "pgtest"
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		return nil, fmt.Errorf("pgtest: pgbouncer backend %q: %w", u.Host, err)
	}
	db := strings.TrimPrefix(u.Path, "/")
	dir, err := os.MkdirTemp("", "toolgate-pgbouncer-")
	if err != nil {
		return nil, err
	}
	b := &PgBouncer{dir: dir, Backend: backend}
	defer func() {
		if err != nil {
			b.Stop()
		}
	}()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	listen := l.Addr().(*net.TCPAddr).Port
	l.Close()
	ini, err := deploy.Fill(deploy.PgBouncerINI, map[string]string{
		"DB_NAME": db, "PG_HOST": host, "PG_PORT": port, "PG_DBNAME": db,
		"LISTEN_ADDR": "127.0.0.1", "LISTEN_PORT": strconv.Itoa(listen), "DIR": dir,
	})
	if err != nil {
		return nil, err
	}
	for _, line := range extra {
		ini += line + "\n"
	}
	quote := func(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
	files := map[string]string{
		"pgbouncer.ini": ini,
		"userlist.txt":  quote(user) + " " + quote(pass) + "\n",
	}
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		if cred, err = serverUser(); err != nil {
			return nil, err
		}
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, err
		}
	}
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			return nil, err
		}
		if cred != nil {
			os.Chown(p, int(cred.Uid), int(cred.Gid))
		}
	}
	cmd := exec.Command(bin, filepath.Join(dir, "pgbouncer.ini"))
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	out, err := os.Create(filepath.Join(dir, "stdout.log"))
	if err != nil {
		return nil, err
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start pgbouncer: %w", err)
	}
	b.proc, b.done = cmd, make(chan error, 1)
	go func() { b.done <- cmd.Wait() }()
	cu := *u
	cu.User = url.UserPassword(user, pass)
	cu.Host = net.JoinHostPort("127.0.0.1", strconv.Itoa(listen))
	b.DSN = cu.String()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, cerr := pgx.Connect(ctx, b.DSN)
		cancel()
		if cerr == nil {
			conn.Close(context.Background())
			return b, nil
		}
		select {
		case werr := <-b.done:
			b.done <- werr
			return nil, fmt.Errorf("pgbouncer exited (%v): %s", werr, b.Log())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("pgbouncer did not accept connections within 30s: %v: %s", cerr, b.Log())
		}
	}
}

// Log returns the end of the pooler's log.
func (b *PgBouncer) Log() string {
	var s string
	for _, f := range []string{"pgbouncer.log", "stdout.log"} {
		if data, err := os.ReadFile(filepath.Join(b.dir, f)); err == nil {
			s += string(data)
		}
	}
	return lastLines(s, 20)
}

// Stop stops the pooler and removes its directory.
func (b *PgBouncer) Stop() error {
	if b.proc != nil {
		b.proc.Process.Signal(syscall.SIGINT)
		select {
		case <-b.done:
		case <-time.After(10 * time.Second):
			b.proc.Process.Kill()
			<-b.done
		}
		b.proc = nil
	}
	return os.RemoveAll(b.dir)
}

// Logins counts the client logins the pooler logged: a test can see that
// its clients went through it.
func (b *PgBouncer) Logins() int {
	data, _ := os.ReadFile(filepath.Join(b.dir, "pgbouncer.log"))
	return strings.Count(string(data), "login attempt")
}

// Alive reports whether the pooler's process still runs.
func (b *PgBouncer) Alive() bool {
	if b.proc == nil {
		return false
	}
	select {
	case err := <-b.done:
		b.done <- err
		return false
	default:
		return true
	}
}
