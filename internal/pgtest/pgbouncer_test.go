package pgtest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestPgBouncerTransactionPooling: the sample configuration starts a real
// PgBouncer in transaction pooling mode, which shows the behaviours the
// ledger has to handle: start-up parameters other than its short list are
// refused, and one client connection's transactions run on whichever
// server session is free (a second client can get the session the first
// one used a moment ago).
func TestPgBouncerTransactionPooling(t *testing.T) {
	if _, err := BinDir(); err != nil {
		t.Skip(err)
	}
	c, err := StartCluster()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Stop() })
	b := NewPgBouncer(t, c.DSN)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	_, err = pgx.Connect(ctx, WithParam(b.DSN, "statement_timeout", "1000"))
	if err == nil || !strings.Contains(err.Error(), "unsupported startup parameter") {
		t.Fatalf("a statement_timeout start-up parameter through the pooler: %v, want it refused", err)
	}

	// Named prepared statements (pgx's default) are session state too.
	exec := WithParam(b.DSN, "default_query_exec_mode", "exec")
	a, err := pgx.Connect(ctx, exec)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(ctx)
	other, err := pgx.Connect(ctx, exec)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	var p1, p2, q int
	if err := a.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&p1); err != nil {
		t.Fatal(err)
	}
	tx, err := other.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&q); err != nil {
		t.Fatal(err)
	}
	if err := a.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&p2); err != nil {
		t.Fatal(err)
	}
	tx.Rollback(ctx)
	t.Logf("client a: backend %d then %d; client b in a transaction meanwhile: backend %d", p1, p2, q)
	if q != p1 || p2 == p1 {
		t.Fatalf("not transaction pooling: a ran on %d then %d, b on %d", p1, p2, q)
	}
}
