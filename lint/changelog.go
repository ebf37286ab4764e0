package lint

import (
	"path/filepath"
	"regexp"
	"strings"

	"github.com/toolgate/toolgate/contract"
)

var versionRE = regexp.MustCompile(`\bv?(\d+\.\d+\.\d+)\b`)

func (c *checker) checkChangelog() {
	t := c.tool
	if t.ChangelogFile == "" {
		c.add("changelog-missing", "", filepath.Join(t.Dir, "changelog.md"), 0, "", "tool "+t.ID+" has no changelog.md")
		return
	}
	for _, v := range t.Versions {
		if !versionMentioned(t.Changelog, v.Version) {
			c.add("changelog-version-missing", v.Version, t.ChangelogFile, 0, "",
				"changelog.md does not mention version "+v.Version)
		}
	}
	// Version headings must run in one direction, each version once.
	type heading struct {
		v    contract.Semver
		line int
	}
	var hs []heading
	for i, line := range strings.Split(t.Changelog, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		m := versionRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if sv, ok := contract.ParseSemver(m[1]); ok {
			hs = append(hs, heading{sv, i + 1})
		}
	}
	dir := 0
	for i := 1; i < len(hs); i++ {
		d := hs[i].v.Compare(hs[i-1].v)
		if d == 0 || (dir != 0 && d != dir) {
			c.add("versions-not-monotonic", hs[i].v.String(), t.ChangelogFile, hs[i].line, "",
				"changelog heading "+hs[i].v.String()+" breaks the order of versions (each once, newest first or oldest first)")
			continue
		}
		if dir == 0 {
			dir = d
		}
	}
}

func versionMentioned(text, v string) bool {
	for _, m := range versionRE.FindAllStringSubmatch(text, -1) {
		if m[1] == v {
			return true
		}
	}
	return false
}
