package contract

import (
	"strconv"
	"strings"
)

// Semver is a MAJOR.MINOR.PATCH version; toolgate schema versions carry no pre-release or
// build suffix.
type Semver struct{ Major, Minor, Patch int }

// ParseSemver parses "MAJOR.MINOR.PATCH" (no leading zeros, no suffix).
func ParseSemver(s string) (Semver, bool) {
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return Semver{}, false
	}
	var n [3]int
	for i, p := range parts {
		if p == "" || len(p) > 9 || (len(p) > 1 && p[0] == '0') {
			return Semver{}, false
		}
		for _, c := range p {
			if c < '0' || c > '9' {
				return Semver{}, false
			}
		}
		n[i], _ = strconv.Atoi(p)
	}
	return Semver{n[0], n[1], n[2]}, true
}

// Compare returns -1, 0 or +1.
func (a Semver) Compare(b Semver) int {
	for _, d := range [3]int{a.Major - b.Major, a.Minor - b.Minor, a.Patch - b.Patch} {
		if d < 0 {
			return -1
		}
		if d > 0 {
			return 1
		}
	}
	return 0
}

func (a Semver) String() string {
	return strconv.Itoa(a.Major) + "." + strconv.Itoa(a.Minor) + "." + strconv.Itoa(a.Patch)
}

// VersionMatches reports whether version v matches pattern: an exact version ("2.1.0") or
// one with trailing wildcards ("2.x", "2.0.x", "2.*", "x").
func VersionMatches(pattern, v string) bool {
	pattern = strings.TrimPrefix(strings.TrimSpace(pattern), "v")
	v = strings.TrimPrefix(v, "v")
	pp := strings.Split(pattern, ".")
	vp := strings.Split(v, ".")
	for i, p := range pp {
		if p == "x" || p == "X" || p == "*" {
			return true
		}
		if i >= len(vp) || p != vp[i] {
			return false
		}
	}
	return len(pp) == len(vp)
}
