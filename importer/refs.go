package importer

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// schemaSet resolves the $refs of the schemas of one contract part
// (parameters, or result) into one $defs: a schema that is referenced once
// (and not from itself) is written in place, and so is a small schema
// without references of its own; any other is written once under $defs and
// referred to as #/$defs/NAME. So the contract grows with the schemas it
// uses, never with the number of paths through them (ten levels of doubled
// $refs stay ten definitions, not 1,024 copies).
type schemaSet struct {
	fs      *files
	counts  map[loc]int
	nodes   map[loc]node
	small   map[loc]bool
	names   map[loc]string
	taken   map[string]bool
	defs    map[string]any
	onStack map[loc]bool
	walked  int
	err     error
}

// inlineLeafBytes: a schema without $refs of its own at most this large is
// written in place wherever it is used.
const inlineLeafBytes = 256

// maxSchemaNodes caps the schema nodes one contract part walks.
const maxSchemaNodes = 2_000_000

var errTooLarge = fmt.Errorf("its schemas are larger than the %d MiB a contract may be", MaxContractBytes>>20)

func newSchemaSet(fs *files) *schemaSet {
	return &schemaSet{fs: fs, counts: map[loc]int{}, nodes: map[loc]node{}, small: map[loc]bool{},
		names: map[loc]string{}, taken: map[string]bool{}, defs: map[string]any{}, onStack: map[loc]bool{}}
}

// subschemas calls f for each subschema of a schema object, by keyword.
func subschemas(m map[string]any, at loc, f func(k string, v node, at loc) node) {
	for _, k := range sortedNames(m) {
		v := m[k]
		switch {
		case slices.Contains(oneSchema, k):
			if l, ok := v.([]any); ok && k == "items" {
				for i, sub := range l {
					l[i] = f(k, sub, at.child(k, fmt.Sprint(i)))
				}
				continue
			}
			m[k] = f(k, v, at.child(k))
		case slices.Contains(mapSchemas, k) || k == "dependencies":
			mm, ok := v.(map[string]any)
			if !ok {
				continue
			}
			for _, name := range sortedNames(mm) {
				if _, isList := mm[name].([]any); isList && k == "dependencies" {
					continue
				}
				mm[name] = f(k, mm[name], at.child(k, name))
			}
		case slices.Contains(listSchema, k):
			l, ok := v.([]any)
			if !ok {
				continue
			}
			for i, sub := range l {
				l[i] = f(k, sub, at.child(k, fmt.Sprint(i)))
			}
		}
	}
}

// count walks a schema (read only) counting the references to each target.
func (s *schemaSet) count(v node, at loc) {
	if s.err != nil {
		return
	}
	s.walked++
	if s.walked > maxSchemaNodes {
		s.err = errTooLarge
		return
	}
	m, ok := v.(map[string]any)
	if !ok {
		return
	}
	if ref, ok := m["$ref"].(string); ok {
		tv, tat, err := s.target(at, ref)
		if err != nil {
			s.err = err
			return
		}
		first := s.counts[tat] == 0
		s.counts[tat]++
		if len(m) > 1 {
			s.counts[tat]++ // with siblings it is written as a $ref beside them
		}
		if first {
			s.count(tv, tat)
		}
	}
	subschemas(shallow(m), at, func(_ string, sub node, sat loc) node {
		s.count(sub, sat)
		return sub
	})
}

func containsRef(v node, depth int) bool {
	m, ok := v.(map[string]any)
	if !ok || depth > 64 {
		return depth > 64
	}
	if _, ok := m["$ref"].(string); ok {
		return true
	}
	found := false
	subschemas(shallow(m), loc{}, func(_ string, sub node, _ loc) node {
		if !found && containsRef(sub, depth+1) {
			found = true
		}
		return sub
	})
	return found
}

// shallow copies a schema object and its maps and lists of subschemas, so
// subschemas may assign into the copy.
func shallow(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		switch x := v.(type) {
		case map[string]any:
			if slices.Contains(mapSchemas, k) || k == "dependencies" {
				c := make(map[string]any, len(x))
				for kk, vv := range x {
					c[kk] = vv
				}
				v = c
			}
		case []any:
			v = slices.Clone(x)
		}
		out[k] = v
	}
	return out
}

// target resolves a schema $ref (following a chain of pure $refs).
func (s *schemaSet) target(at loc, ref string) (node, loc, error) {
	v, tat, err := s.fs.lookup(at, ref)
	if err != nil {
		return nil, loc{}, fmt.Errorf("%s: %w", at, err)
	}
	for hops := 0; ; hops++ {
		m, ok := v.(map[string]any)
		r, isRef := m["$ref"].(string)
		if !ok || !isRef || len(m) != 1 {
			break
		}
		if hops >= maxRefHops {
			return nil, loc{}, fmt.Errorf("%s: a chain of more than %d $refs", at, maxRefHops)
		}
		if v, tat, err = s.fs.lookup(tat, r); err != nil {
			return nil, loc{}, fmt.Errorf("%s: %w", at, err)
		}
	}
	s.nodes[tat] = v
	return v, tat, nil
}

// emit writes a schema with its $refs resolved: in place or as
// #/$defs/NAME. With root, a schema that is only a $ref is written as its
// target (the parameters' and the result's top level are always in place).
func (s *schemaSet) emit(v node, at loc, root bool) node {
	if s.err != nil {
		return nil
	}
	s.walked++
	if s.walked > 2*maxSchemaNodes {
		s.err = errTooLarge
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	if ref, ok := m["$ref"].(string); ok {
		tv, tat, err := s.target(at, ref)
		if err != nil {
			s.err = err
			return nil
		}
		if len(m) == 1 && !s.onStack[tat] && (root || s.counts[tat] <= 1 || s.smallLeaf(tat, tv)) {
			s.onStack[tat] = true
			defer delete(s.onStack, tat)
			return s.emit(tv, tat, false)
		}
		name := s.define(tat, tv)
		if len(m) == 1 {
			return map[string]any{"$ref": "#/$defs/" + name}
		}
		rest := shallow(m)
		delete(rest, "$ref")
		out := s.emitObject(rest, at)
		out["$ref"] = "#/$defs/" + name
		return out
	}
	return s.emitObject(shallow(m), at)
}

func (s *schemaSet) emitObject(m map[string]any, at loc) map[string]any {
	subschemas(m, at, func(_ string, sub node, sat loc) node { return s.emit(sub, sat, false) })
	return m
}

func (s *schemaSet) smallLeaf(at loc, v node) bool {
	small, ok := s.small[at]
	if !ok {
		b, err := json.Marshal(v)
		small = err == nil && len(b) <= inlineLeafBytes && !containsRef(v, 0)
		s.small[at] = small
	}
	return small
}

var defNameRE = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// define writes a target once under $defs and returns its name.
func (s *schemaSet) define(at loc, v node) string {
	if name, ok := s.names[at]; ok {
		return name
	}
	base := at.ptr
	if i := strings.LastIndex(base, "/"); i >= 0 {
		base = base[i+1:]
	}
	base = defNameRE.ReplaceAllString(strings.ReplaceAll(strings.ReplaceAll(base, "~1", "/"), "~0", "~"), "_")
	if base == "" {
		base = strings.TrimSuffix(defNameRE.ReplaceAllString(at.file, "_"), "_json")
	}
	if base == "" {
		base = "schema"
	}
	name := base
	for n := 2; s.taken[name]; n++ {
		name = fmt.Sprintf("%s%d", base, n)
	}
	s.taken[name] = true
	s.names[at] = name
	s.defs[name] = map[string]any{}
	s.onStack[at] = true
	s.defs[name] = s.emit(v, at, false)
	delete(s.onStack, at)
	return name
}

// resolve is count then emit for one root schema.
func (s *schemaSet) resolve(v node, at loc) (node, error) {
	s.count(v, at)
	if s.err != nil {
		return nil, s.err
	}
	out := s.emit(v, at, true)
	return out, s.err
}

// derefDefs returns the $defs entry a {"$ref": "#/$defs/NAME"} names (a
// copy), else the schema itself.
func derefDefs(v node, defs map[string]any) node {
	for range maxRefHops {
		m, ok := v.(map[string]any)
		ref, isRef := m["$ref"].(string)
		if !ok || !isRef || len(m) != 1 || !strings.HasPrefix(ref, "#/$defs/") {
			return v
		}
		d, ok := defs[strings.TrimPrefix(ref, "#/$defs/")]
		if !ok {
			return v
		}
		if dm, ok := d.(map[string]any); ok {
			v = cloneMap(dm)
		} else {
			return d
		}
	}
	return v
}
