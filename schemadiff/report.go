package schemadiff

import (
	"sort"
	"strconv"
	"strings"
)

// Direction says who writes and who reads the data a schema describes.
type Direction string

const (
	// Input is a tool's parameters: old agents write, the new tool reads. Narrowing breaks.
	Input Direction = "input"
	// Output is a tool's result: the new tool writes, old agents read. Widening breaks.
	Output Direction = "output"
	// Tool is tool-level metadata read by the model (name, description, effect).
	Tool Direction = "tool"
)

// flip returns the other data direction; Tool stays Tool.
func (d Direction) flip() Direction {
	switch d {
	case Input:
		return Output
	case Output:
		return Input
	}
	return d
}

// Tier is how dangerous a change is. Tiers are ordered: none < compatible < high_risk < major.
type Tier string

const (
	TierNone       Tier = "none"       // no change at all
	TierCompatible Tier = "compatible" // old agents keep working; needs a minor bump
	TierHighRisk   Tier = "high_risk"  // needs contract replay to pass; gated in CI
	TierMajor      Tier = "major"      // needs a major bump or a dual track
)

// Rank orders tiers; unknown tiers rank as none.
func (t Tier) Rank() int {
	switch t {
	case TierCompatible:
		return 1
	case TierHighRisk:
		return 2
	case TierMajor:
		return 3
	}
	return 0
}

// Bump is a semantic-version increment: "none", "patch", "minor" or "major".
type Bump string

const (
	BumpNone      Bump = "none"
	BumpPatch     Bump = "patch"
	BumpMinor     Bump = "minor"
	BumpMajor     Bump = "major"
	BumpDowngrade Bump = "downgrade" // the new version is lower than the old one
)

func (b Bump) rank() int {
	switch b {
	case BumpPatch:
		return 1
	case BumpMinor:
		return 2
	case BumpMajor:
		return 3
	case BumpDowngrade:
		return -1
	}
	return 0
}

// RequiredBump is the smallest bump a tier needs: none for no change, minor for
// compatible and high-risk changes, major for major ones.
func RequiredBump(t Tier) Bump {
	switch t {
	case TierCompatible, TierHighRisk:
		return BumpMinor
	case TierMajor:
		return BumpMajor
	}
	return BumpNone
}

// DeclaredBump compares two MAJOR.MINOR.PATCH versions (a leading "v" and any
// pre-release or build suffix are ignored). ok is false when either does not parse.
func DeclaredBump(oldV, newV string) (b Bump, ok bool) {
	o, ok1 := parseSemver(oldV)
	n, ok2 := parseSemver(newV)
	if !ok1 || !ok2 {
		return "", false
	}
	for i := 0; i < 3; i++ {
		if n[i] > o[i] {
			return [3]Bump{BumpMajor, BumpMinor, BumpPatch}[i], true
		}
		if n[i] < o[i] {
			return BumpDowngrade, true
		}
	}
	return BumpNone, true
}

func parseSemver(s string) ([3]int, bool) {
	var v [3]int
	s = strings.TrimPrefix(s, "v")
	if i := strings.IndexAny(s, "-+"); i >= 0 {
		s = s[:i]
	}
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return v, false
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return v, false
		}
		v[i] = n
	}
	return v, true
}

// Change is one classified difference between two contracts or schemas.
type Change struct {
	Kind      string    `json:"kind"`      // stable identifier, e.g. "enum_value_removed"
	Pointer   string    `json:"pointer"`   // JSON pointer into the new document (the old one when removed)
	Direction Direction `json:"direction"` // input, output or tool
	Tier      Tier      `json:"tier"`
	Detail    string    `json:"detail"` // human-readable explanation
	// Counterexample is a validated instance that breaks, on high-risk and major changes
	// about accepted values when one could be built.
	Counterexample *Counterexample `json:"counterexample,omitempty"`
	// NoCounterexample says why a high-risk or major change has no counterexample.
	NoCounterexample string `json:"no_counterexample,omitempty"`

	impact string // x-impact of the field the change touches, "" when none
	from   string // for renames and moves: the old property's pointer
}

// Report is the result of a diff. Its JSON form is the `toolgate diff --format json` output.
type Report struct {
	Changes      []Change `json:"changes"`
	Tier         Tier     `json:"tier"`
	RequiredBump Bump     `json:"required_bump"`
	// DeclaredBump is the bump between the two contracts' versions; nil for plain schemas.
	DeclaredBump *Bump `json:"declared_bump"`
	// BumpOK says whether the declared bump satisfies the required one. Without declared
	// versions it is true only when the tier is none or compatible.
	BumpOK bool `json:"bump_ok"`
}

// OK reports whether the change set is acceptable: the verdict behind exit code 0.
func (r Report) OK() bool { return r.BumpOK }

// Options tune the classification. The zero value applies the rules with no consumers.
type Options struct {
	// Consumers is the number of agents that consume the tool (owner.yaml). With two or
	// more, every high-risk change is raised to major. Defaults to 0.
	Consumers int
}

// finish raises tiers, sorts the changes and computes the overall verdict.
func finish(changes []Change, opts Options, declared *Bump) Report {
	for i := range changes {
		c := &changes[i]
		if c.Tier != TierHighRisk {
			continue
		}
		switch {
		case c.impact != "":
			c.Tier = TierMajor
			c.Detail += " (raised to major: field marked x-impact " + c.impact + ")"
		case opts.Consumers >= 2:
			c.Tier = TierMajor
			c.Detail += " (raised to major: tool has " + strconv.Itoa(opts.Consumers) + " consumers)"
		}
	}
	for i := range changes {
		c := &changes[i]
		if c.Tier.Rank() >= TierHighRisk.Rank() && c.Counterexample == nil && c.NoCounterexample == "" {
			c.NoCounterexample = whyNoCounterexample(c.Kind)
		}
	}
	sort.SliceStable(changes, func(i, j int) bool {
		a, b := changes[i], changes[j]
		if a.Pointer != b.Pointer {
			return a.Pointer < b.Pointer
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		return a.Detail < b.Detail
	})
	if changes == nil {
		changes = []Change{}
	}
	r := Report{Changes: changes, Tier: TierNone, DeclaredBump: declared}
	for _, c := range changes {
		if c.Tier.Rank() > r.Tier.Rank() {
			r.Tier = c.Tier
		}
	}
	r.RequiredBump = RequiredBump(r.Tier)
	if declared == nil {
		r.BumpOK = r.Tier.Rank() <= TierCompatible.Rank()
	} else {
		r.BumpOK = declared.rank() >= r.RequiredBump.rank()
	}
	return r
}

// whyNoCounterexample explains, per kind, why a risky change has no instance to show.
func whyNoCounterexample(kind string) string {
	switch kind {
	case "description_changed":
		return "no value is refused: a description is prompt text the model reads, so changing it may change what agents send"
	case "default_added", "default_removed", "default_changed":
		return "no value is refused: a default changes what the tool does when the field is omitted"
	case "extension_changed":
		return "no value is refused: the change is to a toolgate marking, not to what the schema accepts"
	case "keyword_changed":
		return "the validator does not apply this keyword (unknown, or not part of the document's draft); it may be a typo that switched a check off"
	case "schema_changed":
		return "not a schema the validator can read"
	case "ref_changed":
		return "the $ref points outside the document; the validator does not load it"
	case "name_changed", "tool_id_changed", "effect_changed":
		return "a change to the tool itself, not to the values it accepts"
	case "error_removed", "error_category_changed", "error_status_changed", "error_retryable_changed":
		return "the error catalogue describes failures, not values"
	case "rule_added", "rule_changed", "rule_outcome_changed":
		return "CEL rules are not compared by the values they accept; contract replay decides"
	}
	return "no counterexample is available for this kind of change"
}
