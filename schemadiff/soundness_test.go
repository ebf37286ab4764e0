package schemadiff

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"testing"

	"github.com/toolgate/toolgate/contract"
)

// The soundness property: whenever the diff calls a schema pair compatible (or no
// change) in a direction, no instance breaks. FuzzSoundness builds pairs by mutating the
// parameters and results of the bundled example contracts (and generated schemas with
// refs, recursion and combinators), generates instances from the writer's schema with a
// generator that shares nothing with the diff, keeps those the gateway's validator
// (contract.CompileDocument) accepts, and checks the reader accepts them too. Every
// counterexample the diff shows is checked the other way. Failures found by fuzzing are
// kept under testdata/fuzz/FuzzSoundness and run with the normal tests.

var (
	baseOnce    sync.Once
	baseSchemas []any
)

// bases are the schemas mutations start from: the example contracts' parameters and
// results, and this package's contract fixtures.
func bases(t testing.TB) []any {
	baseOnce.Do(func() {
		var files []string
		for _, g := range []string{
			filepath.Join("..", "examples", "agent-tools", "*", "schemas", "*.json"),
			filepath.Join("testdata", "contracts", "*.json"),
		} {
			m, _ := filepath.Glob(g)
			files = append(files, m...)
		}
		sort.Strings(files)
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			var c map[string]any
			if json.Unmarshal(data, &c) != nil {
				continue
			}
			for _, k := range []string{"parameters", "result"} {
				if s, ok := c[k]; ok {
					baseSchemas = append(baseSchemas, s)
				}
			}
		}
	})
	if len(baseSchemas) == 0 {
		t.Fatal("no base schemas (examples/agent-tools missing?)")
	}
	return baseSchemas
}

func deepCopy(v any) any {
	b, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

// mutator applies random schema edits of the kinds the diff must judge.
type mutator struct {
	r *rand.Rand
}

// nodes lists pointers to every subschema of a document (where a mutation may apply).
func schemaNodes(v any, ptr string, out *[]string, depth int) {
	if depth > 12 {
		return
	}
	m, ok := v.(map[string]any)
	if !ok {
		if _, isBool := v.(bool); isBool {
			*out = append(*out, ptr)
		}
		return
	}
	*out = append(*out, ptr)
	for _, k := range []string{"properties", "patternProperties", "$defs", "dependentSchemas"} {
		if ps, ok := m[k].(map[string]any); ok {
			for _, name := range sortedKeys(ps) {
				schemaNodes(ps[name], ptr+"/"+k+"/"+escape(name), out, depth+1)
			}
		}
	}
	for _, k := range []string{"items", "additionalProperties", "not", "contains", "if", "then", "else", "propertyNames", "unevaluatedProperties"} {
		if s, ok := m[k]; ok {
			schemaNodes(s, ptr+"/"+k, out, depth+1)
		}
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf", "prefixItems"} {
		if l, ok := m[k].([]any); ok {
			for i, s := range l {
				schemaNodes(s, ptr+"/"+k+"/"+strconv.Itoa(i), out, depth+1)
			}
		}
	}
}

// setAt replaces the value at ptr (which must exist) in root; it returns the new root.
func setAt(root any, ptr string, v any) any {
	if ptr == "" {
		return v
	}
	segs := splitPtr(ptr)
	cur := root
	for i, s := range segs {
		last := i == len(segs)-1
		switch c := cur.(type) {
		case map[string]any:
			if last {
				c[s] = v
				return root
			}
			cur = c[s]
		case []any:
			n, _ := strconv.Atoi(s)
			if last {
				c[n] = v
				return root
			}
			cur = c[n]
		}
	}
	return root
}

func getAt(root any, ptr string) any {
	v, _ := lookup(root, "#"+ptr)
	return v
}

func splitPtr(ptr string) []string {
	var segs []string
	cur := ""
	for i := 1; i <= len(ptr); i++ {
		if i == len(ptr) || ptr[i] == '/' {
			segs = append(segs, unescapeSeg(cur))
			cur = ""
			continue
		}
		cur += string(ptr[i])
	}
	return segs
}

func unescapeSeg(s string) string {
	out := ""
	for i := 0; i < len(s); i++ {
		if s[i] == '~' && i+1 < len(s) {
			if s[i+1] == '1' {
				out += "/"
			} else {
				out += "~"
			}
			i++
			continue
		}
		out += string(s[i])
	}
	return out
}

var (
	mutPatterns = []string{"^[a-z]+$", "^[a-z0-9]+$", "^ord_[A-Za-z0-9]+$", "^ord_", "^[A-Z]{3}$", "^[A-Z]{3,4}$", "a", "^\\d{2,}$", "^(x|y)_"}
	mutFormats  = []string{"date", "date-time", "email", "uuid", "uri", "ipv4"}
	mutTypes    = []any{"string", "integer", "number", "boolean", "null", "object", "array", []any{"string", "null"}, []any{"integer", "string"}}
)

func (m *mutator) pick(l []string) string { return l[m.r.Intn(len(l))] }

// mutate applies one random edit at a random subschema.
func (m *mutator) mutate(root any) any {
	var ptrs []string
	schemaNodes(root, "", &ptrs, 0)
	if len(ptrs) == 0 {
		return root
	}
	ptr := ptrs[m.r.Intn(len(ptrs))]
	s := getAt(root, ptr)
	sm, isMap := s.(map[string]any)
	if !isMap {
		switch m.r.Intn(3) {
		case 0:
			return setAt(root, ptr, map[string]any{})
		case 1:
			return setAt(root, ptr, s != true)
		default:
			return setAt(root, ptr, map[string]any{"type": m.pick([]string{"string", "integer"})})
		}
	}
	num := func() float64 { return float64(m.r.Intn(12) - 2) }
	switch m.r.Intn(34) {
	case 0: // add an optional property
		props, _ := sm["properties"].(map[string]any)
		if props == nil {
			props = map[string]any{}
			sm["properties"] = props
		}
		props["p"+strconv.Itoa(m.r.Intn(3))] = map[string]any{"type": mutTypes[m.r.Intn(len(mutTypes))]}
	case 1: // remove a property
		if props, ok := sm["properties"].(map[string]any); ok && len(props) > 0 {
			keys := sortedKeys(props)
			delete(props, keys[m.r.Intn(len(keys))])
		}
	case 2: // toggle required
		props, _ := sm["properties"].(map[string]any)
		if len(props) > 0 {
			keys := sortedKeys(props)
			k := keys[m.r.Intn(len(keys))]
			req := stringList(sm["required"])
			if contains(req, k) {
				var keep []any
				for _, r := range req {
					if r != k {
						keep = append(keep, r)
					}
				}
				sm["required"] = keep
			} else {
				sm["required"] = append(stringsJSON(req), k)
			}
			if len(stringList(sm["required"])) == 0 {
				delete(sm, "required")
			}
		}
	case 3:
		sm["type"] = mutTypes[m.r.Intn(len(mutTypes))]
	case 4:
		delete(sm, "type")
	case 5:
		sm["minimum"] = num()
	case 6:
		sm["maximum"] = num()
	case 7:
		sm["exclusiveMinimum"] = num()
	case 8:
		sm["exclusiveMaximum"] = num()
	case 9:
		sm["multipleOf"] = []float64{1, 2, 3, 0.5, 0.25, 4}[m.r.Intn(6)]
	case 10:
		for _, k := range []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"} {
			delete(sm, k)
		}
	case 11:
		sm["minLength"] = float64(m.r.Intn(4))
	case 12:
		sm["maxLength"] = float64(m.r.Intn(6))
	case 13:
		sm["pattern"] = m.pick(mutPatterns)
	case 14:
		delete(sm, "pattern")
	case 15:
		sm["format"] = m.pick(mutFormats)
	case 16:
		vals := []any{"a", "b", "c", float64(1), nil}
		n := 1 + m.r.Intn(3)
		var e []any
		for i := 0; i < n; i++ {
			e = append(e, vals[m.r.Intn(len(vals))])
		}
		sm["enum"] = e
	case 17:
		if e, ok := sm["enum"].([]any); ok && len(e) == 1 {
			delete(sm, "enum")
			sm["const"] = e[0]
		} else if c, ok := sm["const"]; ok {
			delete(sm, "const")
			sm["enum"] = []any{c, "z"}
		} else {
			sm["const"] = m.pick([]string{"a", "x"})
		}
	case 18:
		switch m.r.Intn(4) {
		case 0:
			delete(sm, "additionalProperties")
		case 1:
			sm["additionalProperties"] = false
		case 2:
			sm["additionalProperties"] = true
		default:
			sm["additionalProperties"] = map[string]any{"type": m.pick([]string{"string", "integer"})}
		}
	case 19:
		sm["patternProperties"] = map[string]any{m.pick([]string{"^x_", "^p", "^[0-9]+$"}): map[string]any{"type": m.pick([]string{"string", "integer"})}}
	case 20: // wrap in a combinator
		kw := m.pick([]string{"anyOf", "oneOf", "allOf"})
		return setAt(root, ptr, map[string]any{kw: []any{deepCopy(sm), map[string]any{"type": m.pick([]string{"null", "integer", "string"})}}})
	case 21: // add a branch to an existing combinator
		for _, kw := range []string{"anyOf", "oneOf", "allOf"} {
			if l, ok := sm[kw].([]any); ok {
				sm[kw] = append(l, map[string]any{"type": m.pick([]string{"null", "integer", "string", "boolean"})})
				break
			}
		}
	case 22: // remove a branch
		for _, kw := range []string{"anyOf", "oneOf", "allOf"} {
			if l, ok := sm[kw].([]any); ok && len(l) > 1 {
				sm[kw] = l[:len(l)-1]
				break
			}
		}
	case 23:
		sm["not"] = map[string]any{"const": m.pick([]string{"a", ""})}
	case 24:
		return setAt(root, ptr, m.pick([]string{"true", "false", "{}"}) == "true")
	case 25: // move the subschema behind a $ref
		if ptr != "" {
			rm, ok := root.(map[string]any)
			if ok {
				defs, _ := rm["$defs"].(map[string]any)
				if defs == nil {
					defs = map[string]any{}
					rm["$defs"] = defs
				}
				name := "d" + strconv.Itoa(m.r.Intn(100))
				defs[name] = deepCopy(sm)
				return setAt(root, ptr, map[string]any{"$ref": "#/$defs/" + name})
			}
		}
	case 26:
		sm["items"] = map[string]any{"type": m.pick([]string{"string", "integer"})}
	case 27:
		sm["prefixItems"] = []any{map[string]any{"type": "string"}}
		if m.r.Intn(2) == 0 {
			sm["items"] = false
		}
	case 28:
		sm["minItems"] = float64(m.r.Intn(3))
		sm["maxItems"] = float64(1 + m.r.Intn(3))
	case 29:
		sm["uniqueItems"] = m.r.Intn(2) == 0
	case 30:
		sm["contains"] = map[string]any{"type": m.pick([]string{"string", "integer"})}
	case 31:
		sm["dependentRequired"] = map[string]any{"p0": []any{"p1"}}
	case 32:
		sm["if"] = map[string]any{"required": []any{"p0"}}
		sm["then"] = map[string]any{"required": []any{"p1"}}
	case 33:
		sm["minProperties"] = float64(m.r.Intn(3))
	}
	return root
}

// instGen makes instances from a schema without the diff's machinery: it follows the
// keywords loosely and perturbs values at random; the validator sorts them out.
type instGen struct {
	r    *rand.Rand
	root any
}

func (g *instGen) random(depth int) any {
	switch g.r.Intn(9) {
	case 0:
		return nil
	case 1:
		return g.r.Intn(2) == 0
	case 2:
		return json.Number(strconv.Itoa(g.r.Intn(20) - 5))
	case 3:
		return json.Number([]string{"0.5", "1.5", "-0.25", "1e2", "2.0"}[g.r.Intn(5)])
	case 4, 5:
		return []string{"", "a", "ab", "abc", "ord_a1", "x", "ABC", "2000-01-01", "user@example.com", "12"}[g.r.Intn(10)]
	case 6:
		if depth > 3 {
			return "a"
		}
		return []any{g.random(depth + 1)}
	default:
		if depth > 3 {
			return nil
		}
		return map[string]any{[]string{"a", "p0", "p1", "x_a", "extra"}[g.r.Intn(5)]: g.random(depth + 1)}
	}
}

func num(v any) (float64, bool) {
	r := ratOf(v)
	if r == nil {
		return 0, false
	}
	f, _ := r.Float64()
	return f, true
}

func (g *instGen) value(s any, depth int) any {
	if depth > 8 || g.r.Intn(12) == 0 {
		return g.random(depth)
	}
	m, ok := s.(map[string]any)
	if !ok {
		return g.random(depth)
	}
	if r, ok := m["$ref"].(string); ok && g.r.Intn(4) != 0 {
		if t, ok := lookup(g.root, r); ok {
			return g.value(t, depth+1)
		}
	}
	if e, ok := m["enum"].([]any); ok && len(e) > 0 && g.r.Intn(5) != 0 {
		return e[g.r.Intn(len(e))]
	}
	if c, ok := m["const"]; ok && g.r.Intn(5) != 0 {
		return c
	}
	for _, kw := range []string{"anyOf", "oneOf", "allOf"} {
		if l, ok := m[kw].([]any); ok && len(l) > 0 && g.r.Intn(3) != 0 {
			return g.value(l[g.r.Intn(len(l))], depth+1)
		}
	}
	typ := ""
	switch t := m["type"].(type) {
	case string:
		typ = t
	case []any:
		if len(t) > 0 {
			typ, _ = t[g.r.Intn(len(t))].(string)
		}
	}
	if typ == "" {
		switch {
		case m["properties"] != nil:
			typ = "object"
		case m["items"] != nil || m["prefixItems"] != nil:
			typ = "array"
		default:
			typ = []string{"string", "integer", "object", "null"}[g.r.Intn(4)]
		}
	}
	switch typ {
	case "object":
		obj := map[string]any{}
		props, _ := m["properties"].(map[string]any)
		req := stringList(m["required"])
		for _, k := range sortedKeys(props) {
			if contains(req, k) || g.r.Intn(3) != 0 {
				obj[k] = g.value(props[k], depth+1)
			}
		}
		for _, k := range req {
			if _, ok := obj[k]; !ok {
				obj[k] = g.random(depth + 1)
			}
		}
		if pp, ok := m["patternProperties"].(map[string]any); ok && g.r.Intn(2) == 0 {
			for _, p := range sortedKeys(pp) {
				name := map[string]string{"^x_": "x_a", "^p": "pq", "^[0-9]+$": "12"}[p]
				if name == "" {
					name = "x_a"
				}
				obj[name] = g.value(pp[p], depth+1)
			}
		}
		if g.r.Intn(3) == 0 {
			name := []string{"extra", "p0", "p1", "x_b", "amount"}[g.r.Intn(5)]
			if ap, ok := m["additionalProperties"].(map[string]any); ok && g.r.Intn(2) == 0 {
				obj[name] = g.value(ap, depth+1)
			} else {
				obj[name] = g.random(depth + 1)
			}
		}
		return obj
	case "array":
		n := g.r.Intn(4)
		if mi, ok := num(m["minItems"]); ok && n < int(mi) {
			n = int(mi)
		}
		arr := make([]any, 0, n)
		prefix, _ := m["prefixItems"].([]any)
		if l, ok := m["items"].([]any); ok {
			prefix = l
		}
		for i := 0; i < n; i++ {
			switch {
			case i < len(prefix):
				arr = append(arr, g.value(prefix[i], depth+1))
			case m["items"] != nil:
				arr = append(arr, g.value(m["items"], depth+1))
			default:
				arr = append(arr, g.random(depth+1))
			}
		}
		if c, ok := m["contains"]; ok && g.r.Intn(2) == 0 {
			arr = append(arr, g.value(c, depth+1))
		}
		return arr
	case "string":
		cands := []string{"", "a", "ab", "abc", "abcdef", "ord_a", "ord_ABC123", "ord_12345678", "ABC", "ABCD", "12", "x_y", "2000-01-01", "2000-01-01T00:00:00Z", "user@example.com", "00000000-0000-4000-8000-000000000000", "https://example.com/a", "192.0.2.1", "héé"}
		if e, ok := m["enum"].([]any); ok {
			for _, v := range e {
				if s, ok := v.(string); ok {
					cands = append(cands, s+"x", s)
				}
			}
		}
		return cands[g.r.Intn(len(cands))]
	case "integer", "number":
		var pts []string
		for _, k := range []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"} {
			if f, ok := num(m[k]); ok {
				for _, d := range []float64{-1, -0.5, 0, 0.5, 1} {
					pts = append(pts, strconv.FormatFloat(f+d, 'g', -1, 64))
				}
			}
		}
		pts = append(pts, "0", "1", "2", "3", "4", "6", "-1", "0.5", "1.5", "100", "0.25")
		return json.Number(pts[g.r.Intn(len(pts))])
	case "boolean":
		return g.r.Intn(2) == 0
	case "null":
		return nil
	}
	return g.random(depth)
}

type compiled struct {
	s   *contract.Schema
	err error
}

func compileFor(schema any) compiled {
	b, err := json.Marshal(schema)
	if err != nil {
		return compiled{err: err}
	}
	s, err := contract.CompileDocument(b)
	return compiled{s: s, err: err}
}

func (c compiled) accepts(t testing.TB, x any) bool {
	b, err := json.Marshal(x)
	if err != nil {
		t.Fatal(err)
	}
	v, err := contract.DecodeJSON(b)
	if err != nil {
		return false
	}
	return len(c.s.Validate(v)) == 0
}

// tidy drops what the generator writes that no validator would load (required: null).
func tidy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		if r, ok := x["required"].([]any); ok && r == nil {
			delete(x, "required")
		}
		for _, c := range x {
			tidy(c)
		}
	case []any:
		for _, c := range x {
			tidy(c)
		}
	}
	return v
}

// soundnessPair builds OLD and NEW from fuzz bytes.
func soundnessPair(t testing.TB, data []byte) (oldS, newS any, r *rand.Rand) {
	h := fnv.New64a()
	h.Write(data)
	r = rand.New(rand.NewSource(int64(h.Sum64())))
	m := &mutator{r: r}
	if r.Intn(4) == 3 {
		// a generated document with refs, recursion and combinators
		oldS = tidy((&schemaGen{data: data}).document())
	} else {
		bs := bases(t)
		oldS = deepCopy(bs[r.Intn(len(bs))])
		for i := r.Intn(3); i > 0; i-- {
			oldS = m.mutate(oldS)
		}
	}
	newS = deepCopy(oldS)
	for i := 1 + r.Intn(3); i > 0; i-- {
		newS = m.mutate(newS)
	}
	return oldS, newS, r
}

func checkSoundness(t *testing.T, data []byte) {
	oldS, newS, r := soundnessPair(t, data)
	oc, nc := compileFor(oldS), compileFor(newS)
	if oc.err != nil || nc.err != nil {
		return // not a pair the gateway would load
	}
	for _, dir := range []Direction{Input, Output} {
		var rep Report
		within(t, func() { rep = DiffSchemas(oldS, newS, dir, Options{}) })
		writerS, writer, reader := oldS, oc, nc
		if dir == Output {
			writerS, writer, reader = newS, nc, oc
		}
		for _, c := range rep.Changes {
			if x := c.Counterexample; x != nil && (!writer.accepts(t, x.Instance) || reader.accepts(t, x.Instance)) {
				t.Fatalf("%s: the counterexample %s of %s %s does not break\nold: %s\nnew: %s", dir, canon(x.Instance), c.Kind, c.Pointer, canon(oldS), canon(newS))
			}
		}
		if rep.Tier.Rank() > TierCompatible.Rank() {
			continue
		}
		g := &instGen{r: r, root: writerS}
		for i := 0; i < 60; i++ {
			x := g.value(writerS, 0)
			if writer.accepts(t, x) && !reader.accepts(t, x) {
				t.Fatalf("%s: the diff says %s, but %s is accepted by the writer and refused by the reader\nold: %s\nnew: %s\nchanges: %+v",
					dir, rep.Tier, canon(x), canon(oldS), canon(newS), rep.Changes)
			}
		}
	}
}

// FuzzSoundness checks the soundness property on mutated pairs (see the top of the file).
// Run long with: go test ./schemadiff -run '^$' -fuzz FuzzSoundness
func FuzzSoundness(f *testing.F) {
	for i := 0; i < 48; i++ {
		f.Add([]byte(fmt.Sprintf("seed-%d", i)))
	}
	f.Add([]byte{3, 5, 3, 0, 3, 1, 2, 9, 0, 3})
	f.Add([]byte{7, 13, 10, 2, 2, 14, 3, 0, 4, 1, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 256 {
			t.Skip()
		}
		checkSoundness(t, data)
	})
}
