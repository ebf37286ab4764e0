package lint

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/internal/suggest"
	"github.com/toolgate/toolgate/lockfile"
)

// checkDecisions lints the rule records (decisions/, docs/reference/files.md): a live record
// must rely only on a tool, fields and values a current version has; every
// record should say why and when to review it; a locked record is never
// edited or deleted.
func checkDecisions(reg *contract.Registry, dir string) []Finding {
	var out []Finding
	add := func(id string, d *contract.Decision, path, msg string) {
		out = append(out, Finding{ID: id, Severity: severityOf[id], Tool: d.Tool, File: d.File, Line: d.Line(path), Message: msg})
	}
	for _, d := range reg.Decisions() {
		var missing []string
		for _, f := range []struct{ key, v string }{{"context", d.Context}, {"review_trigger", d.ReviewTrigger}} {
			if strings.TrimSpace(f.v) == "" {
				missing = append(missing, f.key)
			}
		}
		if len(d.Alternatives) == 0 {
			missing = append(missing, "alternatives")
		}
		if len(missing) > 0 {
			add("decision-incomplete", d, "id", fmt.Sprintf("rule record %s has no %s: a record keeps the why, the options weighed and when to look again apart from the decision", d.ID, strings.Join(missing, ", ")))
		}
		if len(d.ReliesOn) == 0 {
			add("decision-untestable", d, "id", fmt.Sprintf("rule record %s relies on no field: name the fields and enum values its rule uses (relies_on), so lint and the release gate can hold the tool to them", d.ID))
		}
		if !d.Live() {
			continue // a superseded record is history: what it relied on may be gone
		}
		t := reg.Tool(d.Tool)
		if t == nil {
			add("decision-tool-unknown", d, "tool", fmt.Sprintf("live rule record %s relies on %s", d.ID, reg.ToolNotFoundDetail(d.Tool)))
			continue
		}
		versions := CurrentVersions(t)
		if len(versions) == 0 {
			continue // no version loaded: its load problems are reported already
		}
		for i, r := range d.ReliesOn {
			path := fmt.Sprintf("relies_on[%d]", i)
			ok, msg := holds(versions, r)
			switch {
			case ok:
			case strings.HasPrefix(msg, "value"):
				add("decision-value-unknown", d, path+".value", fmt.Sprintf("live rule record %s relies on %s; %s", d.ID, describe(r), msg))
			default:
				add("decision-field-unknown", d, path+".pointer", fmt.Sprintf("live rule record %s relies on %s; %s", d.ID, describe(r), msg))
			}
		}
	}
	out = append(out, checkDecisionLock(reg, dir)...)
	return out
}

// checkDecisionLock reports locked records edited in place or deleted.
func checkDecisionLock(reg *contract.Registry, dir string) []Finding {
	l, err := lockfile.Read(dir)
	if err != nil || l == nil {
		return nil // lock-invalid is checkLock's
	}
	var out []Finding
	for _, v := range lockfile.CheckDecisions(dir, l) {
		f := Finding{File: filepath.Join(dir, filepath.FromSlash(v.Record.File))}
		if d := reg.Decision(v.Record.ID); d != nil {
			f.Tool = d.Tool
		}
		if v.Kind == lockfile.Removed {
			f.ID = "decision-removed"
			f.Message = v.String() + ": a record is never deleted; restore it (a superseded record stays as history)"
		} else {
			f.ID = "decision-edited-in-place"
			f.Message = v.String() + ": supersede it — write a new record with supersedes: " + v.Record.ID + " and restore this one"
		}
		f.Severity = severityOf[f.ID]
		out = append(out, f)
	}
	return out
}

// CurrentVersions are the versions a rule may rely on: those the release
// policy does not deprecate (the default, when it deprecates them all).
func CurrentVersions(t *contract.Tool) []*contract.Version {
	var out []*contract.Version
	for _, v := range t.Versions {
		if !t.Policy.Deprecates(v.Version) {
			out = append(out, v)
		}
	}
	if len(out) == 0 && t.Default() != nil {
		out = []*contract.Version{t.Default()}
	}
	return out
}

func describe(r contract.ReliesOn) string {
	if r.Value == nil {
		return "field " + r.Pointer
	}
	return fmt.Sprintf("%s = %s", r.Pointer, jsonOf(r.Value))
}

func jsonOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// holds reports whether one of versions has the field r points at and,
// when r names a value, accepts it there; else it says why not ("value …"
// when only the value is missing).
func holds(versions []*contract.Version, r contract.ReliesOn) (bool, string) {
	held, field, enum := r.HeldBy(versions)
	if held {
		return true, ""
	}
	var names []string
	for _, v := range versions {
		names = append(names, v.Version)
	}
	vs := "v" + strings.Join(names, ", v")
	if !field {
		return false, fmt.Sprintf("no current version of the tool (%s) has the parameter %s", vs, r.Pointer)
	}
	msg := fmt.Sprintf("value %s is not a value any current version (%s) accepts at %s", jsonOf(r.Value), vs, r.Pointer)
	if len(enum) > 0 {
		msg += " (enum: " + strings.Join(enum, ", ") + ")"
		if s, ok := r.Value.(string); ok {
			var plain []string
			for _, a := range enum {
				if u, err := strconv.Unquote(a); err == nil {
					plain = append(plain, u)
				}
			}
			if near := suggest.Nearest(s, plain, 1); len(near) > 0 {
				msg += "; " + suggest.DidYouMean(near...)
			}
		}
	}
	return false, msg
}
