package contract

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// Bounds of a schema's references, enforced while they are walked and
// before the schema is compiled: the compiler resolves every reference and
// compiles every schema it reaches, at a cost of kilobytes each, so a long
// chain of $defs each naming the next (a few bytes per link) would cost
// hundreds of times its size before any depth limit could refuse it.
const (
	// MaxSchemaRefs is the most $ref and $dynamicRef keywords one schema
	// (parameters, or result) may hold.
	MaxSchemaRefs = 10_000
	// MaxRefChain is the most $refs one reference may pass through to reach
	// a schema that is not itself only a reference to another.
	MaxRefChain = 64
)

// refProblem is what checkRefs found wrong, at pointer.
type refProblem struct {
	pointer, message string
}

type schemaRef struct {
	node   map[string]any
	kw     string
	target string
}

// checkRefs walks doc once, counting its references (stopping at the first
// past MaxSchemaRefs), then follows each local reference to a pointer hop by
// hop, stopping at the first chain past MaxRefChain. It keeps the
// references and a depth per target, never a pointer per node, so its
// memory is a fraction of the document's.
func checkRefs(doc any, base string) *refProblem {
	var refs []schemaRef
	var path []string
	var over *refProblem
	var walk func(v any) bool
	walk = func(v any) bool {
		switch x := v.(type) {
		case map[string]any:
			for _, kw := range [...]string{"$ref", "$dynamicRef"} {
				if s, ok := x[kw].(string); ok {
					if len(refs) == MaxSchemaRefs {
						over = &refProblem{base + Pointer(append(path, kw)...), fmt.Sprintf("the schema has more than %d references ($ref, $dynamicRef): a contract's schema may have at most %d", MaxSchemaRefs, MaxSchemaRefs)}
						return false
					}
					refs = append(refs, schemaRef{x, kw, s})
				}
			}
			for k, e := range x {
				switch e.(type) {
				case map[string]any, []any:
					path = append(path, k)
					if !walk(e) {
						return false
					}
					path = path[:len(path)-1]
				}
			}
		case []any:
			for i, e := range x {
				switch e.(type) {
				case map[string]any, []any:
					path = append(path, strconv.Itoa(i))
					if !walk(e) {
						return false
					}
					path = path[:len(path)-1]
				}
			}
		}
		return true
	}
	if !walk(doc) {
		return over
	}
	// hops[target]: the $refs from target to a schema that is not only a
	// reference; -1 while it is being followed (a cycle, which the compiler
	// reports itself).
	hops := map[string]int{}
	var follow func(target string, depth int) int
	follow = func(target string, depth int) int {
		frag, local := strings.CutPrefix(target, "#")
		if !local || (frag != "" && frag[0] != '/') {
			return 0 // an $anchor, an $id or another document: not followed
		}
		if n, seen := hops[target]; seen {
			return max(n, 0)
		}
		if depth > MaxRefChain {
			return depth // no further: the caller refuses
		}
		m, _ := PointerGet(doc, frag).(map[string]any)
		next, ok := m["$ref"].(string)
		if !ok {
			hops[target] = 0
			return 0
		}
		hops[target] = -1
		n := follow(next, depth+1) + 1
		hops[target] = n
		return n
	}
	for _, r := range refs {
		if r.kw != "$ref" {
			continue
		}
		if n := follow(r.target, 1); n > MaxRefChain {
			return &refProblem{base + pointerOf(doc, r.node) + "/$ref", fmt.Sprintf("the reference %q passes through more than %d references before it reaches a schema: a chain may be at most %d long", r.target, MaxRefChain, MaxRefChain)}
		}
	}
	return nil
}

// pointerOf finds the pointer of the object node within doc ("" if absent).
func pointerOf(doc any, node map[string]any) string {
	want := reflect.ValueOf(node).UnsafePointer()
	var path []string
	var find func(v any) bool
	find = func(v any) bool {
		switch x := v.(type) {
		case map[string]any:
			if reflect.ValueOf(x).UnsafePointer() == want {
				return true
			}
			for k, e := range x {
				path = append(path, k)
				if find(e) {
					return true
				}
				path = path[:len(path)-1]
			}
		case []any:
			for i, e := range x {
				path = append(path, strconv.Itoa(i))
				if find(e) {
					return true
				}
				path = path[:len(path)-1]
			}
		}
		return false
	}
	if !find(doc) {
		return ""
	}
	return Pointer(path...)
}
