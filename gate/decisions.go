package gate

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/toolgate/toolgate/contract"
)

// CheckRecords is the check that a release keeps what the live rule records
// of its tool rely on (docs/reference/files.md).
const CheckRecords = "rule-records"

// checkRecords adds one failing line per field or enum value a live rule
// record of t relies on that the released version does not have — naming
// the record, and whether the release removes it or the previous version
// lacked it too — or one passing line when it keeps them all. It adds
// nothing for a tool no live record names.
func checkRecords(t *contract.Tool, from, to *contract.Version, records []*contract.Decision, add func(name string, ok bool, detail string)) {
	var ids []string
	failed := false
	for _, d := range records {
		if d.Tool != t.ID || !d.Live() {
			continue
		}
		ids = append(ids, d.ID)
		for _, r := range d.ReliesOn {
			held, field, _ := r.HeldBy([]*contract.Version{to})
			if held {
				continue
			}
			failed = true
			what := "the parameter " + r.Pointer
			if field {
				what = fmt.Sprintf("the value %s of %s", jsonText(r.Value), r.Pointer)
			}
			verb := "removes"
			if prev, _, _ := r.HeldBy([]*contract.Version{from}); !prev {
				verb = fmt.Sprintf("lacks (as v%s does)", from.Version)
			}
			add(CheckRecords, false, fmt.Sprintf("v%s %s %s, which live rule record %s relies on (%s): keep it, or supersede the record first",
				to.Version, verb, what, d.ID, filepath.ToSlash(filepath.Join("decisions", filepath.Base(d.File)))))
		}
	}
	if len(ids) > 0 && !failed {
		add(CheckRecords, true, fmt.Sprintf("v%s keeps every field and value the live rule records rely on (%s)", to.Version, strings.Join(ids, ", ")))
	}
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
