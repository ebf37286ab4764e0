//go:build !toolgate_brokenclaim

package ledger

import "context"

// Normal builds: the claim hooks called from service.go do exactly what the
// service would do without them. brokenclaim_on.go (build tag
// toolgate_brokenclaim, tests only) breaks the claim on purpose.

// startInsert is Start's atomic insert-and-claim.
func startInsert(ctx context.Context, st Store, a *Action) error { return st.Insert(ctx, a) }

// claimWrite is Claim's compare-and-set write.
func claimWrite(ctx context.Context, s *Service, a, b *Action) error { return s.write(ctx, a, b) }
