package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/toolgate/toolgate/ledger"
)

// A replica's identity (Config.ReplicaID, toolgate.yaml replica_id).
//
// A gateway with a replica id records its claims with the lease owner
// "<replica id>/<process>" (the existing lease_owner column), and, after
// a restart, makes the running claims of its earlier processes unknown at
// once (ledger.Service.ExpireOwn, through RunningOwned) instead of waiting
// for their lease. That is safe only while no other running gateway uses
// the same id, so the store checks it: it holds a session-level advisory
// lock on the id, on a connection of its own, for as long as it is open.
// A second gateway started with the same id does not serve (unavailable,
// with the holder named, tried again every second) until the first one's
// session ends. After a failover the lock is taken again on the new
// primary; a store that finds it taken by another session then reports it
// (Unready) and lists no claims as its own.

// replicaKey is the advisory lock key of one replica id in one schema.
func replicaKey(schema, id string) int64 {
	h := fnv.New64a()
	h.Write([]byte("toolgate ledger replica\x00" + schema + "\x00" + id))
	return int64(h.Sum64())
}

// ReplicaInUseError is the reason a store with a replica id does not serve
// while another session holds that id's lock.
type ReplicaInUseError struct {
	ReplicaID string
	Holder    string // who holds it
}

func (e *ReplicaInUseError) Error() string {
	return fmt.Sprintf("replica_id %q is in use by another running gateway (%s): give each gateway its own replica_id; this one serves once that session ends", e.ReplicaID, e.Holder)
}

// replicaLock is the connection that holds the replica id's lock.
type replicaLock struct {
	mu   sync.Mutex
	conn *pgx.Conn // nil while not held
	lost string    // why the lock is not held after it was (another session took it), or ""
	stop context.CancelFunc
	done chan struct{}
}

// takeReplica takes the replica id's lock on a connection of its own, or
// returns why it cannot (unavailable either way: the set-up tries again).
func (s *Store) takeReplica(ctx context.Context, schema string) error {
	id := s.cfg.ReplicaID
	// A session of its own: Config.SessionDSN's when set (a transaction
	// pooler would hold the lock on a server session it hands to others).
	cc := s.sessionConfig()
	cc.RuntimeParams["application_name"] = cc.RuntimeParams["application_name"] + " replica " + id
	cctx, cancel := context.WithTimeoutCause(ctx, s.checkTimeout(), errNoAnswer)
	defer cancel()
	conn, err := pgx.ConnectConfig(cctx, cc)
	if err != nil {
		return setUpErr(fmt.Errorf("replica lock: %w", translate(err)))
	}
	key := replicaKey(schema, id)
	var got bool
	if err := conn.QueryRow(cctx, `SELECT pg_try_advisory_lock($1)`, key).Scan(&got); err != nil {
		conn.Close(context.Background())
		return setUpErr(fmt.Errorf("replica lock: %w", translate(err)))
	}
	if !got {
		holder := sessionHolder(cctx, conn, key)
		conn.Close(context.Background())
		return &unavailableError{err: &ReplicaInUseError{ReplicaID: id, Holder: holder}}
	}
	s.replica.mu.Lock()
	s.replica.conn, s.replica.lost = conn, ""
	s.replica.mu.Unlock()
	return nil
}

// sessionHolder describes the session that holds the advisory lock key.
func sessionHolder(ctx context.Context, q querier, key int64) string {
	var pid int
	var app string
	var age float64
	err := q.QueryRow(ctx, `SELECT a.pid, coalesce(a.application_name, ''),
			coalesce(extract(epoch FROM now() - a.backend_start), 0)::float8
		FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
		WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
			AND l.classid::bigint = $1 AND l.objid::bigint = $2
		LIMIT 1`, int64(uint64(key)>>32), int64(uint32(uint64(key)))).Scan(&pid, &app, &age)
	if err != nil {
		return "a session the store's role cannot see"
	}
	return fmt.Sprintf("backend pid %d, application_name %q, connected %s ago", pid, app, time.Duration(age*float64(time.Second)).Round(time.Second))
}

// keepReplica checks every second that the replica lock's connection is
// alive and, when it is not (a failover, a restart of the database), takes
// the lock again on whichever server is the primary now.
func (s *Store) keepReplica(schema string) {
	ctx, cancel := context.WithCancel(context.Background())
	s.replica.stop, s.replica.done = cancel, make(chan struct{})
	go func() {
		defer close(s.replica.done)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				s.replica.mu.Lock()
				if s.replica.conn != nil {
					s.replica.conn.Close(context.Background())
					s.replica.conn = nil
				}
				s.replica.mu.Unlock()
				return
			case <-t.C:
			}
			s.replica.mu.Lock()
			conn := s.replica.conn
			s.replica.mu.Unlock()
			if conn != nil {
				pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
				err := conn.Ping(pctx)
				pcancel()
				if err == nil {
					continue
				}
				conn.Close(context.Background())
				s.replica.mu.Lock()
				s.replica.conn = nil
				s.replica.mu.Unlock()
				s.logf("ledger %s: the replica lock's connection ended (%v); taking it again", s.where, err)
			}
			err := s.takeReplica(ctx, schema)
			var ru *ReplicaInUseError
			switch {
			case err == nil:
				s.logf("ledger %s: replica_id %q held again", s.where, s.cfg.ReplicaID)
			case errors.As(err, &ru):
				s.replica.mu.Lock()
				changed := s.replica.lost != ru.Error()
				s.replica.lost = ru.Error()
				s.replica.mu.Unlock()
				if changed {
					s.logf("ledger %s: %v", s.where, ru)
				}
			}
		}
	}()
}

// replicaLost is why the store no longer holds its replica id, or "".
func (s *Store) replicaLost() string {
	s.replica.mu.Lock()
	defer s.replica.mu.Unlock()
	return s.replica.lost
}

// closeReplica releases the replica lock (its session ends).
func (s *Store) closeReplica() {
	if s.replica.stop != nil {
		s.replica.stop()
		<-s.replica.done
	}
}

// RunningOwned lists up to limit running actions whose lease owner starts
// with prefix and is not except: the claims of earlier processes of this
// replica (see ledger.OwnedLister). It fails unless the store holds its
// replica id's lock right now, so that no running gateway's claims can be
// taken for a dead one's.
func (s *Store) RunningOwned(ctx context.Context, prefix, except string, limit int) (_ []*ledger.Action, err error) {
	ctx, finish, err := s.op(ctx)
	defer finish(&err)
	if err != nil {
		return nil, err
	}
	if s.cfg.ReplicaID == "" || !strings.HasPrefix(prefix, s.cfg.ReplicaID+"/") {
		return nil, fmt.Errorf("running owned: the store holds no replica id for %q", prefix)
	}
	s.replica.mu.Lock()
	held := s.replica.conn != nil
	s.replica.mu.Unlock()
	if !held {
		return nil, &unavailableError{err: fmt.Errorf("running owned: replica_id %q's lock is not held right now", s.cfg.ReplicaID)}
	}
	like := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(prefix) + "%"
	as, err := s.query(ctx, `SELECT `+columns+` FROM actions
		WHERE state = 'running' AND lease_owner LIKE $1 AND lease_owner <> $2
		ORDER BY lease_until NULLS FIRST, tenant, id LIMIT $3`, like, except, defaultLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("running owned: %w", err)
	}
	return as, nil
}

var _ ledger.OwnedLister = (*Store)(nil)
