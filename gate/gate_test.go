package gate

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/lockfile"
)

func setup(t *testing.T) *contract.Tool {
	t.Helper()
	reg, err := contract.Load("../examples/agent-tools")
	if err != nil {
		t.Fatal(err)
	}
	return reg.Tool("refund.create_request")
}

func TestEvaluate(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	approved := []Approval{{Approver: "jane", Tool: "refund.create_request", Version: "2.2.0", ApprovedAt: now.Add(-time.Hour), Source: "approvals/x.yaml"}}
	tests := []struct {
		name    string
		cfg     func(c *Config)
		reasons []string // substrings, one per reason, in order
	}{
		{name: "bundled release", reasons: []string{"needs a major bump", "golden cases: 1 / 2", "approval required"}},
		{name: "approved", cfg: func(c *Config) { c.Approvals = approved }, reasons: []string{"needs a major bump", "golden cases: 1 / 2"}},
		{name: "approval from the future does not count", cfg: func(c *Config) {
			c.Approvals = []Approval{approved[0]}
			c.Approvals[0].ApprovedAt = now.Add(time.Hour)
		}, reasons: []string{"needs a major bump", "golden cases", "approval required"}},
		{name: "other tool's lock violation is ignored", cfg: func(c *Config) {
			c.Approvals = approved
			c.Locked = true
			c.LockViolations = []lockfile.Violation{{Kind: lockfile.Changed, Entry: lockfile.Entry{Tool: "orders.get_order", Version: "1.0.0"}}}
		}, reasons: []string{"needs a major bump", "golden cases"}},
		{name: "own lock violation", cfg: func(c *Config) {
			c.Approvals = approved
			c.Locked = true
			c.LockViolations = []lockfile.Violation{{Kind: lockfile.Changed, Entry: lockfile.Entry{Tool: "refund.create_request", Version: "2.1.0", File: "f"}, Got: "sha256:x"}}
		}, reasons: []string{"2.1.0 changed in place", "needs a major bump", "golden cases"}},
		{name: "dropped version the policy does not deprecate", cfg: func(c *Config) {
			c.Approvals = approved
			c.LockViolations = []lockfile.Violation{{Kind: lockfile.Removed, Entry: lockfile.Entry{Tool: "refund.create_request", Version: "2.0.0"}}}
		}, reasons: []string{"needs a major bump", "golden cases", "does not list it in deprecated_versions"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := Config{Tool: setup(t), From: "2.1.0", To: "v2.2.0", Now: func() time.Time { return now }}
			if tt.cfg != nil {
				tt.cfg(&cfg)
			}
			d, err := Evaluate(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Reasons) != len(tt.reasons) {
				t.Fatalf("reasons %q, want %d", d.Reasons, len(tt.reasons))
			}
			for i, want := range tt.reasons {
				if !strings.Contains(d.Reasons[i], want) {
					t.Errorf("reason %d %q lacks %q", i, d.Reasons[i], want)
				}
			}
			if d.Allowed() || !strings.HasPrefix(Line(d), "BLOCK refund.create_request 2.1.0 -> 2.2.0: ") {
				t.Fatalf("line %q", Line(d))
			}
		})
	}
}

func TestParseApproval(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, data, err string
	}{
		{name: "complete", data: "approver: a\ntool: t.x\nversion: v1.2.3\napproved_at: 2026-01-02T03:04:05Z\n"},
		{name: "missing fields", data: "approver: a\n", err: "tool, version, approved_at"},
		{name: "unknown field", data: "approver: a\nsigned: yes\n", err: "signed"},
		{name: "bad time", data: "approver: a\ntool: t\nversion: 1.0.0\napproved_at: yesterday\n", err: "yesterday"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a, err := ParseApproval([]byte(tt.data), "f.yaml")
			if tt.err == "" {
				if err != nil || a.Version != "1.2.3" || a.Source != "f.yaml" {
					t.Fatalf("%+v %v", a, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("err %v, want %q", err, tt.err)
			}
		})
	}
}

// TestPromotionApproval: promoting a high-risk tool's version needs an
// approval of that version recorded no later than now, as a release does.
func TestPromotionApproval(t *testing.T) {
	t.Parallel()
	tl := setup(t)
	from, to := tl.Version("2.1.0"), tl.Version("2.2.0")
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	if _, err := PromotionApproval(tl, from, to, nil, now); err == nil || !strings.Contains(err.Error(), "tool risk_level is high; the change is major") {
		t.Fatalf("no approval: %v", err)
	}
	later := []Approval{{Approver: "jane.doe", Tool: tl.ID, Version: "2.2.0", ApprovedAt: now.Add(time.Hour)}}
	if _, err := PromotionApproval(tl, from, to, later, now); err == nil {
		t.Fatal("an approval dated in the future counts")
	}
	other := []Approval{{Approver: "jane.doe", Tool: tl.ID, Version: "2.1.0", ApprovedAt: now}}
	if _, err := PromotionApproval(tl, from, to, other, now); err == nil {
		t.Fatal("an approval of another version counts")
	}
	ok := append(other, Approval{Approver: "sam", Tool: tl.ID, Version: "v2.2.0", ApprovedAt: now, Source: "approvals/x.yaml"})
	if a, err := PromotionApproval(tl, from, to, ok, now); err != nil || a == nil || a.Approver != "sam" {
		t.Fatalf("approved: %+v, %v", a, err)
	}
}
