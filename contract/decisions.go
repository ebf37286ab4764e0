package contract

import (
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/toolgate/toolgate/internal/suggest"
)

// decisionID is the form of a rule record's id (and file name): lowercase
// words of letters, digits, '.', '_' and '-'.
var decisionID = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,127}$`)

// Live reports whether no record supersedes d.
func (d *Decision) Live() bool { return d.SupersededBy == "" }

// Decision returns the rule record with that id, or nil.
func (r *Registry) Decision(id string) *Decision {
	for _, d := range r.decisions {
		if d.ID == id {
			return d
		}
	}
	return nil
}

// DecisionIDs lists the records' ids, sorted.
func (r *Registry) DecisionIDs() []string {
	out := make([]string, 0, len(r.decisions))
	for _, d := range r.decisions {
		out = append(out, d.ID)
	}
	sort.Strings(out)
	return out
}

// LiveDecisions returns the records no other record supersedes that name tool
// ("" for every tool), sorted by id.
func (r *Registry) LiveDecisions(tool string) []*Decision {
	var out []*Decision
	for _, d := range r.decisions {
		if d.Live() && (tool == "" || d.Tool == tool) {
			out = append(out, d)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// loadDecision reads one decisions/<id>.yaml strictly: unknown fields are
// errors (the YAML decoder), and so are a missing id, decision, owner, date,
// policy_version or tool, an id that is not the file's name, a date that is
// not YYYY-MM-DD, a relies_on entry without a JSON pointer or with a value
// that is not a scalar. What the record relies on is lint's to judge.
func (l *loader) loadDecision(reg *Registry, path string) {
	y := &yamlFile{l: l, path: path}
	d := &Decision{File: path}
	before := len(l.problems)
	if _, ok := y.decode(d); !ok && y.lines == nil {
		return // not YAML at all
	}
	base := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	for _, f := range []struct{ key, v string }{
		{"id", d.ID}, {"decision", d.Decision}, {"owner", d.Owner}, {"date", d.Date},
		{"policy_version", d.PolicyVersion}, {"tool", d.Tool},
	} {
		if strings.TrimSpace(f.v) == "" {
			y.bad(f.key, "is required (docs/reference/files.md: id, decision, owner, date, policy_version, tool)")
		}
	}
	switch {
	case d.ID == "":
	case !decisionID.MatchString(d.ID):
		y.bad("id", "%q is not a record id: lowercase letters, digits, '.', '_' and '-'", d.ID)
	case d.ID != base:
		y.bad("id", "%q is not the file's name (%s): a record is decisions/<id>.yaml", d.ID, filepath.Base(path))
	}
	if d.Date != "" {
		if _, err := time.Parse(time.DateOnly, d.Date); err != nil {
			y.bad("date", "%q is not a date YYYY-MM-DD", d.Date)
		}
	}
	for i, r := range d.ReliesOn {
		key := fmt.Sprintf("relies_on[%d]", i)
		switch {
		case r.Pointer == "":
			y.bad(key, "needs a pointer: the JSON pointer of a parameter, such as /reason")
		case !validPointer(r.Pointer):
			y.bad(key+".pointer", "%q is not a JSON pointer into the parameters (RFC 6901, starting with /)", r.Pointer)
		}
		switch r.Value.(type) {
		case nil, string, bool, int, int64, uint64, float64:
		default:
			y.bad(key+".value", "must be one value (a string, number or boolean), not %T", r.Value)
		}
	}
	if d.Supersedes == d.ID && d.ID != "" {
		y.bad("supersedes", "a record cannot supersede itself")
	}
	if len(l.problems) > before {
		return
	}
	d.lines = y.lines
	d.Raw, _ = l.readFile(path) // read already by decode
	reg.decisions = append(reg.decisions, d)
}

// validPointer checks RFC 6901 syntax of a non-empty pointer: it starts with
// "/" and uses "~" only as "~0" or "~1".
func validPointer(p string) bool {
	if !strings.HasPrefix(p, "/") {
		return false
	}
	for i := 0; i < len(p); i++ {
		if p[i] == '~' && (i+1 >= len(p) || (p[i+1] != '0' && p[i+1] != '1')) {
			return false
		}
	}
	return true
}

// linkDecisions checks what records say of each other: ids are unique, a
// record supersedes one that exists, no record is superseded twice, and no
// chain of supersedes returns to where it started. It sets SupersededBy.
func (l *loader) linkDecisions(reg *Registry) {
	sort.Slice(reg.decisions, func(i, j int) bool { return reg.decisions[i].File < reg.decisions[j].File })
	byID := map[string]*Decision{}
	var kept []*Decision
	for _, d := range reg.decisions {
		if first, dup := byID[d.ID]; dup {
			l.add(d.File, d.line("id"), "id: %q is also the id of %s", d.ID, first.File)
			continue
		}
		byID[d.ID] = d
		kept = append(kept, d)
	}
	reg.decisions = kept
	ids := reg.DecisionIDs()
	for _, d := range kept {
		if d.Supersedes == "" {
			continue
		}
		others := make([]string, 0, len(ids))
		for _, id := range ids {
			if id != d.ID {
				others = append(others, id)
			}
		}
		old, ok := byID[d.Supersedes]
		switch {
		case !ok:
			msg := fmt.Sprintf("supersedes: no record %q in decisions/", d.Supersedes)
			if near := suggest.Nearest(d.Supersedes, others, 1); len(near) > 0 {
				msg += "; " + suggest.DidYouMean(near...)
			}
			msg += " (a superseded record is kept, never deleted)"
			l.add(d.File, d.line("supersedes"), "%s", msg)
		case old.SupersededBy != "":
			l.add(d.File, d.line("supersedes"), "supersedes: %s is already superseded by %s; supersede %s instead", old.ID, old.SupersededBy, old.SupersededBy)
		default:
			old.SupersededBy = d.ID
		}
	}
	for _, d := range kept {
		seen := map[string]bool{d.ID: true}
		for cur := byID[d.Supersedes]; cur != nil; cur = byID[cur.Supersedes] {
			if seen[cur.ID] {
				l.add(d.File, d.line("supersedes"), "supersedes: the chain from %s comes back to %s", d.ID, cur.ID)
				break
			}
			seen[cur.ID] = true
		}
	}
}

// line is the line of a YAML path in the record's file (1 when unknown).
func (d *Decision) line(path string) int {
	if d.lines == nil {
		return 1
	}
	if n := d.Line(path); n > 0 {
		return n
	}
	return 1
}
