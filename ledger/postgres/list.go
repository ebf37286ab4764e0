package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/toolgate/toolgate/ledger"
)

// List limits: the default page size and the largest one honoured (the
// ledger's, so that every store pages alike).
const (
	DefaultListLimit = ledger.DefaultListLimit
	MaxListLimit     = ledger.MaxListLimit
)

// List returns one page of the tenant's actions matching f, newest first
// (created_at descending, then id ascending, ids compared as bytes). f.Tenant
// is required. The cursor is a keyset position, so actions inserted while
// paging never shift a page: every action that existed when paging began is
// listed exactly once. A cursor this store did not issue is ErrBadCursor.
func (s *Store) List(ctx context.Context, f ledger.Filter) (_ ledger.Page, err error) {
	ctx, finish, err := s.op(ctx)
	defer finish(&err)
	if err != nil {
		return ledger.Page{}, err
	}
	if f.Tenant == "" {
		return ledger.Page{}, errors.New("list actions: tenant is required")
	}
	if f.State != "" && !f.State.Valid() {
		return ledger.Page{}, fmt.Errorf("list actions: state %q is not a ledger state", f.State)
	}
	limit := f.Limit
	switch {
	case limit <= 0:
		limit = DefaultListLimit
	case limit > MaxListLimit:
		limit = MaxListLimit
	}
	var where strings.Builder
	args := []any{f.Tenant}
	where.WriteString("tenant = $1")
	add := func(cond string, v any) {
		args = append(args, v)
		where.WriteString(" AND " + strings.ReplaceAll(cond, "$?", "$"+strconv.Itoa(len(args))))
	}
	if f.State != "" {
		add("state = $?", string(f.State))
	}
	if f.ToolID != "" {
		add("tool_id = $?", f.ToolID)
	}
	if f.PolicyVersion != "" {
		add("policy_version <> '' AND policy_version = $?", f.PolicyVersion)
	}
	if f.CorrelationID != "" {
		add("correlation_id <> '' AND correlation_id = $?", f.CorrelationID)
	}
	if f.Cursor != "" {
		at, id, err := decodeCursor(f.Cursor)
		if err != nil {
			return ledger.Page{}, fmt.Errorf("list actions: %w", err)
		}
		args = append(args, at, id)
		n := len(args)
		fmt.Fprintf(&where, " AND (created_at < $%d OR (created_at = $%d AND id > $%d))", n-1, n-1, n)
	}
	args = append(args, limit+1)
	as, err := s.query(ctx, `SELECT `+columns+` FROM actions WHERE `+where.String()+`
		ORDER BY created_at DESC, id ASC LIMIT $`+strconv.Itoa(len(args)), args...)
	if err != nil {
		return ledger.Page{}, fmt.Errorf("list actions: %w", err)
	}
	var p ledger.Page
	if len(as) > limit {
		as = as[:limit]
		last := as[limit-1]
		p.Next = encodeCursor(last.CreatedAt.UnixNano(), last.ID)
	}
	p.Actions = as
	return p, nil
}

// A cursor is base64url("v1:" + created_at nanos + ":" + id), the same form
func encodeCursor(at int64, id string) string { return ledger.EncodeCursor(at, id) }

func decodeCursor(c string) (int64, string, error) { return ledger.DecodeCursor(c) }
