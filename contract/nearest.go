package contract

import (
	"fmt"
	"strings"

	"github.com/toolgate/toolgate/internal/suggest"
)

// IDs returns every tool id, sorted.
func (r *Registry) IDs() []string {
	if r == nil {
		return nil
	}
	ids := make([]string, len(r.tools))
	for i, t := range r.tools {
		ids[i] = t.ID
	}
	return ids
}

// Nearest returns the tool ids a mistyped id was probably meant to be, closest first (at
// most three); none when nothing is close.
func (r *Registry) Nearest(id string) []string {
	return suggest.Nearest(id, r.IDs(), 3)
}

// ToolNotFoundDetail is the message for a tool id the registry does not have: it names
// the nearest ids ("no tool "crm.close_tickets"; did you mean "crm.close_ticket"?"), or,
// when none is close, the tools there are (up to five). The gateway's tool_not_found
// detail and the command line's not-found errors use it.
func (r *Registry) ToolNotFoundDetail(id string) string {
	return r.ToolNotFoundDetailFor(id, nil)
}

// ToolNotFoundDetailFor is ToolNotFoundDetail naming only the tools visible accepts (nil:
// all), so that an answer to a caller never names a tool its key may not call.
func (r *Registry) ToolNotFoundDetailFor(id string, visible func(toolID string) bool) string {
	var ids []string
	for _, t := range r.IDs() {
		if visible == nil || visible(t) {
			ids = append(ids, t)
		}
	}
	if near := suggest.Nearest(id, ids, 3); len(near) > 0 {
		return fmt.Sprintf("no tool %q; %s", id, suggest.DidYouMean(near...))
	}
	switch {
	case len(ids) == 0:
		return fmt.Sprintf("no tool %q", id)
	case len(ids) <= 5:
		return fmt.Sprintf("no tool %q (the tools are %s)", id, strings.Join(ids, ", "))
	}
	return fmt.Sprintf("no tool %q (none of the %d tools has a similar id)", id, len(ids)) // len(ids) > 5
}

// VersionList returns the tool's versions, oldest first.
func (t *Tool) VersionList() []string {
	out := make([]string, len(t.Versions))
	for i, v := range t.Versions {
		out[i] = v.Version
	}
	return out
}

// NearestVersions returns the versions a missing version was probably meant to be: those
// a partial version matches ("2.1" and "v2.1" match 2.1.x; "2" matches 2.x), else those of
// the same major version, else every version; newest first, at most five.
func (t *Tool) NearestVersions(v string) []string {
	v = strings.TrimPrefix(strings.TrimSpace(v), "v")
	var matched []string
	for i := len(t.Versions) - 1; i >= 0; i-- {
		if ver := t.Versions[i].Version; v != "" && (ver == v || strings.HasPrefix(ver, v+".")) {
			matched = append(matched, ver)
		}
	}
	if len(matched) == 0 {
		major, _, _ := strings.Cut(v, ".")
		for i := len(t.Versions) - 1; i >= 0; i-- {
			if ver := t.Versions[i].Version; strings.HasPrefix(ver, major+".") {
				matched = append(matched, ver)
			}
		}
	}
	if len(matched) == 0 {
		for i := len(t.Versions) - 1; i >= 0; i-- {
			matched = append(matched, t.Versions[i].Version)
		}
	}
	if len(matched) > 5 {
		matched = matched[:5]
	}
	return matched
}

// VersionNotFoundDetail is the message for a version the tool does not have, naming the
// nearest versions: "refund.create_request has no version "2.3.0" (it has 2.2.0, 2.1.0)".
func (t *Tool) VersionNotFoundDetail(v string) string {
	near := t.NearestVersions(v)
	if len(near) == 0 {
		return fmt.Sprintf("%s has no version %q (it has no versions that load)", t.ID, v)
	}
	return fmt.Sprintf("%s has no version %q (it has %s)", t.ID, v, strings.Join(near, ", "))
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
