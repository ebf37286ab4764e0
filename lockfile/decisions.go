package lockfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/toolgate/toolgate/contract"
)

// DecisionEntry is one locked rule record.
type DecisionEntry struct {
	ID string `json:"id"`
	// File is the record's path relative to the tools directory, with forward slashes.
	File string `json:"file"`
	// Digest is "sha256:<hex>" of the file's bytes exactly as on disk.
	Digest   string    `json:"digest"`
	LockedAt time.Time `json:"locked_at"`
}

// FindDecision returns the entry of a rule record, or nil.
func (l *Lock) FindDecision(id string) *DecisionEntry {
	if l == nil {
		return nil
	}
	for i := range l.Decisions {
		if l.Decisions[i].ID == id {
			return &l.Decisions[i]
		}
	}
	return nil
}

func (l *Lock) checkDecisionEntries() error {
	seen := map[string]bool{}
	for i, e := range l.Decisions {
		if e.ID == "" || e.File == "" || !strings.HasPrefix(e.Digest, "sha256:") {
			return fmt.Errorf("parse %s: decision entry %d needs id, file and a sha256: digest", FileName, i)
		}
		if seen[e.ID] {
			return fmt.Errorf("parse %s: decision %s is locked twice", FileName, e.ID)
		}
		seen[e.ID] = true
	}
	return nil
}

// buildDecisions locks every rule record of reg on top of prev's entries: a
// record already locked keeps its locked_at, and one whose file changed is a
// Changed violation (unless force); entries whose file is gone are kept, so
// a deleted record stays visible to CheckDecisions.
func buildDecisions(reg *contract.Registry, prev *Lock, force bool, now time.Time, changed []Violation) ([]DecisionEntry, []Violation) {
	var out []DecisionEntry
	seen := map[string]bool{}
	for _, d := range reg.Decisions() {
		rel, err := filepath.Rel(reg.Dir, d.File)
		if err != nil {
			rel = d.File
		}
		e := DecisionEntry{ID: d.ID, File: filepath.ToSlash(rel), Digest: Digest(d.Raw), LockedAt: now}
		if old := prev.FindDecision(d.ID); old != nil {
			if old.Digest != e.Digest && !force {
				o := *old
				changed = append(changed, Violation{Kind: Changed, Record: &o, Got: e.Digest})
			}
			e.LockedAt = old.LockedAt
		}
		seen[d.ID] = true
		out = append(out, e)
	}
	if prev != nil {
		for _, e := range prev.Decisions {
			if !seen[e.ID] {
				out = append(out, e)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, changed
}

// CheckDecisions compares every locked rule record under dir with its digest:
// a record edited in place is Changed (supersede it instead), one whose file
// is gone is Removed (a superseded record is kept, never deleted).
func CheckDecisions(dir string, l *Lock) []Violation {
	if l == nil {
		return nil
	}
	var out []Violation
	for _, e := range l.Decisions {
		rec := e
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(e.File)))
		switch {
		case errors.Is(err, os.ErrNotExist):
			out = append(out, Violation{Kind: Removed, Record: &rec})
		case err != nil:
			out = append(out, Violation{Kind: Changed, Record: &rec, Got: "unreadable"})
		case Digest(data) != e.Digest:
			out = append(out, Violation{Kind: Changed, Record: &rec, Got: Digest(data)})
		}
	}
	return out
}

func (v Violation) recordString() string {
	if v.Kind == Removed {
		return fmt.Sprintf("locked rule record %s was removed (%s)", v.Record.ID, v.Record.File)
	}
	return fmt.Sprintf("locked rule record %s was edited in place: %s is %s, locked as %s",
		v.Record.ID, v.Record.File, short(v.Got), short(v.Record.Digest))
}
