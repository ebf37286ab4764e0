package contract

import (
	"fmt"
	"strings"
)

// A case's tool.versions: the versions besides tool.version that the case is declared to
// cover, so that a case written for 1.x can keep guarding 2.x when it still should. Each
// entry is a version pattern (2.1.0, 2.x, 2.1.x: the syntax of compatible_with) or a
// range of comparators that must all hold, separated by spaces (">=1.0.0 <3.0.0"; the
// operators are >=, >, <=, < and =).

// VersionSpec is one parsed entry of a case's tool.versions.
type VersionSpec struct {
	pattern string       // a wildcard or exact pattern, or ""
	cmps    []comparator // a range
}

type comparator struct {
	op string
	v  Semver
}

// ParseVersionSpec parses one tool.versions entry.
func ParseVersionSpec(s string) (VersionSpec, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return VersionSpec{}, fmt.Errorf("an empty version range")
	}
	if !strings.ContainsAny(s[:1], "<>=") {
		if !validVersionPattern(s) {
			return VersionSpec{}, fmt.Errorf("%q is not a version, a wildcard such as 2.x or 2.0.x, or a range such as \">=1.0.0 <3.0.0\"", s)
		}
		return VersionSpec{pattern: s}, nil
	}
	var spec VersionSpec
	for _, f := range strings.Fields(s) {
		op := ""
		for _, o := range []string{">=", "<=", ">", "<", "="} {
			if strings.HasPrefix(f, o) {
				op = o
				break
			}
		}
		if op == "" {
			return VersionSpec{}, fmt.Errorf("range %q: %q has no operator (>=, >, <=, < or =)", s, f)
		}
		v, ok := ParseSemver(strings.TrimPrefix(f[len(op):], "v"))
		if !ok {
			return VersionSpec{}, fmt.Errorf("range %q: %q is not a version (MAJOR.MINOR.PATCH)", s, f[len(op):])
		}
		spec.cmps = append(spec.cmps, comparator{op: op, v: v})
	}
	return spec, nil
}

// Matches reports whether version v is in the spec.
func (s VersionSpec) Matches(v string) bool {
	if s.pattern != "" {
		return VersionMatches(s.pattern, v)
	}
	sv, ok := ParseSemver(strings.TrimPrefix(v, "v"))
	if !ok || len(s.cmps) == 0 {
		return false
	}
	for _, c := range s.cmps {
		d := sv.Compare(c.v)
		var ok bool
		switch c.op {
		case ">=":
			ok = d >= 0
		case ">":
			ok = d > 0
		case "<=":
			ok = d <= 0
		case "<":
			ok = d < 0
		case "=":
			ok = d == 0
		}
		if !ok {
			return false
		}
	}
	return true
}

// Covers reports whether the case targets version v: it was written for v (tool.version)
// or its tool.versions include v. Only such cases count as coverage of a release of v;
// cases replayed across versions (written for --from or for compatible_with) run but do
// not cover it.
func (c *Case) Covers(v string) bool {
	v = strings.TrimPrefix(v, "v")
	if c.ToolVersion == v {
		return true
	}
	for _, s := range c.VersionSpecs {
		if s.Matches(v) {
			return true
		}
	}
	return false
}
