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
	if set := s.pooling.txSet; set != "" {
		// Behind a transaction pooler the settings hold for one
		// transaction: run the write in one that begins with them. (A
		// connection released inside a transaction is closed by the pool.)
		if _, err := conn.Exec(ctx, "BEGIN; "+set); err != nil {
			return err
		}
		if err := fn(conn.Conn()); err != nil {
			conn.Exec(ctx, "ROLLBACK")
			return err
		}
		if _, err := conn.Exec(ctx, "COMMIT"); err != nil {
			return err
		}
		return unreplicated(pc)
	}
	if err := fn(conn.Conn()); err != nil {
		return err
	}
	return unreplicated(pc)
}

// writeAloneTx is writeAlone for a write of several statements: fn runs
// in a transaction of its own, which begins with the settings a session
// would carry behind a transaction pooler.
func (s *Store) writeAloneTx(ctx context.Context, fn func(pgx.Tx) error) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	pc := conn.Conn().PgConn()
	clearWarning(pc)
	if err := pgx.BeginFunc(ctx, conn.Conn(), func(tx pgx.Tx) error {
		if err := s.txSettings(ctx, tx); err != nil {
			return err
		}
		return fn(tx)
	}); err != nil {
		return err
	}
	return unreplicated(pc)
}

// txSettings begins an explicit transaction with the settings a session
// would carry, behind a transaction pooler (nothing otherwise).
func (s *Store) txSettings(ctx context.Context, tx pgx.Tx) error {
	if s.pooling.txSet == "" {
		return nil
	}
	_, err := tx.Exec(ctx, s.pooling.txSet)
	return err
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
// set-up's. Every statement of it is bounded: the checks by QueryTimeout
// (at least a second), the migration by MigrateTimeout. Before it
// migrates it checks that commits can complete: a primary whose
// synchronous_standby_names names standbys that are not connected would
// hold the migration's commit (and every write after it) forever; that is
// reported as unavailable, with the fix, and tried again.
func (s *Store) setUp(ctx context.Context) error {
	qctx, cancel := context.WithTimeoutCause(ctx, s.checkTimeout(), errNoAnswer)
	err := s.detectPooler(qctx)
	cancel()
	if err != nil {
		return err
	}
	qctx, cancel = context.WithTimeoutCause(ctx, s.checkTimeout(), errNoAnswer)
	r, err := readSyncReport(qctx, s.pool)
	cancel()
	switch err = setUpErr(err); {
	case IsUnavailable(err):
		return fmt.Errorf("check synchronous standbys: %w", err)
	case err != nil:
		// A server that will not show its replication state (a managed
		// service's restricted views) is not refused for it: the check
		// is a diagnosis, and the migration's own bounds still hold.
		s.logf("ledger %s: cannot check the synchronous standbys: %v", s.where, err)
	default:
		if p := r.problem(); p != "" {
			return &unavailableError{err: &StandbyError{Problem: p}}
		}
	}
	stop := s.watchSetUp(ctx)
	schema, err := migrate(ctx, s.pool, s.cfg.Schema, migrateLimits{
		statement: s.migrateTimeout(), lockWait: s.migrateTimeout(), txSet: s.pooling.txSet,
		waiting: func(reason string) {
			s.setReason(reason)
			s.logf("ledger %s: %s", s.where, reason)
		},
	})
	stop()
	if err != nil {
		return setUpErr(err)
	}
	qctx, cancel = context.WithTimeoutCause(ctx, s.checkTimeout(), errNoAnswer)
	d, err := s.durability(qctx)
	cancel()
	if err != nil {
		return fmt.Errorf("check durability: %w", setUpErr(err))
	}
	if report := fmt.Sprint(d); report != s.lastReport {
		// A set-up tried again (a replica id held elsewhere) logs the
		// same report once.
		s.lastReport = report
		s.logDurability(d)
	}
	if s.cfg.RequireSyncStandby && !d.Replicated {
		return fmt.Errorf("%w (synchronous_standby_names = %s, synchronous_commit = %s): a claim committed on this primary would be lost with it; "+
			"name a synchronous standby in synchronous_standby_names and keep synchronous_commit on, remote_apply or remote_write for the ledger's sessions, or set ledger_ha: false",
			ErrNoSyncStandby, quoteSetting(d.Settings["synchronous_standby_names"]), d.Settings["synchronous_commit"])
	}
	if s.cfg.ReplicaID != "" {
		if err := s.takeReplica(ctx, schema); err != nil {
			return err
		}
		s.keepReplica(schema)
	}
	s.schema = schema
	s.watchFresh(ctx)
	s.up.Store(true)
	return nil
}

// setUpErr makes a set-up step that ran out of its time unavailable: the
// server did not answer, and the set-up tries again.
func setUpErr(err error) error {
	if err == nil || IsUnavailable(err) {
		return err
	}
	if errors.Is(err, errNoAnswer) || errors.Is(err, context.DeadlineExceeded) || isTimeoutCancel(err) {
		return &unavailableError{err: err}
	}
	return err
}

// isTimeoutCancel reports the server's "canceling statement due to
// statement timeout" or "lock timeout" (SQLSTATE 57014, 55P03), as the
// driver reports it or as translate words it.
func isTimeoutCancel(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "57014" || pe.Code == "55P03"
	}
	msg := err.Error()
	return strings.Contains(msg, "(SQLSTATE 57014)") || strings.Contains(msg, "(SQLSTATE 55P03)")
}

func (s *Store) checkTimeout() time.Duration {
	if s.timeout > 0 {
		return max(s.timeout, time.Second)
	}
	return DefaultQueryTimeout
}

func (s *Store) migrateTimeout() time.Duration {
	if s.cfg.MigrateTimeout > 0 {
		return s.cfg.MigrateTimeout
	}
	return DefaultMigrateTimeout
}

// watchSetUp says why a set-up takes long: from 2 seconds in, every 2
// seconds until stop is called, it reads the primary's synchronous
// replication state on another connection and, when commits wait for a
// standby that is not connected, makes that the reason the store does not
// serve yet (and logs it once).
func (s *Store) watchSetUp(ctx context.Context) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		began, last := time.Now(), ""
		t := time.NewTicker(2 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			qctx, cancel := context.WithTimeout(ctx, s.checkTimeout())
			r, err := readSyncReport(qctx, s.pool)
			cancel()
			reason := fmt.Sprintf("setting up for %s (migrating the schema)", time.Since(began).Round(time.Second))
			if p := r.problem(); err == nil && p != "" {
				reason = "the primary's " + p
				if reason != last {
					s.logf("ledger %s: the set-up waits: %s", s.where, reason)
					last = reason
				}
			}
			if strings.HasPrefix(reason, "the primary's ") || strings.HasPrefix(s.Unready(), "setting up") {
				s.setReason(reason)
			}
		}
	}()
	return func() { close(done); <-finished }
}

// StandbyError is the reason a store does not serve while its primary's
// commits wait for a synchronous standby that is not connected. It is
// always wrapped in an unavailable error: the set-up tries again, and
// serves once the standby is connected under a name the primary waits for.
type StandbyError struct {
	Problem string // what is wrong and how to fix it
}

func (e *StandbyError) Error() string { return "the primary's " + e.Problem }

// ErrNoSyncStandby is Open's error when Config.RequireSyncStandby is set
// and the primary's commits do not wait for a synchronous standby.
var ErrNoSyncStandby = errors.New("the ledger requires a synchronous standby (ledger_ha: true) and its primary has none")

// errSettingUp is the reason of a store whose first set-up has not ended.
var errSettingUp = &unavailableError{err: errors.New("setting up (connecting to the primary, migrating the schema)")}

// setDown records why the store does not serve.
func (s *Store) setDown(err error) {
	s.downMu.Lock()
	s.downErr = err
	s.reason = publicReason(err)
	s.downMu.Unlock()
}

// setReason replaces the reason the store gives for not serving (a set-up
// in progress), keeping the error.
func (s *Store) setReason(reason string) {
	s.downMu.Lock()
	s.reason = reason
	s.downErr = &unavailableError{err: errors.New(reason)}
	s.downMu.Unlock()
}

// publicReason is what Unready says for a set-up error: the standby
// problem, the migration lock wait and the durability requirement in full
// (they name settings, not secrets); a server that does not answer in
// general words; any other error (a wrong password, a newer schema) as a
// pointer to the log, which has it in full.
func publicReason(err error) string {
	var se *StandbyError
	var ru *ReplicaInUseError
	var pe *PoolerError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &se):
		return se.Error()
	case errors.As(err, &pe):
		return pe.Error()
	case errors.As(err, &ru):
		return ru.Error()
	case errors.Is(err, ErrNoSyncStandby):
		return ErrNoSyncStandby.Error()
	case err == errSettingUp:
		return "setting up (connecting to the primary, migrating the schema)"
	case strings.Contains(err.Error(), "for the migration lock"):
		_, after, _ := strings.Cut(err.Error(), "gave up ")
		return after
	case IsUnavailable(err):
		return "no read-write server of the ledger answers"
	}
	return "the ledger refuses to serve (see the gateway's log)"
}

// Unready says why the store does not serve yet, in words for an operator
// (/readyz shows it), or "" once it serves.
func (s *Store) Unready() string {
	if s.up.Load() {
		return s.replicaLost()
	}
	s.downMu.Lock()
	defer s.downMu.Unlock()
	if s.reason == "" {
		return "setting up"
	}
	return s.reason
}

var _ ledger.ReadinessReporter = (*Store)(nil)

// notUp is the error of an operation before the store first reached a
// usable primary: always unavailable (the set-up keeps trying).
func (s *Store) notUp() error {
	s.downMu.Lock()
	err, reason := s.downErr, s.reason
	s.downMu.Unlock()
	return &unavailableError{err: fmt.Errorf("ledger %s not usable yet: %w", s.where, err), reason: reason}
}

// keepSettingUp runs setUp in the background until it succeeds or the
// store closes: at once, then every second at most while no usable primary
// answers, every 5 seconds after any other failure. It logs each new
// reason, and sends the first attempt's result on first (buffered).
func (s *Store) keepSettingUp(first chan<- error) {
	ctx, cancel := context.WithCancel(context.Background())
	s.stopUp, s.upDone = cancel, make(chan struct{})
	go func() {
		defer close(s.upDone)
		backoff := 100 * time.Millisecond
		last, attempt := "", 0
		for {
			if attempt > 0 {
				select {
				case <-ctx.Done():
					return
				case <-time.After(backoff):
				}
			}
			attempt++
			actx, acancel := context.WithTimeout(ctx, s.migrateTimeout()+3*s.checkTimeout())
			err := s.setUp(actx)
			acancel()
			if attempt == 1 && first != nil {
				first <- err
			}
			if err == nil {
				s.logf("ledger %s: reached a read-write server; serving", s.where)
				return
			}
			if ctx.Err() != nil {
				return
			}
			s.setDown(err)
			msg := err.Error()
			var se *StandbyError
			var ru *ReplicaInUseError
			switch {
			case errors.As(err, &se):
				backoff = time.Second
				if msg != last {
					s.logf("ledger %s: not serving: %s", s.where, se.Error())
				}
			case errors.As(err, &ru):
				backoff = time.Second
				if msg != last {
					s.logf("ledger %s: not serving: %s", s.where, ru.Error())
				}
			case !IsUnavailable(err):
				backoff = 5 * time.Second
				if msg != last {
					s.logf("ledger %s: refusing to serve: %v", s.where, err)
				}
			default:
				backoff = min(2*backoff, time.Second)
				if msg != last {
					if last == "" {
						s.logf("ledger %s: no read-write server reached yet (%v); operations fail as unavailable until one is", s.where, err)
					} else {
						s.logf("ledger %s: no read-write server yet: %v", s.where, err)
					}
				}
			}
			last = msg
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
	err := s.queryRow(ctx, `SELECT current_setting('fsync'), current_setting('synchronous_commit'),
		current_setting('synchronous_standby_names'), current_setting('full_page_writes'),
		(SELECT count(*) FILTER (WHERE sync_state IN ('sync', 'quorum')) FROM pg_stat_replication),
		(SELECT count(*) FROM pg_stat_replication),
		(SELECT bool_and(sync_state IS NOT NULL) FROM pg_stat_replication)`).
		Scan(&fsync, &syncCommit, &names, &fpw, &sync, &senders, &visible)
	if err != nil {
		return ledger.Durability{}, translate(err)
	}
	d := judge(map[string]string{"fsync": fsync, "synchronous_commit": syncCommit,
		"synchronous_standby_names": names, "full_page_writes": fpw}, sync, senders, visible == nil || *visible)
	if d.Replicated && d.SyncStandbys <= 0 {
		// Name the standbys that are connected and what to change.
		if r, err := readSyncReport(ctx, s.pool); err == nil {
			if p := r.problem(); p != "" {
				d.Warnings = append(d.Warnings, p)
			}
		}
	}
	return d, nil
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
