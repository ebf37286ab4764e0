package lint

import (
	"path/filepath"

	"github.com/toolgate/toolgate/lockfile"
)

// checkLock compares the released versions recorded in dir/toolgate.lock with the files on
// disk. A directory without a lock has nothing to check.
func checkLock(dir string) []Finding {
	lockPath := filepath.Join(dir, lockfile.FileName)
	l, err := lockfile.Read(dir)
	if err != nil {
		return []Finding{{ID: "lock-invalid", Severity: severityOf["lock-invalid"], File: lockPath, Message: err.Error()}}
	}
	var out []Finding
	for _, v := range lockfile.Check(dir, l) {
		id := "locked-version-changed"
		msg := v.String() + "; release a new version instead (toolgate lock refuses to re-lock it)"
		if v.Kind == lockfile.Removed {
			id = "locked-version-removed"
			msg = v.String() + "; toolgate gate checks its deprecation window"
		}
		out = append(out, Finding{
			ID: id, Severity: severityOf[id], Tool: v.Entry.Tool, Version: v.Entry.Version,
			File: filepath.Join(dir, filepath.FromSlash(v.Entry.File)), Message: msg,
		})
	}
	return out
}
