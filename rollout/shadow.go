package rollout

import (
	"fmt"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/ledger"
)

// Limits of what shadow validation counts, so that callers cannot grow the
// counters without bound (a pointer names an argument, and an unknown
// argument's name is the caller's choice).
const (
	// MaxPointerBytes: longer pointers are cut, with "…".
	MaxPointerBytes = 128
	// MaxShadowKinds is how many error kinds (pointer, code) one process
	// counts per tool and epoch; further kinds are counted as OtherKind.
	MaxShadowKinds = 50
	// OtherKind is the pointer and code of the kinds past MaxShadowKinds.
	OtherKind = "(other)"
)

// ErrorKind is one kind of would-be failure.
type ErrorKind struct{ Pointer, Code string }

// Kinds returns the distinct error kinds of candidate v's refused verdict.
// It keeps nothing the caller chose: an error's detail is dropped, and its
// pointer is the schema location v declares (contract.SchemaLocation: it
// stops before a member name the caller chose — an unknown argument is
// reported at the object that holds it — and at a sensitive location), so
// every pointer and code comes from the contract. An argument the candidate
// does not know keeps its name when def, the version that accepted the call,
// declares it as a property (not sensitive) at that place: the name is then
// the contract's ("Unknown argument approval_channel").
func Kinds(v, def *contract.Version, errs []contract.FieldError) []ErrorKind {
	var out []ErrorKind
	seen := map[ErrorKind]bool{}
	for _, e := range errs {
		ptr := schemaPointer(v, e)
		if e.Code == "additionalProperties" {
			// The member's name is the caller's: "/*" under the object
			// that holds it, unless def declares it there.
			parent, named := ptr, false
			if def != nil {
				if loc, ok := def.SchemaLocation(e.Pointer); ok && loc == e.Pointer && !def.SensitiveLocation(loc) && !v.SensitiveLocation(ptr) {
					ptr, named = loc, true
				}
			}
			if !named {
				ptr = parent + "/" + contract.AnyMember
			}
		}
		k := ErrorKind{Pointer: CleanPointer(ptr), Code: CleanPointer(e.Code)}
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// schemaPointer is the location of e the contract declares. A missing
// property's name comes from the schema's required list: it is kept when
// the object holding it is a declared, non-sensitive location.
func schemaPointer(v *contract.Version, e contract.FieldError) string {
	switch e.Code {
	case "required", "dependentRequired", "dependencies":
		if i := strings.LastIndexByte(e.Pointer, '/'); i >= 0 {
			parent, ok := v.SchemaLocation(e.Pointer[:i])
			if ok && !v.SensitiveLocation(parent) {
				return parent + e.Pointer[i:]
			}
			return parent
		}
	}
	loc, _ := v.SchemaLocation(e.Pointer)
	return loc
}

// CleanPointer makes a pointer (or code) safe to store and show: control
// and other non-printing characters become "?", and it is cut to
// MaxPointerBytes.
func CleanPointer(p string) string {
	var b strings.Builder
	for _, r := range p {
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			r = '?'
		}
		if b.Len()+utf8.RuneLen(r) > MaxPointerBytes {
			b.WriteString("…")
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Cause names a would-be failure in a reviewer's words, as the contract
// report does: "Missing approval_channel", "Unknown argument x", else
// "<code> at <pointer>".
func Cause(pointer, code string) string {
	field := strings.TrimPrefix(pointer, "/")
	switch {
	case pointer == OtherKind:
		return "Other errors"
	case code == "required":
		return "Missing " + field
	case code == "additionalProperties" && pointer == "/"+contract.AnyMember:
		return "Unknown argument"
	case code == "additionalProperties" && strings.HasSuffix(pointer, "/"+contract.AnyMember):
		return "Unknown argument in " + strings.TrimSuffix(pointer, "/"+contract.AnyMember)
	case code == "additionalProperties":
		return "Unknown argument " + field
	case pointer == "" || pointer == "/":
		return code + " at the arguments"
	}
	return fmt.Sprintf("%s at %s", code, pointer)
}

// OtherTenants stands, in a shadow report, for the principals of every
// tenant but the reader's: their calls are counted, their names never shown.
const OtherTenants = "(other tenants)"

// tenantSep joins a tenant and a key name in a shadow counter's principal.
const tenantSep = "\x1f"

// ShadowCounts returns the counters one shadow-validated call adds, by the
// principal (an API key name) of a tenant.
func ShadowCounts(toolID string, epoch int64, candidate, tenant, principal string, kinds []ErrorKind) []ledger.RolloutCount {
	who := tenant + tenantSep + principal
	c := func(kind, ptr, code string) ledger.RolloutCount {
		return ledger.RolloutCount{ToolID: toolID, Epoch: epoch, Version: candidate, Kind: kind, Pointer: ptr, Code: code, Principal: who, N: 1}
	}
	out := []ledger.RolloutCount{c(KindShadowCalls, "", "")}
	if len(kinds) > 0 {
		out = append(out, c(KindShadowFailed, "", ""))
	}
	for _, k := range kinds {
		out = append(out, c(KindShadowError, k.Pointer, k.Code))
	}
	return out
}

// ShadowReport sums a candidate's shadow counters, as a reader of tenant
// sees them: most frequent kinds first (ties by pointer, then code), each
// with its principals, most first. The rollout is the deployment's, so
// every tenant's calls are counted, but only the reader's tenant's key
// names are shown: the others' calls are summed as OtherTenants (so are
// counters written before they named the tenant).
func ShadowReport(counts []ledger.RolloutCount, candidate, tenant string) *api.ShadowReport {
	rep := &api.ShadowReport{Candidate: candidate, Failures: []api.ShadowFailure{}}
	byKind := map[ErrorKind]map[string]int64{}
	for _, c := range counts {
		if c.Version != candidate {
			continue
		}
		switch c.Kind {
		case KindShadowCalls:
			rep.Calls += c.N
		case KindShadowFailed:
			rep.WouldFail += c.N
		case KindShadowError:
			k := ErrorKind{c.Pointer, c.Code}
			if byKind[k] == nil {
				byKind[k] = map[string]int64{}
			}
			who := OtherTenants
			if ten, name, ok := strings.Cut(c.Principal, tenantSep); ok && ten == tenant {
				who = name
			}
			byKind[k][who] += c.N
		}
	}
	for k, who := range byKind {
		f := api.ShadowFailure{Pointer: k.Pointer, Code: k.Code, Cause: Cause(k.Pointer, k.Code), Principals: []api.PrincipalCount{}}
		for p, n := range who {
			f.Calls += n
			f.Principals = append(f.Principals, api.PrincipalCount{Principal: p, Calls: n})
		}
		sort.Slice(f.Principals, func(i, j int) bool {
			a, b := f.Principals[i], f.Principals[j]
			if a.Calls != b.Calls {
				return a.Calls > b.Calls
			}
			return a.Principal < b.Principal
		})
		rep.Failures = append(rep.Failures, f)
	}
	sort.Slice(rep.Failures, func(i, j int) bool {
		a, b := rep.Failures[i], rep.Failures[j]
		switch {
		case a.Calls != b.Calls:
			return a.Calls > b.Calls
		case a.Pointer != b.Pointer:
			return a.Pointer < b.Pointer
		}
		return a.Code < b.Code
	})
	return rep
}
