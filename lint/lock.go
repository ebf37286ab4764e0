package lint

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/gate"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/lockfile"
)

// checkLock compares the released versions recorded in dir/toolgate.lock with the files on
// disk. A directory without a lock has nothing to check. A locked version whose file is
// gone while its deprecation window is open (as the gate judges it at now) is an error.
func checkLock(dir string, reg *contract.Registry, now time.Time) []Finding {
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
			if t := reg.Tool(v.Entry.Tool); t != nil {
				if ok, detail := gate.DeprecationOK(t, v.Entry, now); !ok {
					id = "version-removed-early"
					msg = detail + ": restore " + v.Entry.File + " until the window is over (agents and actions bound to it still need it)"
				}
			}
		}
		out = append(out, Finding{
			ID: id, Severity: severityOf[id], Tool: v.Entry.Tool, Version: v.Entry.Version,
			File: filepath.Join(dir, filepath.FromSlash(v.Entry.File)), Message: msg,
		})
	}
	return out
}

// checkUses reports each version whose schema file is gone while a ledger
// holds live actions bound to it: they may still run, join or be reconciled.
func checkUses(reg *contract.Registry, uses map[string][]ledger.VersionUse) []Finding {
	var out []Finding
	for _, t := range reg.Tools() {
		for _, u := range uses[t.ID] {
			if u.Version == "" || u.Live == 0 || t.Version(u.Version) != nil {
				continue
			}
			out = append(out, Finding{
				ID: "version-in-use", Severity: severityOf["version-in-use"], Tool: t.ID, Version: u.Version,
				File: filepath.Join(t.Dir, "schemas", "v"+u.Version+".json"),
				Message: fmt.Sprintf("the ledger holds %d live action(s) of %s bound to v%s, whose schema file is gone: restore it until they are terminal (toolgate actions list --tool %s)",
					u.Live, t.ID, u.Version, t.ID),
			})
		}
	}
	return out
}
