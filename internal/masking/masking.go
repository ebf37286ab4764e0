// Package masking builds the decision log's maskers (decisionlog.Masker) from
// a tools directory, so that every sink that shows a call's payloads masks
// them alike: the decision log, every read of an action (API, dashboard, the
// CLI through the API) and `toolgate cases capture`.
//
// There are three kinds: one per tool version, from that version's
// x-sensitive pointers; one per tool, from the union of every version's
// pointers, for payloads whose version is unknown or ambiguous (a call
// refused before its version was known, a retry under an existing key with
// other arguments or another version, a version that does not exist); and
// one that erases every payload, for calls whose tool is unknown.
package masking

import (
	"errors"
	"slices"

	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/decisionlog"
)

// Set holds the maskers of one registry. It is immutable and safe for
// concurrent use.
type Set struct {
	versions map[string]*decisionlog.Masker // "tool@version"
	tools    map[string]*decisionlog.Masker // tool id: every version's pointers
	erase    *decisionlog.Masker
}

// New builds the maskers of every tool and version of reg; a pointer the
// masker refuses is an error (at start-up, not a leak at run time).
func New(reg *contract.Registry) (*Set, error) {
	s := &Set{versions: map[string]*decisionlog.Masker{}, tools: map[string]*decisionlog.Masker{}}
	var errs []error
	var err error
	if s.erase, err = decisionlog.NewMasker(decisionlog.MaskerConfig{
		Arguments: decisionlog.EraseRules(""), Result: decisionlog.EraseRules(""), State: decisionlog.EraseRules(""),
	}); err != nil {
		errs = append(errs, err)
	}
	for _, t := range reg.Tools() {
		for _, v := range t.Versions {
			m, err := newMasker(v.Sensitive())
			if err != nil {
				errs = append(errs, err)
				continue
			}
			s.versions[t.ID+"@"+v.Version] = m
		}
		m, err := ForTool(t)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		s.tools[t.ID] = m
	}
	return s, errors.Join(errs...)
}

// ForTool returns the masker of every version of t at once: what any version
// marks x-sensitive, in the arguments or the result, is masked.
func ForTool(t *contract.Tool) (*decisionlog.Masker, error) {
	var params, result []string
	for _, v := range t.Versions {
		p, r := v.Sensitive()
		params, result = append(params, p...), append(result, r...)
	}
	return newMasker(compact(params), compact(result))
}

// newMasker masks arguments by the parameters' pointers and results by the
// result's; the state probe's bodies (which have no schema, and usually show
// the resource the call changed) by both.
func newMasker(params, result []string) (*decisionlog.Masker, error) {
	return decisionlog.NewMasker(decisionlog.MaskerConfig{
		Arguments: decisionlog.MaskRules(params...),
		Result:    decisionlog.MaskRules(result...),
		State:     decisionlog.MaskRules(compact(append(slices.Clone(params), result...))...),
	})
}

func compact(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}

// Version is the masker of one tool version; for a version the registry does
// not have, the tool's (every version's pointers); for an unknown tool, one
// that erases every payload.
func (s *Set) Version(tool, version string) *decisionlog.Masker {
	if m, ok := s.versions[tool+"@"+version]; ok {
		return m
	}
	return s.Tool(tool)
}

// Tool is the masker of every version of a tool at once, or, for an unknown
// tool, one that erases every payload.
func (s *Set) Tool(tool string) *decisionlog.Masker {
	if m, ok := s.tools[tool]; ok {
		return m
	}
	return s.erase
}

// Call is the masker of one call's payloads: the version's when the arguments
// are known to have been sent for the version that served the call
// (argsVersion == version), else the tool's, else one that erases.
func (s *Set) Call(tool, argsVersion, version string) *decisionlog.Masker {
	if argsVersion != "" && argsVersion == version {
		return s.Version(tool, version)
	}
	return s.Tool(tool)
}
