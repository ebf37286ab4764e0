package sqlite

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/toolgate/toolgate/ledger"
)

// List limits: the default page size and the largest one honoured (the
// ledger's, so that every store pages alike).
const (
	DefaultListLimit = ledger.DefaultListLimit
	MaxListLimit     = ledger.MaxListLimit
)

// ErrBadCursor reports a List cursor that this store did not issue.
var ErrBadCursor = ledger.ErrBadCursor

// List returns one page of the tenant's actions matching f, newest first
// (created_at descending, then id ascending). f.Tenant is required. The cursor
// is a keyset position, so actions inserted while paging never shift a page:
// every action that existed when paging began is listed exactly once.
func (s *Store) List(ctx context.Context, f ledger.Filter) (ledger.Page, error) {
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
	where.WriteString("tenant = ?")
	args := []any{f.Tenant}
	from := "action_rows"
	switch f.State {
	case "":
	case ledger.Succeeded, ledger.Rejected:
		// No index by tenant and terminal state (migration 007): the
		// tenant's newest first, filtered. Named when nothing narrower
		// applies, so that the planner does not sort every tenant's
		// terminal actions read through the retention index.
		if f.ToolID == "" && f.PolicyVersion == "" && f.CorrelationID == "" {
			from = "action_rows INDEXED BY action_rows_tenant_created"
		}
		where.WriteString(" AND state = ?")
		args = append(args, string(f.State))
	default:
		// The partial index's term repeated, so that SQLite may use it.
		where.WriteString(" AND state NOT IN ('succeeded', 'rejected') AND state = ?")
		args = append(args, string(f.State))
	}
	if f.ToolID != "" {
		where.WriteString(" AND tool_id = ?")
		args = append(args, f.ToolID)
	}
	if f.PolicyVersion != "" {
		where.WriteString(" AND policy_version <> '' AND policy_version = ?")
		args = append(args, f.PolicyVersion)
	}
	if f.CorrelationID != "" {
		where.WriteString(" AND correlation_id <> '' AND correlation_id = ?")
		args = append(args, f.CorrelationID)
	}
	if f.Cursor != "" {
		at, id, err := decodeCursor(f.Cursor)
		if err != nil {
			return ledger.Page{}, fmt.Errorf("list actions: %w", err)
		}
		where.WriteString(" AND (created_at < ? OR (created_at = ? AND id > ?))")
		args = append(args, at, at, id)
	}
	args = append(args, limit+1)
	as, err := s.query(ctx, `SELECT `+columns+` FROM `+from+` WHERE `+where.String()+`
		ORDER BY created_at DESC, id ASC LIMIT ?`, args...)
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

func encodeCursor(at int64, id string) string { return ledger.EncodeCursor(at, id) }

func decodeCursor(c string) (int64, string, error) { return ledger.DecodeCursor(c) }
