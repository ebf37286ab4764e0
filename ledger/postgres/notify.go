package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/toolgate/toolgate/ledger"
)

// Channel is the LISTEN/NOTIFY channel on which stores announce that an
// action left running. The payload is JSON: {"schema", "tenant", "id",
// "state"}; listeners ignore other schemas' payloads.
const Channel = "toolgate_ledger"

// maxPayload keeps a payload under PostgreSQL's 8000-byte limit.
const maxPayload = 7900

// notify announces that a left running, after the Update that did it has
// committed. It is a separate statement on purpose: PostgreSQL serializes
// the commits of every transaction that sends a NOTIFY in a database, holding
// a lock through the commit's disk flush, so a NOTIFY inside the writing
// transaction (a trigger) would serialize all completions of all replicas.
// This one commits with synchronous_commit off, so it holds that lock only
// briefly. A wake-up is a hint: failing to send one is not an error (waiters
// also poll), so its error is dropped.
func (s *Store) notify(ctx context.Context, a *ledger.Action) {
	// Sent even when the caller's ctx ends right after the Update.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), DefaultQueryTimeout)
	defer cancel()
	s.exec(ctx, `SELECT set_config('synchronous_commit', 'off', true), pg_notify('`+Channel+`', $1)`, s.payload(a))
}

type payload struct {
	Schema string `json:"schema"`
	Tenant string `json:"tenant,omitempty"`
	ID     string `json:"id,omitempty"`
	State  string `json:"state"`
}

// Completion is a wake-up: an action of this store left running. A Completion
// with an empty ID means notifications may have been missed (Listen
// reconnected, or the id was too long for a payload): whoever waits should
// re-read every action it waits for.
type Completion struct {
	Tenant string
	ID     string
	State  ledger.State // the state the action moved to
}

// Missed reports whether c stands for "some wake-ups may have been lost".
func (c Completion) Missed() bool { return c.ID == "" }

// Listen calls fn for every action of this store's schema that leaves
// running, on any replica, until ctx ends; then it returns nil. It uses a
// connection of its own, outside the pool. When that connection fails it
// calls fn with a Missed Completion once it is back, retrying with backoff
// (100ms doubling to 5s) for as long as ctx lasts. fn runs on Listen's
// goroutine and should not block for long. Behind a transaction pooler
// Listen uses Config.SessionDSN; without one it returns a *PoolerError at
// once.
//
// A wake-up is a hint, never the truth: a waiter re-reads the action with Get,
// and should still poll at a bounded interval, since a notification can be
// lost between a failure and the reconnect.
func (s *Store) Listen(ctx context.Context, fn func(Completion)) error {
	backoff := 100 * time.Millisecond
	first := true
	for ctx.Err() == nil {
		conn, err := s.listenConn(ctx)
		var pe *PoolerError
		if errors.As(err, &pe) {
			return err
		}
		if err == nil {
			if !first {
				fn(Completion{})
			}
			first = false
			backoff = 100 * time.Millisecond
			err = s.receive(ctx, conn, fn)
			conn.Close(context.WithoutCancel(ctx))
		}
		if ctx.Err() != nil {
			break
		}
		first = false
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
	return nil
}

func (s *Store) listenConn(ctx context.Context) (*pgx.Conn, error) {
	if !s.up.Load() {
		return nil, s.notUp()
	}
	if s.pooling.pooled && s.session == nil {
		return nil, &PoolerError{Problem: "Listen needs a session of its own, and the ledger's DSN goes through a transaction pooler (" +
			s.pooling.evidence + "): LISTEN would be registered on whichever server session the pooler handed out; set ledger_session (Config.SessionDSN) to a DSN that reaches PostgreSQL directly, or do without wake-ups"}
	}
	conn, err := pgx.ConnectConfig(ctx, s.sessionConfig())
	if err != nil {
		return nil, translate(err)
	}
	if _, err := conn.Exec(ctx, "LISTEN "+Channel); err != nil {
		conn.Close(context.WithoutCancel(ctx))
		return nil, translate(err)
	}
	return conn, nil
}

// receive delivers notifications from conn until it fails or ctx ends.
func (s *Store) receive(ctx context.Context, conn *pgx.Conn, fn func(Completion)) error {
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return translate(err)
		}
		var p payload
		// Someone else's payload on the channel is not ours to judge.
		if err := json.Unmarshal([]byte(n.Payload), &p); err != nil || p.Schema != s.schema {
			continue
		}
		fn(Completion{Tenant: p.Tenant, ID: p.ID, State: ledger.State(p.State)})
	}
}

// ListenCompletions is Listen for ledger.Wakeups (ledger.CompletionListener):
// a Missed Completion comes as an empty id.
func (s *Store) ListenCompletions(ctx context.Context, fn func(tenant, id string)) error {
	return s.Listen(ctx, func(c Completion) { fn(c.Tenant, c.ID) })
}
