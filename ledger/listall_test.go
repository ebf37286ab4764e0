package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"

	"github.com/toolgate/toolgate/ledger"
)

// pages serves n actions in pages of f.Limit, the cursor being the offset.
type pages struct {
	n     int
	calls []ledger.Filter
	fail  bool
}

func (p *pages) List(_ context.Context, f ledger.Filter) (ledger.Page, error) {
	p.calls = append(p.calls, f)
	if p.fail {
		return ledger.Page{}, ledger.ErrUnavailable
	}
	from, _ := strconv.Atoi(f.Cursor)
	var page ledger.Page
	for i := from; i < p.n && i < from+f.Limit; i++ {
		page.Actions = append(page.Actions, &ledger.Action{ID: fmt.Sprintf("a-%04d", i)})
	}
	if next := from + f.Limit; next < p.n {
		page.Next = strconv.Itoa(next)
	}
	return page, nil
}

func TestListAllFollowsEveryPage(t *testing.T) {
	t.Parallel()
	p := &pages{n: 2*ledger.MaxListLimit + 3}
	got, err := ledger.ListAll(context.Background(), p, ledger.Filter{Tenant: "acme", ToolID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != p.n || got[0].ID != "a-0000" || got[len(got)-1].ID != fmt.Sprintf("a-%04d", p.n-1) {
		t.Fatalf("%d actions, want %d in order", len(got), p.n)
	}
	if len(p.calls) != 3 || p.calls[0].Limit != ledger.MaxListLimit || p.calls[2].Tenant != "acme" || p.calls[2].ToolID != "t" {
		t.Fatalf("pages asked: %+v", p.calls)
	}
	p = &pages{fail: true}
	if _, err := ledger.ListAll(context.Background(), p, ledger.Filter{Tenant: "acme"}); !errors.Is(err, ledger.ErrUnavailable) {
		t.Fatalf("a failing page: %v, want it wrapped", err)
	}
}
