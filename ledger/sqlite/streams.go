package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/toolgate/toolgate/ledger"
)

// The MCP streams kept for resumption (ledger.StreamStore): writes take the
// writer connection, one statement each, beside the group committer's.

// OpenStream records a new stream.
func (s *Store) OpenStream(ctx context.Context, st ledger.StreamInfo) error {
	_, err := s.w.ExecContext(ctx, `INSERT INTO mcp_streams (stream_id, tenant, principal, created_at) VALUES (?, ?, ?, ?)`,
		st.ID, st.Tenant, st.Principal, st.Created.UTC().UnixNano())
	if err != nil {
		return fmt.Errorf("open stream %s: %w", st.ID, translate(err))
	}
	return nil
}

// AppendStreamEvent stores event idx of a stream.
func (s *Store) AppendStreamEvent(ctx context.Context, streamID string, idx int, data []byte) error {
	if _, err := s.w.ExecContext(ctx, `INSERT INTO mcp_stream_events (stream_id, idx, data) VALUES (?, ?, ?)`, streamID, idx, data); err != nil {
		return fmt.Errorf("append to stream %s: %w", streamID, translate(err))
	}
	return nil
}

// CloseStream marks a stream done.
func (s *Store) CloseStream(ctx context.Context, streamID string) error {
	if _, err := s.w.ExecContext(ctx, `UPDATE mcp_streams SET done = 1 WHERE stream_id = ?`, streamID); err != nil {
		return fmt.Errorf("close stream %s: %w", streamID, translate(err))
	}
	return nil
}

// StreamEvents returns a stream and its events after index after. The
// record is read before the events, so a stream read as done has all of them.
func (s *Store) StreamEvents(ctx context.Context, streamID string, after int) (ledger.StreamInfo, []ledger.StreamEvent, error) {
	info := ledger.StreamInfo{ID: streamID}
	var created int64
	var done int
	err := s.r.QueryRowContext(ctx, `SELECT tenant, principal, created_at, done FROM mcp_streams WHERE stream_id = ?`, streamID).
		Scan(&info.Tenant, &info.Principal, &created, &done)
	if err != nil {
		return info, nil, fmt.Errorf("read stream %s: %w", streamID, translate(err))
	}
	info.Created, info.Done = time.Unix(0, created).UTC(), done != 0
	rows, err := s.r.QueryContext(ctx, `SELECT idx, data FROM mcp_stream_events WHERE stream_id = ? AND idx > ? ORDER BY idx`, streamID, after)
	if err != nil {
		return info, nil, fmt.Errorf("read stream %s: %w", streamID, translate(err))
	}
	defer rows.Close()
	var out []ledger.StreamEvent
	for rows.Next() {
		var e ledger.StreamEvent
		if err := rows.Scan(&e.Index, &e.Data); err != nil {
			return info, nil, fmt.Errorf("read stream %s: %w", streamID, translate(err))
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return info, nil, fmt.Errorf("read stream %s: %w", streamID, translate(err))
	}
	return info, out, nil
}

// PruneStreams deletes the streams opened before t, with their events.
func (s *Store) PruneStreams(ctx context.Context, before time.Time) (int, error) {
	var n int64
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		cut := before.UTC().UnixNano()
		if _, err := tx.ExecContext(ctx, `DELETE FROM mcp_stream_events WHERE stream_id IN (SELECT stream_id FROM mcp_streams WHERE created_at < ?)`, cut); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM mcp_streams WHERE created_at < ?`, cut)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("prune streams: %w", translate(err))
	}
	return int(n), nil
}

var _ ledger.StreamStore = (*Store)(nil)

// StreamUsage counts the streams opened at or after since and their events'
// bytes, of one key and in all.
func (s *Store) StreamUsage(ctx context.Context, tenant, principal string, since time.Time) (ledger.StreamUsage, error) {
	var u ledger.StreamUsage
	cut := since.UTC().UnixNano()
	err := s.r.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(tenant = ? AND principal = ?), 0) FROM mcp_streams WHERE created_at >= ?`,
		tenant, principal, cut).Scan(&u.Streams, &u.KeyStreams)
	if err == nil {
		err = s.r.QueryRowContext(ctx, `SELECT coalesce(sum(length(e.data)), 0),
				coalesce(sum(CASE WHEN s.tenant = ? AND s.principal = ? THEN length(e.data) ELSE 0 END), 0)
			FROM mcp_stream_events e JOIN mcp_streams s ON s.stream_id = e.stream_id WHERE s.created_at >= ?`,
			tenant, principal, cut).Scan(&u.Bytes, &u.KeyBytes)
	}
	if err != nil {
		return u, fmt.Errorf("stream usage: %w", translate(err))
	}
	return u, nil
}
