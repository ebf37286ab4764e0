// Package placeholder reads the {name} placeholders of a binding's
// templates (its URLs and its downstream_key): the one scanner of that
// syntax, which config uses to refuse a template at load time and invoke
// uses where it fills one. It imports nothing of toolgate.
package placeholder

import (
	"fmt"
	"strings"
)

// Placeholder is one {name} of a template and where it stands.
type Placeholder struct {
	Name   string // "tenant", "args.order_id"
	Offset int    // byte offset of its "{"
}

// Scan lists a template's placeholders in order, without checking their
// names. An unclosed "{" or an unmatched "}" is an error that says where it
// is (`unclosed "{" at byte 9`); the placeholders before it are returned
// with it.
func Scan(tmpl string) ([]Placeholder, error) {
	var out []Placeholder
	for i := 0; i < len(tmpl); i++ {
		switch tmpl[i] {
		case '{':
			end := strings.IndexByte(tmpl[i+1:], '}')
			if end < 0 {
				return out, fmt.Errorf("unclosed \"{\" at byte %d", i)
			}
			out = append(out, Placeholder{Name: tmpl[i+1 : i+1+end], Offset: i})
			i += end + 1
		case '}':
			return out, fmt.Errorf("unmatched \"}\" at byte %d", i)
		}
	}
	return out, nil
}
