package jsonschemax

import (
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/message"
)

// FixLocations repairs the instance locations of the errors the library records
// without copying its location slice (santhosh-tekuri/jsonschema v6.0.3 validator.go,
// propertyNames and contentSchema): a sibling validated later can overwrite it, so the
// pointer of such an error named another property in about one run out of five.
//
// Every other error's location is a copy, and the error tree nests as validation does,
// so the nearest ancestor with a copied location is a correct prefix. The repair keeps
// that prefix and finds the rest in the instance: the positions at the error's depth
// under it that hold an object with the refused name (a string, for contentSchema).
// When there are as many such positions as errors of that schema and name, each error
// gets one; otherwise the error is placed at the prefix, which is true if less precise.
func FixLocations(instance any, e *jsonschema.ValidationError) {
	if e == nil {
		return
	}
	type key struct {
		prefix string
		depth  int
		schema string
		name   string
		kind   int
	}
	groups := map[key][]*jsonschema.ValidationError{}
	prefixes := map[string][]string{}
	var order []key
	var walk func(e *jsonschema.ValidationError, good []string)
	walk = func(e *jsonschema.ValidationError, good []string) {
		name, k := "", 0
		switch x := e.ErrorKind.(type) {
		case *kind.PropertyNames:
			name, k = x.Property, 1
		case *kind.ContentSchema:
			k = 2
		}
		if k != 0 {
			g := key{strings.Join(escapeAll(good), "/"), len(e.InstanceLocation), e.SchemaURL, name, k}
			if _, ok := groups[g]; !ok {
				order = append(order, g)
				prefixes[g.prefix] = good
			}
			groups[g] = append(groups[g], e)
			return // its causes are about the name or the decoded content, not the instance
		}
		if len(e.InstanceLocation) >= len(good) {
			good = e.InstanceLocation
		}
		for _, c := range e.Causes {
			walk(c, good)
		}
	}
	walk(e, nil)
	for _, g := range order {
		errs := groups[g]
		good := prefixes[g.prefix]
		var cands [][]string
		if g.depth >= len(good) {
			base, ok := at(instance, good)
			if ok {
				positions(base, slices.Clone(good), g.depth-len(good), func(loc []string, v any) {
					switch g.kind {
					case 1:
						if m, ok := v.(map[string]any); ok {
							if _, has := m[g.name]; has {
								cands = append(cands, slices.Clone(loc))
							}
						}
					case 2:
						if _, ok := v.(string); ok {
							cands = append(cands, slices.Clone(loc))
						}
					}
				})
			}
		}
		if len(cands) != len(errs) {
			// several objects hold the name: keep those the refusing schema's own
			// location leads to (…/properties/a/… for a member a)
			var keep [][]string
			for _, c := range cands {
				if reachedBy(g.schema, c[len(good):]) {
					keep = append(keep, c)
				}
			}
			cands = keep
		}
		if len(cands) != len(errs) {
			for _, e := range errs {
				e.InstanceLocation = slices.Clone(good)
				if g.kind == 1 {
					e.ErrorKind = &UnplacedPropertyName{Property: g.name}
				}
			}
			continue
		}
		sort.Slice(cands, func(i, j int) bool { return slices.Compare(cands[i], cands[j]) < 0 })
		for i, e := range errs {
			e.InstanceLocation = cands[i]
		}
	}
}

// UnplacedPropertyName replaces a propertyNames error whose object could not be told
// apart from others holding the same name: its location is the nearest certain
// ancestor, and the refused name must not be appended to it (that would point at a
// member that may not exist there).
type UnplacedPropertyName struct {
	Property string
}

func (*UnplacedPropertyName) KeywordPath() []string { return []string{"propertyNames"} }

func (*UnplacedPropertyName) LocalizedString(*message.Printer) string {
	return "an object below here has a property name that is not allowed"
}

// reachedBy reports whether every instance segment appears, in order, in the schema
// location as the position that applies to it (properties/<name>, or an items keyword
// for an index).
func reachedBy(schemaURL string, segs []string) bool {
	frag := schemaURL
	if i := strings.IndexByte(frag, '#'); i >= 0 {
		frag = frag[i+1:]
	}
	if un, err := url.PathUnescape(frag); err == nil {
		frag = un
	}
	parts := strings.Split(strings.TrimPrefix(frag, "/"), "/")
	j := 0
	for _, seg := range segs {
		found := false
		for ; j < len(parts); j++ {
			p := parts[j]
			if p == "properties" && j+1 < len(parts) && parts[j+1] == escapeAll([]string{seg})[0] {
				j += 2
				found = true
				break
			}
			if _, err := strconv.Atoi(seg); err == nil && (p == "items" || p == "prefixItems" || p == "additionalItems") {
				j++
				if p == "prefixItems" && j < len(parts) {
					j++
				}
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func escapeAll(segs []string) []string {
	out := make([]string, len(segs))
	for i, s := range segs {
		out[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
	}
	return out
}

func at(v any, loc []string) (any, bool) {
	for _, seg := range loc {
		switch c := v.(type) {
		case map[string]any:
			x, ok := c[seg]
			if !ok {
				return nil, false
			}
			v = x
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			v = c[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// positions calls fn on every value exactly depth levels below v.
func positions(v any, loc []string, depth int, fn func([]string, any)) {
	if depth == 0 {
		fn(loc, v)
		return
	}
	switch c := v.(type) {
	case map[string]any:
		for k, x := range c {
			positions(x, append(loc, k), depth-1, fn)
		}
	case []any:
		for i, x := range c {
			positions(x, append(loc, strconv.Itoa(i)), depth-1, fn)
		}
	}
}
