package postgres

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/toolgate/toolgate/ledger"
)

// The MCP streams kept for resumption (ledger.StreamStore), shared by every
// gateway on the database. Each write is one statement, outside the batcher.

// OpenStream records a new stream.
func (s *Store) OpenStream(ctx context.Context, st ledger.StreamInfo) (err error) {
	ctx, finish, err := s.op(ctx)
	defer finish(&err)
	if err != nil {
		return err
	}
	for _, v := range []string{st.ID, st.Tenant, st.Principal} {
		if strings.ContainsRune(v, 0) {
			return fmt.Errorf("open stream %q: a NUL byte, which PostgreSQL text cannot hold", st.ID)
		}
	}
	if _, err := s.exec(ctx, `INSERT INTO mcp_streams (stream_id, tenant, principal, created_at) VALUES ($1, $2, $3, $4)`,
		st.ID, st.Tenant, st.Principal, st.Created.UTC()); err != nil {
		return fmt.Errorf("open stream %s: %w", st.ID, translate(err))
	}
	return nil
}

// AppendStreamEvent stores event idx of a stream.
func (s *Store) AppendStreamEvent(ctx context.Context, streamID string, idx int, data []byte) (err error) {
	ctx, finish, err := s.op(ctx)
	defer finish(&err)
	if err != nil {
		return err
	}
	if _, err := s.exec(ctx, `INSERT INTO mcp_stream_events (stream_id, idx, data) VALUES ($1, $2, $3)`, streamID, idx, data); err != nil {
		return fmt.Errorf("append to stream %s: %w", streamID, translate(err))
	}
	return nil
}

// CloseStream marks a stream done.
func (s *Store) CloseStream(ctx context.Context, streamID string) (err error) {
	ctx, finish, err := s.op(ctx)
	defer finish(&err)
	if err != nil {
		return err
	}
	if _, err := s.exec(ctx, `UPDATE mcp_streams SET done = true WHERE stream_id = $1`, streamID); err != nil {
		return fmt.Errorf("close stream %s: %w", streamID, translate(err))
	}
	return nil
}

// StreamEvents returns a stream and its events after index after, read in
// one repeatable-read snapshot: a stream read as done has all its events.
func (s *Store) StreamEvents(ctx context.Context, streamID string, after int) (info ledger.StreamInfo, events []ledger.StreamEvent, err error) {
	info.ID = streamID
	ctx, finish, err := s.op(ctx)
	defer finish(&err)
	if err != nil {
		return info, nil, err
	}
	if strings.ContainsRune(streamID, 0) {
		return info, nil, fmt.Errorf("read stream %q: %w", streamID, ledger.ErrNotFound)
	}
	err = pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if err := s.txSettings(ctx, tx); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `SELECT tenant, principal, created_at, done FROM mcp_streams WHERE stream_id = $1`, streamID).
			Scan(&info.Tenant, &info.Principal, &info.Created, &info.Done); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT idx, data FROM mcp_stream_events WHERE stream_id = $1 AND idx > $2 ORDER BY idx`, streamID, after)
		if err != nil {
			return err
		}
		var e ledger.StreamEvent
		_, err = pgx.ForEachRow(rows, []any{&e.Index, &e.Data}, func() error {
			events = append(events, ledger.StreamEvent{Index: e.Index, Data: append([]byte(nil), e.Data...)})
			return nil
		})
		return err
	})
	if err != nil {
		return info, nil, fmt.Errorf("read stream %s: %w", streamID, translate(err))
	}
	info.Created = info.Created.UTC()
	return info, events, nil
}

// PruneStreams deletes the streams opened before t; their events go with
// them (ON DELETE CASCADE).
func (s *Store) PruneStreams(ctx context.Context, before time.Time) (n int, err error) {
	ctx, finish, err := s.op(ctx)
	defer finish(&err)
	if err != nil {
		return 0, err
	}
	tag, err := s.exec(ctx, `DELETE FROM mcp_streams WHERE created_at < $1`, before.UTC())
	if err != nil {
		return 0, fmt.Errorf("prune streams: %w", translate(err))
	}
	return int(tag.RowsAffected()), nil
}

// StreamUsage counts the streams opened at or after since and their events'
// bytes, of one key and in all.
func (s *Store) StreamUsage(ctx context.Context, tenant, principal string, since time.Time) (u ledger.StreamUsage, err error) {
	ctx, finish, err := s.op(ctx)
	defer finish(&err)
	if err != nil {
		return u, err
	}
	if strings.ContainsRune(tenant, 0) || strings.ContainsRune(principal, 0) {
		return u, fmt.Errorf("stream usage of %q: a NUL byte, which PostgreSQL text cannot hold", principal)
	}
	err = s.pool.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM mcp_streams WHERE created_at >= $3),
			(SELECT count(*) FROM mcp_streams WHERE created_at >= $3 AND tenant = $1 AND principal = $2),
			(SELECT coalesce(sum(octet_length(e.data)), 0) FROM mcp_stream_events e JOIN mcp_streams s ON s.stream_id = e.stream_id WHERE s.created_at >= $3),
			(SELECT coalesce(sum(octet_length(e.data)), 0) FROM mcp_stream_events e JOIN mcp_streams s ON s.stream_id = e.stream_id
				WHERE s.created_at >= $3 AND s.tenant = $1 AND s.principal = $2)`,
		tenant, principal, since.UTC()).Scan(&u.Streams, &u.KeyStreams, &u.Bytes, &u.KeyBytes)
	if err != nil {
		return u, fmt.Errorf("stream usage: %w", translate(err))
	}
	return u, nil
}

var _ ledger.StreamStore = (*Store)(nil)
