package gate

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/schemadiff"
	"go.yaml.in/yaml/v3"
)

// Approval is a recorded sign-off for one release: an approvals/<name>.yaml file
//
//	approver: jane.doe
//	tool: refund.create_request
//	version: 2.2.0
//	approved_at: 2026-11-28T09:30:00Z
//	note: optional free text
//
// or the --approval NAME flag (approved now).
type Approval struct {
	Approver   string    `json:"approver" yaml:"approver"`
	Tool       string    `json:"tool" yaml:"tool"`
	Version    string    `json:"version" yaml:"version"`
	ApprovedAt time.Time `json:"approved_at" yaml:"approved_at"`
	Note       string    `json:"note,omitempty" yaml:"note"`
	// Source is the file the approval came from, or "--approval".
	Source string `json:"source" yaml:"-"`
}

// ParseApproval decodes one approvals/ file; every field but note is required.
func ParseApproval(data []byte, source string) (Approval, error) {
	var a Approval
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	if err := dec.Decode(&a); err != nil {
		return Approval{}, fmt.Errorf("%s: %w", source, err)
	}
	a.Source = source
	a.Version = strings.TrimPrefix(a.Version, "v")
	var missing []string
	for _, f := range []struct {
		name  string
		empty bool
	}{{"approver", a.Approver == ""}, {"tool", a.Tool == ""}, {"version", a.Version == ""}, {"approved_at", a.ApprovedAt.IsZero()}} {
		if f.empty {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return Approval{}, fmt.Errorf("%s: approval needs %s", source, strings.Join(missing, ", "))
	}
	return a, nil
}

// ErrNoApprover refuses an empty --approval.
var ErrNoApprover = errors.New("--approval needs the approver's name")

// findApproval returns the first approval of tool@version recorded no later than now.
func findApproval(as []Approval, tool, version string, now time.Time) *Approval {
	for i := range as {
		a := &as[i]
		if a.Tool == tool && strings.TrimPrefix(a.Version, "v") == version && !a.ApprovedAt.After(now) {
			return a
		}
	}
	return nil
}

// ApprovalNeeds says why a release of tool t with a change of tier needs a
// recorded approval (none: it needs none): a tool whose owner.yaml sets
// risk_level high under a release policy with high_risk_requires_approval,
// and any high-risk or major change.
func ApprovalNeeds(t *contract.Tool, tier schemadiff.Tier) []string {
	needs := []string{}
	if t.Owner.RiskLevel == "high" && t.Policy.Gate.HighRiskRequiresApproval {
		needs = append(needs, "tool risk_level is high")
	}
	if tier == schemadiff.TierHighRisk || tier == schemadiff.TierMajor {
		needs = append(needs, "the change is "+string(tier))
	}
	return needs
}

// PromotionApproval applies the gate's approval check to making version to
// the default in place of from (toolgate rollout promote): nil when no
// approval is needed, the approval found when one is, or an error naming
// what is missing.
func PromotionApproval(t *contract.Tool, from, to *contract.Version, approvals []Approval, now time.Time) (*Approval, error) {
	rep, err := diff(t, from, to)
	if err != nil {
		return nil, err
	}
	needs := ApprovalNeeds(t, rep.Tier)
	if len(needs) == 0 {
		return nil, nil
	}
	if a := findApproval(approvals, t.ID, to.Version, now); a != nil {
		return a, nil
	}
	return nil, fmt.Errorf("approval required (%s): no approvals/ file names %s %s with an approval time before now", strings.Join(needs, "; "), t.ID, to.Version)
}
