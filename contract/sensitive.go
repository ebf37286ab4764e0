package contract

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The wildcard segments of the pointers Sensitive reports.
const (
	// AnyMember stands for one segment: every member of an object, every item
	// of an array ("/contacts/*/email").
	AnyMember = "*"
	// AnyDepth stands for zero or more segments, where a schema refers back to
	// itself ("/tree/**/secret"): the value may sit at any depth.
	AnyDepth = "**"
)

// Bounds of the walk that finds sensitive locations. A schema past them is
// refused at load time rather than masked incompletely.
const (
	maxSensitivePointers = 4096
	maxSensitiveVisits   = 200_000
)

// sensitiveVocabURL names the vocabulary through which the schema compiler
// records toolgate's marks on the compiled schemas.
const sensitiveVocabURL = "urn:toolgate:vocab:sensitive"

// schemaNote is what the compiler records on a compiled schema that carries
// "x-sensitive": true, a contentSchema with such a mark, or a $dynamicAnchor:
// the masker's walk needs exactly these. It validates nothing.
type schemaNote struct {
	self    *jsonschema.Schema
	marked  bool // "x-sensitive": true
	content bool // a contentSchema below holds a mark: the encoded string is sensitive
}

func (*schemaNote) Validate(*jsonschema.ValidatorContext, any) {}

// notes collects the schema notes of one compilation, including those of
// schemas no keyword reaches statically (a resource's dynamic anchors).
type notes struct {
	bySchema map[*jsonschema.Schema]*schemaNote
	dynamic  map[string][]*jsonschema.Schema // $dynamicAnchor name → schemas
}

// sensitiveVocabulary returns the vocabulary that fills n as the compiler
// meets each schema object. Its meta-schema is the full 2020-12 one, so that
// turning vocabularies on checks schema documents no less than before.
func sensitiveVocabulary(n *notes, meta *jsonschema.Schema) *jsonschema.Vocabulary {
	return &jsonschema.Vocabulary{
		URL:    sensitiveVocabURL,
		Schema: meta,
		Compile: func(ctx *jsonschema.CompilerContext, obj map[string]any) (jsonschema.SchemaExt, error) {
			marked, _ := obj["x-sensitive"].(bool)
			content := rawMark(obj["contentSchema"], 0)
			anchor, _ := obj["$dynamicAnchor"].(string)
			if !marked && !content && anchor == "" {
				return nil, nil
			}
			note := &schemaNote{self: ctx.Enqueue(nil), marked: marked, content: content}
			n.bySchema[note.self] = note
			if anchor != "" {
				n.dynamic[anchor] = append(n.dynamic[anchor], note.self)
			}
			return note, nil
		},
	}
}

// rawMark reports whether an uncompiled schema value holds "x-sensitive":
// true anywhere (the validator does not compile contentSchema, so its marks
// are found in the document).
func rawMark(v any, depth int) bool {
	if depth > maxSchemaDepth {
		return true // too deep to tell: take it as marked
	}
	switch x := v.(type) {
	case map[string]any:
		if b, _ := x["x-sensitive"].(bool); b {
			return true
		}
		for _, e := range x {
			if rawMark(e, depth+1) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if rawMark(e, depth+1) {
				return true
			}
		}
	}
	return false
}

// edge is one way from a schema to a subschema the validator applies.
type edge struct {
	to *jsonschema.Schema
	// how: "" applies the subschema to the same value; a segment (a member
	// name, an index or AnyMember) to a value below it; "names" to the
	// object's member names and "content" to the value's decoded content,
	// so that a mark below makes the whole value sensitive.
	how string
}

const (
	edgeSame    = ""
	edgeNames   = "\x00names"
	edgeContent = "\x00content"
)

// edges lists every subschema s applies, in a stable order.
func (n *notes) edges(s *jsonschema.Schema) []edge {
	var out []edge
	same := func(subs ...*jsonschema.Schema) {
		for _, sub := range subs {
			if sub != nil {
				out = append(out, edge{sub, edgeSame})
			}
		}
	}
	below := func(seg string, sub *jsonschema.Schema) {
		if sub != nil {
			out = append(out, edge{sub, seg})
		}
	}
	same(s.Ref, s.RecursiveRef, s.Not, s.If, s.Then, s.Else)
	if d := s.DynamicRef; d != nil {
		same(d.Ref)
		// Resolved at run time to a schema of the same dynamic anchor in the
		// dynamic scope: any of them may apply.
		same(n.dynamic[d.Anchor]...)
	}
	same(s.AllOf...)
	same(s.AnyOf...)
	same(s.OneOf...)
	for _, k := range sortedKeys(s.DependentSchemas) {
		same(s.DependentSchemas[k])
	}
	for _, k := range sortedKeys(s.Dependencies) {
		if sub, ok := s.Dependencies[k].(*jsonschema.Schema); ok {
			same(sub)
		}
	}
	for _, k := range sortedKeys(s.Properties) {
		below(k, s.Properties[k])
	}
	pats := make([]jsonschema.Regexp, 0, len(s.PatternProperties))
	for re := range s.PatternProperties {
		pats = append(pats, re)
	}
	sort.Slice(pats, func(i, j int) bool { return pats[i].String() < pats[j].String() })
	for _, re := range pats {
		below(AnyMember, s.PatternProperties[re])
	}
	if sub, ok := s.AdditionalProperties.(*jsonschema.Schema); ok {
		below(AnyMember, sub)
	}
	below(AnyMember, s.UnevaluatedProperties)
	for i, sub := range s.PrefixItems {
		below(strconv.Itoa(i), sub)
	}
	below(AnyMember, s.Items2020)
	switch items := s.Items.(type) {
	case *jsonschema.Schema:
		below(AnyMember, items)
	case []*jsonschema.Schema:
		for i, sub := range items {
			below(strconv.Itoa(i), sub)
		}
	}
	if sub, ok := s.AdditionalItems.(*jsonschema.Schema); ok {
		below(AnyMember, sub)
	}
	below(AnyMember, s.Contains)
	below(AnyMember, s.UnevaluatedItems)
	if s.PropertyNames != nil {
		out = append(out, edge{s.PropertyNames, edgeNames})
	}
	if s.ContentSchema != nil {
		out = append(out, edge{s.ContentSchema, edgeContent})
	}
	return out
}

// marks reports whether s itself makes the value it applies to sensitive.
func (n *notes) marks(s *jsonschema.Schema) bool {
	note := n.bySchema[s]
	return note != nil && (note.marked || note.content)
}

// sensitiveWalk finds the instance locations of a compiled schema's marks.
type sensitiveWalk struct {
	n      *notes
	reach  map[*jsonschema.Schema]bool // a mark is reachable from the schema
	seen   map[walkKey]bool
	stack  map[*jsonschema.Schema][]string // where each schema on the current path was entered
	out    map[string]bool
	visits int
	err    error
}

type walkKey struct {
	s   *jsonschema.Schema
	ptr string
}

// sensitivePointers returns the pointers of every value that a mark of the
// compiled schema s applies to, sorted: member names and indices as they
// stand, AnyMember for every member or item, AnyDepth where the schema refers
// back to itself. It follows every subschema the validator applies —
// $ref (to a pointer, an $anchor or an $id), $dynamicRef (to every schema of
// its dynamic anchor), allOf, anyOf, oneOf, not, if/then/else,
// dependentSchemas, properties, patternProperties, additionalProperties,
// unevaluated*, prefixItems, items, contains — and marks an object whose
// propertyNames, or a string whose contentSchema, holds a mark, whole. The
// set may over-approximate (a mark inside not, a pattern's members) but never
// misses a location. A schema whose marks reach more locations than the walk
// can list is an error.
func sensitivePointers(s *Schema) ([]string, error) {
	if s == nil || s.s == nil || s.notes == nil || !s.notes.anyMark() {
		return nil, nil
	}
	w := &sensitiveWalk{n: s.notes, seen: map[walkKey]bool{}, stack: map[*jsonschema.Schema][]string{}, out: map[string]bool{}}
	w.reach = s.notes.reachable(s.s)
	w.walk(s.s, nil)
	if w.err != nil {
		return nil, w.err
	}
	out := make([]string, 0, len(w.out))
	for p := range w.out {
		out = append(out, p)
	}
	sort.Strings(out)
	return out, nil
}

func (n *notes) anyMark() bool {
	for _, note := range n.bySchema {
		if note.marked || note.content {
			return true
		}
	}
	return false
}

// reachable marks every schema reachable from root from which a mark can be
// reached, by a search backwards from the marked schemas.
func (n *notes) reachable(root *jsonschema.Schema) map[*jsonschema.Schema]bool {
	back := map[*jsonschema.Schema][]*jsonschema.Schema{}
	var todo []*jsonschema.Schema
	seen := map[*jsonschema.Schema]bool{root: true}
	for queue := []*jsonschema.Schema{root}; len(queue) > 0; {
		s := queue[0]
		queue = queue[1:]
		if n.marks(s) {
			todo = append(todo, s)
		}
		for _, e := range n.edges(s) {
			back[e.to] = append(back[e.to], s)
			if !seen[e.to] {
				seen[e.to] = true
				queue = append(queue, e.to)
			}
		}
	}
	reach := map[*jsonschema.Schema]bool{}
	for len(todo) > 0 {
		s := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if reach[s] {
			continue
		}
		reach[s] = true
		todo = append(todo, back[s]...)
	}
	return reach
}

func (w *sensitiveWalk) walk(s *jsonschema.Schema, ptr []string) {
	if w.err != nil || !w.reach[s] {
		return
	}
	entered, on := w.stack[s]
	if on {
		if len(entered) >= len(ptr) {
			return // back at the same value (allOf: [{"$ref": "#"}]): nothing new
		}
		// Back at a schema on the current path, below where it was entered:
		// the segments in between can repeat any number of times, so from
		// that entry on the value may sit at any depth.
		ptr = withSegment(entered, AnyDepth)
	}
	key := walkKey{s, joinPointer(ptr)}
	if w.seen[key] {
		return
	}
	w.seen[key] = true
	if w.visits++; w.visits > maxSensitiveVisits {
		w.err = fmt.Errorf("x-sensitive marks cannot be followed: the schema's references branch into more than %d paths (at %s)", maxSensitiveVisits, location(s))
		return
	}
	if w.n.marks(s) {
		w.emit(ptr, s)
		return
	}
	w.stack[s] = ptr
	defer func() {
		if on {
			w.stack[s] = entered
		} else {
			delete(w.stack, s)
		}
	}()
	for _, e := range w.n.edges(s) {
		switch e.how {
		case edgeSame:
			w.walk(e.to, ptr)
		case edgeNames, edgeContent:
			if w.reach[e.to] {
				w.emit(ptr, e.to)
			}
		default:
			w.walk(e.to, withSegment(ptr, e.how))
		}
	}
}

func (w *sensitiveWalk) emit(ptr []string, s *jsonschema.Schema) {
	p := joinPointer(ptr)
	if w.out[p] {
		return
	}
	if len(w.out) >= maxSensitivePointers {
		w.err = fmt.Errorf("x-sensitive marks cannot be followed: they apply to more than %d locations (at %s); mark a shallower value sensitive", maxSensitivePointers, location(s))
		return
	}
	w.out[p] = true
}

// withSegment appends seg to a copy of ptr; AnyDepth after AnyDepth adds nothing.
func withSegment(ptr []string, seg string) []string {
	if seg == AnyDepth && len(ptr) > 0 && ptr[len(ptr)-1] == AnyDepth {
		return ptr
	}
	return append(slices.Clip(ptr), seg)
}

func joinPointer(ptr []string) string { return Pointer(ptr...) }

// location names a compiled schema for a message: its pointer inside the
// embedded schema ("/properties/a"), or its URL when it is another resource.
func location(s *jsonschema.Schema) string {
	loc := s.Location
	for _, field := range []string{"parameters", "result", "schema"} {
		if rest, ok := strings.CutPrefix(loc, "urn:toolgate:"+field+"#"); ok {
			if rest == "" {
				return "the schema's root"
			}
			return rest
		}
	}
	return loc
}
