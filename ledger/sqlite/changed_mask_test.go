package sqlite

import (
	"math/bits"
	"slices"
	"testing"
	"time"

	"github.com/toolgate/toolgate/ledger"
)

// The writes of an action's life set only what they change (docs/
// performance.md, "The ledger's storage shape: SQLite"): the columns of
// each one's mask, by name.
func TestNarrowWritesSetOnlyWhatChanged(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	running := func() *ledger.Action {
		a := &ledger.Action{Tenant: "t", ID: "a", ToolID: "x", Version: "1", State: ledger.Pending, CreatedAt: t0, UpdatedAt: t0,
			Arguments: []byte(`{"a":1}`), ArgsDigest: "sha256:00", Rev: 1}
		if err := a.Move(ledger.Running, ledger.ByGateway, "", "claim", t0); err != nil {
			t.Fatal(err)
		}
		a.Attempts, a.LeaseOwner, a.LeaseUntil = 1, "g", t0.Add(time.Minute)
		return a
	}
	cols := func(prev, a *ledger.Action) []string {
		m, _ := changed(prev, a)
		var out []string
		for ; m != 0; m &= m - 1 {
			out = append(out, setCols[bits.TrailingZeros32(m)])
		}
		return out
	}
	for _, c := range []struct {
		name   string
		change func(a *ledger.Action)
		want   []string
	}{
		{"completion", func(a *ledger.Action) {
			a.Move(ledger.Succeeded, ledger.ByGateway, "", "201", t0.Add(time.Second))
			a.LeaseOwner, a.LeaseUntil, a.UpdatedAt = "", time.Time{}, t0.Add(time.Second)
			a.Result = &ledger.Result{StatusCode: 201, Body: []byte("{}")}
		}, []string{"state = ?", "lease_until = ?", "doc = ?", "result_body = ?", "history = history || ?", "rev = ?"}},
		{"renewal", func(a *ledger.Action) {
			a.LeaseUntil = t0.Add(2 * time.Minute)
		}, []string{"lease_until = ?", "rev = ?"}},
		{"provider evidence", func(a *ledger.Action) {
			a.AddProviderCall(ledger.ProviderCall{Name: "openai", CallID: "c1", At: t0})
		}, []string{"evidence = ?", "rev = ?"}},
		{"history rewritten", func(a *ledger.Action) {
			a.History = a.History[:0]
		}, []string{"history = ?", "rev = ?"}},
	} {
		prev := running()
		a := running()
		c.change(a)
		if got := cols(prev, a); !slices.Equal(got, c.want) {
			t.Errorf("%s sets %q, want %q", c.name, got, c.want)
		}
	}
}
