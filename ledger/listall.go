package ledger

import (
	"context"
	"fmt"
)

// Lister is the part of a Store that reads pages of actions.
type Lister interface {
	List(ctx context.Context, f Filter) (Page, error)
}

// ListAll follows f's pages from its cursor to the last one and returns
// every action of them, in the store's order (newest first). f.Limit is the
// page size; 0 means MaxListLimit.
func ListAll(ctx context.Context, store Lister, f Filter) ([]*Action, error) {
	if f.Limit == 0 {
		f.Limit = MaxListLimit
	}
	var out []*Action
	for {
		page, err := store.List(ctx, f)
		if err != nil {
			return nil, fmt.Errorf("list actions of %s: %w", f.Tenant, err)
		}
		out = append(out, page.Actions...)
		if page.Next == "" {
			return out, nil
		}
		f.Cursor = page.Next
	}
}
