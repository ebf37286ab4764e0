package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/puddle/v2"
	"github.com/toolgate/toolgate/ledger"
)

// ErrUnavailable reports that the database could not be reached or refused
// work for a reason that passes (restart, failover, connection limit). Test
// with errors.Is(err, ErrUnavailable) or IsUnavailable(err). It is
// ledger.ErrUnavailable, so code that knows no driver can test for it too.
var ErrUnavailable = ledger.ErrUnavailable

// ErrBadCursor reports a List cursor that this store did not issue.
var ErrBadCursor = ledger.ErrBadCursor

// IsUnavailable reports whether err means the database is (for now)
// unreachable, so the caller should answer 503 with Retry-After and try again
// later rather than treat the action as failed. It is true for errors that
// wrap ErrUnavailable and for any error in the chain with an
// Unavailable() bool method that returns true.
func IsUnavailable(err error) bool {
	if errors.Is(err, ErrUnavailable) {
		return true
	}
	var u interface{ Unavailable() bool }
	return errors.As(err, &u) && u.Unavailable()
}

// unavailableError marks a driver error as ErrUnavailable while keeping the
// driver error (and any context error under it) in the chain. Its
// Unavailable method lets callers that do not import this package classify it.
// stale marks an error after which the pool's other connections are likely
// useless too (see Store.dropStale).
type unavailableError struct {
	err    error
	stale  bool
	reason string // why the store does not serve yet, for callers (see NotReadyReason)
}

// NotReadyReason is, for an operation refused because the store is not set
// up yet, why, in the words of Store.Unready (no host, no credentials);
// "" otherwise. The gateway puts it in its 503 answer.
func (e *unavailableError) NotReadyReason() string { return e.reason }

func (e *unavailableError) Error() string     { return ErrUnavailable.Error() + ": " + e.err.Error() }
func (e *unavailableError) Unwrap() []error   { return []error{ErrUnavailable, e.err} }
func (e *unavailableError) Unavailable() bool { return true }

// translate turns pgx errors into ledger errors, unavailable errors, or plain
// errors carrying the server's message and SQLSTATE, so nothing above this
// package needs the driver.
func translate(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return ledger.ErrNotFound
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "23505": // unique_violation
			return ledger.ErrExists
		case unavailableState(pe.Code):
			return &unavailableError{err: fmt.Errorf("%s (SQLSTATE %s)", pe.Message, pe.Code), stale: staleState(pe.Code)}
		}
		return fmt.Errorf("postgres: %s (SQLSTATE %s)", pe.Message, pe.Code)
	}
	if errors.Is(err, puddle.ErrClosedPool) {
		// The store was closed: a gateway shutting down answers its last
		// calls 503, and another replica takes the retry.
		return &unavailableError{err: fmt.Errorf("postgres ledger store is closed: %w", err)}
	}
	if unreachable(err) {
		var ce *pgconn.ConnectError
		return &unavailableError{err: err, stale: !errors.As(err, &ce) && lostConnection(err)}
	}
	return err
}

// staleState reports the SQLSTATEs that say the server behind a pooled
// connection cannot take the store's work any more: it shuts down, it
// crashed, or it is read-only (a standby, or a primary turned read-only).
// The pool's other connections go to the same server.
func staleState(code string) bool {
	return code == "57P01" || code == "57P02" || code == "25006"
}

// lostConnection reports an established connection that broke (closed or
// reset by the peer), as when its server died; not a timeout.
func lostConnection(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// unavailableState reports the SQLSTATEs that mean "not now" rather than
// "never": connection exceptions, a server shutting down or starting up, too
// many connections or no resources, and writes sent to a read-only standby
// (after a failover, until the DNS or proxy follows).
func unavailableState(code string) bool {
	switch {
	case strings.HasPrefix(code, "08"): // connection_exception
		return true
	case strings.HasPrefix(code, "53"): // insufficient_resources (53300 too_many_connections …)
		return true
	case strings.HasPrefix(code, "57P"): // admin/crash shutdown, cannot_connect_now, database_dropped
		return true
	case code == "25006": // read_only_sql_transaction: a standby, or a primary set read-only
		return true
	}
	return false
}

// unreachable reports errors of the connection itself: a failed connect, a
// reset or closed socket, a network timeout, or a request pgx knows was never
// sent. A context error with no connection failure under it is the caller's
// own deadline and is left alone.
func unreachable(err error) bool {
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	if errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	return pgconn.SafeToRetry(err)
}
