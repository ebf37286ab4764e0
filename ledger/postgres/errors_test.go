package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/puddle/v2"
	"github.com/toolgate/toolgate/ledger"
)

func TestTranslate(t *testing.T) {
	t.Parallel()
	pg := func(code string) error { return fmt.Errorf("exec: %w", &pgconn.PgError{Code: code, Message: "m"}) }
	tests := []struct {
		name        string
		err         error
		is          error // want errors.Is(translate(err), is) when not nil
		unavailable bool
	}{
		{"no rows", pgx.ErrNoRows, ledger.ErrNotFound, false},
		{"unique violation", pg("23505"), ledger.ErrExists, false},
		{"syntax error", pg("42601"), nil, false},
		{"invalid text", pg("22021"), nil, false},
		{"admin shutdown", pg("57P01"), nil, true},
		{"crash shutdown", pg("57P02"), nil, true},
		{"cannot connect now", pg("57P03"), nil, true},
		{"too many connections", pg("53300"), nil, true},
		{"connection failure", pg("08006"), nil, true},
		{"read-only standby", pg("25006"), nil, true},
		{"not null violation", pg("23502"), nil, false},
		{"undefined table", pg("42P01"), nil, false},
		{"closed pool", fmt.Errorf("acquire: %w", puddle.ErrClosedPool), nil, true},
		{"connect error", &pgconn.ConnectError{}, nil, true},
		{"refused", fmt.Errorf("dial: %w", syscall.ECONNREFUSED), nil, true},
		{"reset", &net.OpError{Op: "read", Err: syscall.ECONNRESET}, nil, true},
		{"eof", fmt.Errorf("receive: %w", io.ErrUnexpectedEOF), nil, true},
		{"conn closed", pgconn.ErrConnClosed, nil, true},
		{"caller's deadline", context.DeadlineExceeded, context.DeadlineExceeded, false},
		{"caller's cancel", context.Canceled, context.Canceled, false},
		{"other", errors.New("boom"), nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := translate(tt.err)
			if tt.is != nil && !errors.Is(got, tt.is) {
				t.Errorf("translate(%v) = %v, want one that is %v", tt.err, got, tt.is)
			}
			if IsUnavailable(got) != tt.unavailable {
				t.Errorf("IsUnavailable(%v) = %v, want %v", got, !tt.unavailable, tt.unavailable)
			}
			if tt.unavailable {
				var u interface{ Unavailable() bool }
				if !errors.As(got, &u) || !u.Unavailable() {
					t.Errorf("%v has no Unavailable() method for callers that do not import this package", got)
				}
				if !errors.Is(got, ErrUnavailable) {
					t.Errorf("%v is not ErrUnavailable", got)
				}
			}
		})
	}
	if translate(nil) != nil {
		t.Error("translate(nil) != nil")
	}
}
