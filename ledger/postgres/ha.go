package postgres

import (
	"context"
	"errors"
	"fmt"
	"github.com/toolgate/toolgate/internal/plural"
	"reflect"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/toolgate/toolgate/ledger"
)

// High availability: the store follows a failover by itself.
//
//   - Every connection must be read-write (target_session_attrs=read-write
//     unless the DSN asks for primary), so a multi-host DSN
//     ("host=a,b" or "postgres://a,b/db") connects to whichever host is the
//     primary now, and never reads a standby's possibly stale rows.
//   - A broken connection, a server that shuts down and a read-only error
//     (a session that still reaches a server that is no longer the
//     primary) drop every connection of the pool (at most once a second):
//     the next operations connect afresh, to the new primary.
//   - A commit whose wait for the synchronous standby was cancelled (by
//     QueryTimeout or statement_timeout) is reported by PostgreSQL as a
//     success with a WARNING; the store reports such a write as unavailable
//     (outcome unknown), never as durable.
//   - With Config.StartWithoutPrimary the store opens while no primary
//     answers, and sets itself up once one does.

// requireReadWrite makes every connection of cc read-write: an unset (or
// "any") target_session_attrs becomes read-write; read-write and primary
// are kept; the others, which select standbys, are refused.
func requireReadWrite(cc *pgx.ConnConfig) error {
	switch v := cc.ValidateConnect; {
	case v == nil:
		cc.ValidateConnect = pgconn.ValidateConnectTargetSessionAttrsReadWrite
	case sameFunc(v, pgconn.ValidateConnectTargetSessionAttrsReadWrite), sameFunc(v, pgconn.ValidateConnectTargetSessionAttrsPrimary):
	default:
		return errors.New("the DSN's target_session_attrs selects standbys: the ledger writes on every connection and must read its own writes; use read-write (the default) or primary")
	}
	return nil
}

func sameFunc(a, b pgconn.ValidateConnectFunc) bool {
	return reflect.ValueOf(a).Pointer() == reflect.ValueOf(b).Pointer()
}

// warningKey is where noteWarning leaves a warning in a connection's
// CustomData until the operation on that connection reads it.
const warningKey = "toolgate.warning"

// noteWarning is the connections' OnNotice: it keeps the last WARNING the
// server sent. The notice is read on the goroutine that runs the
// operation, so nothing else touches the map meanwhile.
func noteWarning(c *pgconn.PgConn, n *pgconn.Notice) {
	if n.SeverityUnlocalized == "WARNING" || (n.SeverityUnlocalized == "" && n.Severity == "WARNING") {
		c.CustomData()[warningKey] = n.Message
	}
}

// unreplicated returns the error for a write that the server reported
// committed while it warned, or nil. The warning PostgreSQL sends when the
// wait for a synchronous standby is cancelled ("canceling wait for
// synchronous replication …; the transaction has already committed
// locally, but might not have been replicated to the standby") is the one
// that matters; the store's statements raise no other warning, and any
// other is treated alike rather than matched by its (translated) text. The
// write is visible on this primary but may be lost in a failover: its
// outcome is unknown, as after a broken connection.
func unreplicated(c *pgconn.PgConn) error {
	msg, ok := c.CustomData()[warningKey].(string)
	if !ok {
		return nil
	}
	delete(c.CustomData(), warningKey)
	return &unavailableError{err: fmt.Errorf("the server warned at commit that the write may not have reached its synchronous standby: %s", msg)}
}

// clearWarning forgets a warning left from an earlier operation.
func clearWarning(c *pgconn.PgConn) { delete(c.CustomData(), warningKey) }

// writeAlone runs one write outside a batch, on a connection of its own,
// and fails it as unavailable when the server warned at commit (see
// unreplicated). The errors are the driver's, for the caller to translate.
func (s *Store) writeAlone(ctx context.Context, fn func(*pgx.Conn) error) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	pc := conn.Conn().PgConn()
	clearWarning(pc)
	if err := fn(conn.Conn()); err != nil {
		return err
	}
	return unreplicated(pc)
}

// dropStale resets the pool after an error saying that its server cannot
// serve the store any more (see unavailableError.stale), at most once a
// second: the connections to a dead or demoted server then fail no more
// operations one by one, and new ones go to whichever host is the primary.
func (s *Store) dropStale(err error) {
	var ue *unavailableError
	if err == nil || !errors.As(err, &ue) || !ue.stale {
		return
	}
	now := time.Now().UnixNano()
	last := s.lastReset.Load()
	if now-last < int64(time.Second) || !s.lastReset.CompareAndSwap(last, now) {
		return
	}
	s.pool.Reset()
}

func (s *Store) logf(format string, args ...any) {
	if s.cfg.Logf != nil {
		s.cfg.Logf(format, args...)
	}
}

// setUp migrates the schema and checks durability on the primary; once it
// succeeds the store serves. It is Open's work, and the background
// set-up's.
func (s *Store) setUp(ctx context.Context) error {
	schema, err := migrate(ctx, s.pool, s.cfg.Schema)
	if err != nil {
		return err
	}
	d, err := s.durability(ctx)
	if err != nil {
		return fmt.Errorf("check durability: %w", err)
	}
	s.logDurability(d)
	if s.cfg.RequireSyncStandby && !d.Replicated {
		return fmt.Errorf("%w (synchronous_standby_names = %s, synchronous_commit = %s): a claim committed on this primary would be lost with it; "+
			"name a synchronous standby in synchronous_standby_names and keep synchronous_commit on, remote_apply or remote_write for the ledger's sessions, or set ledger_ha: false",
			ErrNoSyncStandby, quoteSetting(d.Settings["synchronous_standby_names"]), d.Settings["synchronous_commit"])
	}
	s.schema = schema
	s.watchFresh(ctx)
	s.up.Store(true)
	return nil
}

// ErrNoSyncStandby is Open's error when Config.RequireSyncStandby is set
// and the primary's commits do not wait for a synchronous standby.
var ErrNoSyncStandby = errors.New("the ledger requires a synchronous standby (ledger_ha: true) and its primary has none")

// setDown records why the store does not serve.
func (s *Store) setDown(err error) {
	s.downMu.Lock()
	s.downErr = err
	s.downMu.Unlock()
}

// notUp is the error of an operation before the store first reached a
// usable primary: always unavailable (the set-up keeps trying).
func (s *Store) notUp() error {
	s.downMu.Lock()
	err := s.downErr
	s.downMu.Unlock()
	return &unavailableError{err: fmt.Errorf("ledger %s not usable yet: %w", s.where, err)}
}

// keepSettingUp retries setUp in the background until it succeeds or the
// store closes: every second at most while no primary answers, every 5
// seconds after any other failure. It logs each new reason.
func (s *Store) keepSettingUp() {
	ctx, cancel := context.WithCancel(context.Background())
	s.stopUp, s.upDone = cancel, make(chan struct{})
	go func() {
		defer close(s.upDone)
		backoff := 100 * time.Millisecond
		last := ""
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			actx, acancel := context.WithTimeout(ctx, time.Minute)
			err := s.setUp(actx)
			acancel()
			if err == nil {
				s.logf("ledger %s: reached a read-write server; serving", s.where)
				return
			}
			if ctx.Err() != nil {
				return
			}
			s.setDown(err)
			if !IsUnavailable(err) {
				backoff = 5 * time.Second
				if msg := err.Error(); msg != last {
					s.logf("ledger %s: refusing to serve: %v", s.where, err)
					last = msg
				}
				continue
			}
			backoff = min(2*backoff, time.Second)
			if msg := err.Error(); msg != last {
				s.logf("ledger %s: no read-write server yet: %v", s.where, err)
				last = msg
			}
		}
	}()
}

// Durability reads the primary's settings that decide whether a write the
// store reports committed survives a crash or a failover, as the store's
// own sessions see them (a setting in the DSN, the role or the database
// counts), and says how such a write could still be lost.
func (s *Store) Durability(ctx context.Context) (_ ledger.Durability, err error) {
	ctx, finish, err := s.op(ctx)
	defer finish(&err)
	if err != nil {
		return ledger.Durability{}, err
	}
	return s.durability(ctx)
}

var _ ledger.DurabilityReporter = (*Store)(nil)

func (s *Store) durability(ctx context.Context) (ledger.Durability, error) {
	var fsync, syncCommit, names, fpw string
	var sync, senders int
	var visible *bool
	// pg_stat_replication shows a role without pg_read_all_stats one row
	// per standby, with sync_state NULL.
	err := s.pool.QueryRow(ctx, `SELECT current_setting('fsync'), current_setting('synchronous_commit'),
		current_setting('synchronous_standby_names'), current_setting('full_page_writes'),
		(SELECT count(*) FILTER (WHERE sync_state IN ('sync', 'quorum')) FROM pg_stat_replication),
		(SELECT count(*) FROM pg_stat_replication),
		(SELECT bool_and(sync_state IS NOT NULL) FROM pg_stat_replication)`).
		Scan(&fsync, &syncCommit, &names, &fpw, &sync, &senders, &visible)
	if err != nil {
		return ledger.Durability{}, translate(err)
	}
	return judge(map[string]string{"fsync": fsync, "synchronous_commit": syncCommit,
		"synchronous_standby_names": names, "full_page_writes": fpw}, sync, senders, visible == nil || *visible), nil
}

// judge turns the settings into a Durability: sync synchronous standbys
// connected of senders standbys, and whether their sync state is visible.
func judge(set map[string]string, sync, senders int, visible bool) ledger.Durability {
	d := ledger.Durability{Settings: set, SyncStandbys: sync, Warnings: []string{}}
	if !visible {
		d.SyncStandbys = -1
	}
	names, sc := set["synchronous_standby_names"], set["synchronous_commit"]
	waits := sc == "on" || sc == "remote_apply" || sc == "remote_write"
	d.Replicated = strings.TrimSpace(names) != "" && waits
	warn := func(format string, args ...any) { d.Warnings = append(d.Warnings, fmt.Sprintf(format, args...)) }
	if set["fsync"] == "off" {
		warn("fsync is off: commits are not flushed to disk, so an operating-system crash or a power loss can lose acknowledged actions and corrupt the database")
	}
	if set["full_page_writes"] == "off" {
		warn("full_page_writes is off: a crash in the middle of a page write can leave a torn page that recovery cannot repair")
	}
	if sc == "off" {
		warn("synchronous_commit is off: the server acknowledges a commit before its WAL is flushed, so a server crash can lose the last acknowledged actions")
	}
	switch {
	case strings.TrimSpace(names) != "" && !waits:
		warn("synchronous_commit is %s: commits do not wait for the synchronous standby (synchronous_standby_names = %s), so a failover can lose acknowledged actions", sc, quoteSetting(names))
	case strings.TrimSpace(names) == "" && senders > 0:
		warn("%d standby(s) replicate asynchronously (synchronous_standby_names is empty): promoting one can lose acknowledged actions", senders)
	case d.Replicated && sc == "remote_write":
		warn("synchronous_commit is remote_write: a commit waits until the standby has written it, not flushed it, so a failover survives the primary's crash but not a crash of both machines")
	}
	if d.Replicated && visible && sync == 0 {
		warn("no synchronous standby is connected: every commit waits until one named in synchronous_standby_names (%s) connects", quoteSetting(names))
	}
	return d
}

func quoteSetting(v string) string { return "'" + strings.ReplaceAll(v, "'", "''") + "'" }

// logDurability logs d: the settings on one line, then each warning.
func (s *Store) logDurability(d ledger.Durability) {
	if s.cfg.Logf == nil {
		return
	}
	standbys := plural.N(d.SyncStandbys, "synchronous standby", "synchronous standbys") + " connected"
	if d.SyncStandbys < 0 {
		standbys = "synchronous standbys connected: not visible to this role (grant pg_read_all_stats to see them)"
	}
	s.logf("ledger %s durability: fsync=%s synchronous_commit=%s synchronous_standby_names=%s full_page_writes=%s; %s",
		s.where, d.Settings["fsync"], d.Settings["synchronous_commit"], quoteSetting(d.Settings["synchronous_standby_names"]),
		d.Settings["full_page_writes"], standbys)
	for _, w := range d.Warnings {
		s.logf("ledger %s durability warning: %s", s.where, w)
	}
}
