package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// ReplicaSetConfig shapes a ReplicaSet. The zero value is a primary with
// one synchronous standby and synchronous_commit on.
type ReplicaSetConfig struct {
	// Async makes the standby asynchronous (synchronous_standby_names
	// empty): commits do not wait for it.
	Async bool
	// SynchronousCommit is the primary's synchronous_commit. Defaults to
	// "on"; "local" makes commits skip the standby even when it is named.
	SynchronousCommit string
}

// ReplicaSet is a throwaway primary with one streaming standby (Debian's
// PostgreSQL: initdb, pg_basebackup -R, synchronous_standby_names), on two
// loopback ports, that a test can fail over: KillPrimary, Promote, then
// Rejoin the old primary as the new primary's standby (pg_rewind, or a
// fresh base backup when that fails). The standby replicates through a
// link the test can stall (StallReplication), so that it falls behind.
//
// Both servers run with fsync, full_page_writes and synchronous_commit on:
// the settings a production ledger would use. Its methods are not safe for
// concurrent use.
type ReplicaSet struct {
	cfg     ReplicaSetConfig
	nodes   [2]*Cluster
	primary int   // index into nodes
	link    *link // the standby's replication connection; nil when there is no standby
	standby bool  // nodes[1-primary] runs as a standby
}

// haConf is appended to the primary's postgresql.conf (and so copied to
// every base backup), not passed on the command line: pg_rewind's
// single-user crash recovery reads only the files, and would otherwise
// record wal_log_hints off. The settings a failover changes
// (synchronous_standby_names, synchronous_commit) are in
// postgresql.auto.conf, where ALTER SYSTEM and a reload change them.
const haConf = `
# toolgate pgtest replica set
max_connections = 300
shared_buffers = 64MB
wal_log_hints = on              # pg_rewind needs it
wal_keep_size = 512MB
max_wal_senders = 10
hot_standby = on
wal_retrieve_retry_interval = 200ms
`

// haSettings are the command-line settings of node name.
func haSettings(name string) []string { return []string{"-c", "cluster_name=" + name} }

func nodeName(i int) string { return fmt.Sprintf("node%d", i) }

// StartReplicaSet creates both servers and waits until the standby streams
// (and, when synchronous, is the primary's synchronous standby).
func StartReplicaSet(cfg ReplicaSetConfig) (_ *ReplicaSet, err error) {
	if cfg.SynchronousCommit == "" {
		cfg.SynchronousCommit = "on"
	}
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	rs := &ReplicaSet{cfg: cfg}
	defer func() {
		if err != nil {
			rs.Stop()
		}
	}()
	for i := range rs.nodes {
		dir, err := os.MkdirTemp("", "toolgate-pgtest-"+nodeName(i)+"-")
		if err != nil {
			return nil, err
		}
		rs.nodes[i] = &Cluster{bin: bin, dir: dir, args: haSettings(nodeName(i))}
		if err := rs.nodes[i].prepare(); err != nil {
			return nil, err
		}
	}
	p := rs.nodes[0]
	if err := p.initData(); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(p.data(), "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return nil, err
	}
	_, err = f.WriteString(haConf)
	if err := errors.Join(err, f.Close()); err != nil {
		return nil, err
	}
	if err := p.start(); err != nil {
		return nil, err
	}
	names := "*"
	if cfg.Async {
		names = ""
	}
	if err := execSQL(p.DSN, fmt.Sprintf(`ALTER SYSTEM SET synchronous_commit = %s`, quoteLiteral(cfg.SynchronousCommit))); err != nil {
		return nil, err
	}
	if err := rs.setSyncNames(p, names); err != nil {
		return nil, err
	}
	if err := rs.follow(rs.nodes[1], p, true); err != nil {
		return nil, err
	}
	return rs, nil
}

// DSN names both servers, read-write sessions only: whichever is the
// primary answers.
func (rs *ReplicaSet) DSN() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d,127.0.0.1:%d/postgres?sslmode=disable&target_session_attrs=read-write",
		rs.nodes[0].port, rs.nodes[1].port)
}

// Primary is the server that is the primary now.
func (rs *ReplicaSet) Primary() *Cluster { return rs.nodes[rs.primary] }

// Standby is the other server (which may be down: see KillPrimary).
func (rs *ReplicaSet) Standby() *Cluster { return rs.nodes[1-rs.primary] }

// StallReplication holds back every byte the primary sends to the standby
// from now on: the standby falls behind, and with a synchronous standby
// every commit waits. Promote, Rejoin and KillPrimary end the stall.
func (rs *ReplicaSet) StallReplication() {
	if rs.link != nil {
		rs.link.stall()
	}
}

// ResumeReplication ends a stall: what was held is delivered.
func (rs *ReplicaSet) ResumeReplication() {
	if rs.link != nil {
		rs.link.resume()
	}
}

// KillPrimary SIGKILLs every process of the primary at once. WAL the
// replication link still held (see StallReplication) is lost with it.
func (rs *ReplicaSet) KillPrimary() error {
	if rs.link != nil {
		rs.link.close() // the held WAL never left the dead machine
		rs.link = nil
	}
	rs.Primary().Kill()
	return nil
}

// Promote makes the standby the primary (pg_ctl promote) and waits until
// it takes writes. A synchronous set's new primary has no standby yet, so
// synchronous_standby_names is emptied first (commits would otherwise wait
// for one): until Rejoin, commits are durable on the new primary alone.
func (rs *ReplicaSet) Promote() error {
	if !rs.standby {
		return errors.New("pgtest: no standby to promote")
	}
	if rs.link != nil {
		rs.link.close()
		rs.link = nil
	}
	s := rs.Standby()
	if err := rs.setSyncNames(s, ""); err != nil {
		return fmt.Errorf("promote: %w", err)
	}
	if err := s.run("pg_ctl", "promote", "-D", s.data(), "-w", "-t", "60"); err != nil {
		return fmt.Errorf("promote: %w", err)
	}
	if err := waitFor(30*time.Second, func(ctx context.Context) error {
		var rec bool
		if err := queryRow(ctx, s.DSN, `SELECT pg_is_in_recovery()`, &rec); err != nil {
			return err
		}
		if rec {
			return errors.New("still in recovery")
		}
		return nil
	}); err != nil {
		return fmt.Errorf("promote %s: %w", s.DSN, err)
	}
	rs.primary, rs.standby = 1-rs.primary, false
	return nil
}

// Rejoin makes the old primary, which must be down, the new primary's
// standby: pg_rewind from the new primary, or a fresh base backup when
// pg_rewind fails. It waits until the standby streams (and, when
// synchronous, is the synchronous standby again). It returns how the data
// was brought back: "pg_rewind" or "base backup (pg_rewind: …)".
func (rs *ReplicaSet) Rejoin() (string, error) {
	if rs.standby {
		return "", errors.New("pgtest: the replica set already has a standby")
	}
	old, p := rs.Standby(), rs.Primary()
	if old.proc != nil {
		return "", errors.New("pgtest: the old primary still runs")
	}
	// pg_rewind reads the source's timeline from its control file, which
	// the promotion updates only at the next checkpoint.
	if err := execSQL(p.DSN, `CHECKPOINT`); err != nil {
		return "", fmt.Errorf("rejoin: %w", err)
	}
	how := "pg_rewind"
	source := fmt.Sprintf("host=127.0.0.1 port=%d user=postgres dbname=postgres", p.port)
	if err := old.run("pg_rewind", "--target-pgdata", old.data(), "--source-server", source, "--no-sync"); err != nil {
		how = "base backup (" + strings.ReplaceAll(lastLines(err.Error(), 1), "\n", " ") + ")"
		if err := os.RemoveAll(old.data()); err != nil {
			return "", err
		}
		if err := rs.follow(old, p, true); err != nil {
			return "", fmt.Errorf("rejoin by base backup: %w", err)
		}
		return how, nil
	}
	if err := rs.follow(old, p, false); err != nil {
		return "", fmt.Errorf("rejoin after pg_rewind: %w", err)
	}
	return how, nil
}

// follow starts s as the streaming standby of p (after a fresh base
// backup when backup is set) through a new link, and waits until it
// streams; for a synchronous set it names it in p's
// synchronous_standby_names and waits until it is synchronous.
func (rs *ReplicaSet) follow(s, p *Cluster, backup bool) error {
	if backup {
		if err := s.run("pg_basebackup", "-h", "127.0.0.1", "-p", fmt.Sprint(p.port), "-U", "postgres",
			"-D", s.data(), "-X", "stream", "-c", "fast", "-R", "--no-sync"); err != nil {
			return err
		}
	}
	l, err := newLink(fmt.Sprintf("127.0.0.1:%d", p.port))
	if err != nil {
		return err
	}
	name := nodeName(indexOf(rs.nodes, s))
	if err := configureStandby(s, l.port(), name); err != nil {
		l.close()
		return err
	}
	if err := s.start(); err != nil {
		l.close()
		return err
	}
	rs.link, rs.standby = l, true
	if err := waitFor(60*time.Second, func(ctx context.Context) error {
		var n int
		if err := queryRow(ctx, p.DSN, `SELECT count(*) FROM pg_stat_replication WHERE application_name = $1 AND state = 'streaming'`, &n, name); err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("%s does not stream", name)
		}
		return nil
	}); err != nil {
		return err
	}
	if rs.cfg.Async {
		return nil
	}
	if err := rs.setSyncNames(p, "*"); err != nil {
		return err
	}
	return waitFor(60*time.Second, func(ctx context.Context) error {
		var st string
		if err := queryRow(ctx, p.DSN, `SELECT coalesce(max(sync_state), '') FROM pg_stat_replication WHERE application_name = $1`, &st, name); err != nil {
			return err
		}
		if st != "sync" {
			return fmt.Errorf("%s is %q, not sync", name, st)
		}
		return nil
	})
}

func indexOf(nodes [2]*Cluster, c *Cluster) int {
	if nodes[1] == c {
		return 1
	}
	return 0
}

// configureStandby makes s a standby of the server at 127.0.0.1:port:
// standby.signal, and primary_conninfo in postgresql.auto.conf (replacing
// the one pg_basebackup -R or the source's configuration left).
func configureStandby(s *Cluster, port int, name string) error {
	auto := filepath.Join(s.data(), "postgresql.auto.conf")
	b, err := os.ReadFile(auto)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	var keep []string
	for _, line := range strings.Split(string(b), "\n") {
		if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "primary_conninfo") {
			keep = append(keep, line)
		}
	}
	keep = append(keep, fmt.Sprintf("primary_conninfo = 'host=127.0.0.1 port=%d user=postgres application_name=%s'", port, name))
	for _, f := range []struct {
		path, text string
	}{{auto, strings.Join(keep, "\n") + "\n"}, {filepath.Join(s.data(), "standby.signal"), ""}} {
		if err := os.WriteFile(f.path, []byte(f.text), 0o600); err != nil {
			return err
		}
		if s.cred != nil {
			if err := os.Chown(f.path, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
				return err
			}
		}
	}
	return nil
}

// SetSyncNames sets the primary's synchronous_standby_names and reloads
// it. Naming a standby that is not connected under that application_name
// (the standby streams as node0 or node1) makes every commit that writes
// wait for one that never comes: the misnamed standby of a real set-up.
func (rs *ReplicaSet) SetSyncNames(names string) error { return rs.setSyncNames(rs.Primary(), names) }

// StandbyName is the application_name the standby streams under.
func (rs *ReplicaSet) StandbyName() string { return nodeName(1 - rs.primary) }

// setSyncNames sets synchronous_standby_names on c and reloads it (a
// standby keeps it for when it is promoted).
func (rs *ReplicaSet) setSyncNames(c *Cluster, names string) error {
	if err := execSQL(c.DSN, `ALTER SYSTEM SET synchronous_standby_names = `+quoteLiteral(names)); err != nil {
		return err
	}
	return execSQL(c.DSN, `SELECT pg_reload_conf()`)
}

// Stop stops both servers and removes their directories.
func (rs *ReplicaSet) Stop() error {
	if rs.link != nil {
		rs.link.close()
		rs.link = nil
	}
	var errs []error
	for _, c := range rs.nodes {
		if c != nil {
			errs = append(errs, c.Stop())
		}
	}
	return errors.Join(errs...)
}

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// waitFor retries check (each try bounded by 5 s) until it succeeds or
// the time is up, and returns its last error.
func waitFor(d time.Duration, check func(context.Context) error) error {
	deadline := time.Now().Add(d)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := check(ctx)
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// queryRow runs one query on a fresh connection and scans its row.
func queryRow(ctx context.Context, dsn, sql string, dest any, args ...any) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	return conn.QueryRow(ctx, sql, args...).Scan(dest)
}

// String describes the topology, for reports: "primary + synchronous
// standby (synchronous_commit=on)".
func (rs *ReplicaSet) String() string {
	kind := "synchronous"
	if rs.cfg.Async {
		kind = "asynchronous"
	}
	return fmt.Sprintf("primary + %s standby (synchronous_commit=%s)", kind, rs.cfg.SynchronousCommit)
}

// NewReplicaSet starts a replica set for t and stops it when t ends. It
// skips t when PostgreSQL's binaries are not installed, or fails it when
// the environment says CI=true, so CI can never pass by skipping.
func NewReplicaSet(t testing.TB, cfg ReplicaSetConfig) *ReplicaSet {
	t.Helper()
	if _, err := BinDir(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("a replica set needs PostgreSQL's binaries (CI=true: failing instead of skipping): %v", err)
		}
		t.Skip(err)
	}
	rs, err := StartReplicaSet(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rs.Stop() })
	return rs
}
