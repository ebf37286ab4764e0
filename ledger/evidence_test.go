package ledger_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/ledger"
)

func TestProviderEvidenceIsBoundedInTheLedger(t *testing.T) {
	t.Parallel()
	s, _ := setup(t)
	a, _, err := s.Start(ctx, "acme", "evidence-0001", ledger.StartSpec{ToolID: "refund", Version: "1.0.0", ArgsDigest: "sha256:aa",
		Arguments: []byte(`{}`), Provider: &ledger.ProviderCall{Name: "openai", CallID: strings.Repeat("é", 200)}})
	if err != nil {
		t.Fatal(err)
	}
	if got := a.ProviderCalls[0].CallID; len(got) != 254 || got != strings.Repeat("é", 127) {
		t.Fatalf("first call id kept as %d bytes %q", len(got), got[:8])
	}
	for i := range 60 {
		id := fmt.Sprintf("call_%03d", i)
		if err := s.AddProviderCall(ctx, a, ledger.ProviderCall{Name: "openai", CallID: id}); err != nil {
			t.Fatal(err)
		}
		if err := s.AddProviderCall(ctx, a, ledger.ProviderCall{Name: "openai", CallID: id}); err != nil { // the same again: recorded once
			t.Fatal(err)
		}
	}
	got, err := s.Store.Get(ctx, "acme", a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.ProviderCalls) != ledger.MaxProviderCalls || got.ProviderCallsOmitted < 61-ledger.MaxProviderCalls || got.ProviderCalls[19].CallID != "call_018" {
		t.Fatalf("%d calls kept, %d omitted", len(got.ProviderCalls), got.ProviderCallsOmitted)
	}
}

func TestEvidenceJSON(t *testing.T) {
	t.Parallel()
	pcs := []ledger.ProviderCall{{Name: "openai", CallID: "c1"}}
	for _, omitted := range []int{0, 7} {
		b := ledger.AppendEvidenceJSON(nil, pcs, omitted)
		got, n, err := ledger.DecodeEvidenceJSON(b)
		if err != nil || n != omitted || len(got) != 1 || got[0].CallID != "c1" {
			t.Fatalf("%s: %v %d %v", b, got, n, err)
		}
	}
	if string(ledger.AppendEvidenceJSON(nil, pcs, 0)) != string(ledger.AppendProviderCallsJSON(nil, pcs)) {
		t.Fatal("without omitted calls the stored form is the plain array")
	}
}
