package invoke

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"

	"github.com/toolgate/toolgate/internal/placeholder"
)

// ErrTemplate marks a template that cannot be expanded: an unknown or unclosed
// placeholder, a missing or empty value, or an argument that is not a scalar.
// Nothing is sent downstream when a binding's template fails.
var ErrTemplate = errors.New("invoke: template")

// Vars are the values a binding's templates may use.
type Vars struct {
	Tenant   string         // {tenant}
	ActionID string         // {action_id}
	Args     map[string]any // {args.FIELD}, {args.FIELD.SUB}: the call's decoded arguments
}

// Expand fills a URL template. Placeholders are {tenant}, {action_id},
// {downstream_key} and {args.FIELD} (dots walk nested objects). Each
// substituted value is escaped for where it stands: path-escaped
// (url.PathEscape, so a "/" in a value stays inside its segment) before the
// template's first "?", query-escaped (url.QueryEscape) after it. Values must
// be non-empty strings, numbers or booleans; anything else is an error wrapping
// ErrTemplate. Text outside placeholders is copied unchanged.
//
// A path segment that a substituted value makes "." or ".." (or one of the
// forms a WHATWG URL parser also reads as a dot segment, such as "%2e%2E") is
// a *DotSegmentError: a server that resolves dot segments would send the
// request to another path. Percent-encoding the dots would not help, since
// those parsers decode them first, so such a value is refused.
func Expand(tmpl string, v Vars, downstreamKey string) (string, error) {
	return expand(tmpl, v, downstreamKey, true)
}

// DotSegmentError is Expand's error for a path segment that substituted
// values make a dot segment. It names the template and the placeholders in
// the segment, never their values. It wraps ErrTemplate.
type DotSegmentError struct {
	Template     string
	Placeholders []string // e.g. "args.account", "downstream_key"
}

func (e *DotSegmentError) Error() string {
	names := make([]string, len(e.Placeholders))
	for i, n := range e.Placeholders {
		names[i] = "{" + n + "}"
	}
	return fmt.Sprintf("%v: the path segment made of %s is a dot segment (\".\" or \"..\"), which would change the path", ErrTemplate, strings.Join(names, ""))
}

func (e *DotSegmentError) Unwrap() error { return ErrTemplate }

// isDotSegment reports whether a path segment is one a URL parser resolves:
// "." or "..", or (WHATWG URL) the same with a dot written as %2e or %2E.
func isDotSegment(seg string) bool {
	switch strings.ToLower(seg) {
	case ".", "..", "%2e", ".%2e", "%2e.", "%2e%2e":
		return true
	}
	return false
}

// DownstreamKey expands the binding's downstream key template (default
// "{tenant}:{action_id}") without URL escaping; it may not use
// {downstream_key}. The result must be a valid header value: no control
// characters, at most 1024 bytes.
func DownstreamKey(b *Binding, v Vars) (string, error) {
	tmpl := b.DownstreamKey
	if tmpl == "" {
		tmpl = DefaultDownstreamKey
	}
	k, err := expand(tmpl, v, "", false)
	if err != nil {
		return "", err
	}
	if len(k) > 1024 {
		return "", fmt.Errorf("%w: downstream key longer than 1024 bytes", ErrTemplate)
	}
	for i := 0; i < len(k); i++ {
		if c := k[i]; c < 0x20 || c == 0x7f {
			return "", fmt.Errorf("%w: downstream key has a control character at byte %d", ErrTemplate, i)
		}
	}
	return k, nil
}

func expand(tmpl string, v Vars, downstreamKey string, escape bool) (string, error) {
	var b strings.Builder
	b.Grow(len(tmpl) + 32)
	inPath := escape // the part before "?" or "#" of a URL, where segments are checked
	seg := 0         // where the current path segment starts in b
	var segNames []string
	endSegment := func() error {
		if len(segNames) > 0 && isDotSegment(b.String()[seg:]) {
			return &DotSegmentError{Template: tmpl, Placeholders: segNames}
		}
		segNames = nil
		return nil
	}
	for i := 0; i < len(tmpl); {
		c := tmpl[i]
		switch c {
		case '{':
			end := strings.IndexByte(tmpl[i+1:], '}')
			if end < 0 {
				return "", fmt.Errorf("%w: unclosed \"{\" at byte %d", ErrTemplate, i)
			}
			name := tmpl[i+1 : i+1+end]
			val, err := lookupVar(name, v, downstreamKey, escape)
			if err != nil {
				return "", err
			}
			switch {
			case !escape:
				b.WriteString(val)
			case !inPath:
				b.WriteString(url.QueryEscape(val))
			default:
				b.WriteString(url.PathEscape(val))
				segNames = append(segNames, name)
			}
			i += end + 2
		case '}':
			return "", fmt.Errorf("%w: unmatched \"}\" at byte %d", ErrTemplate, i)
		default:
			if inPath && (c == '/' || c == '?' || c == '#') {
				if err := endSegment(); err != nil {
					return "", err
				}
				inPath = c == '/'
				b.WriteByte(c)
				seg = b.Len()
				i++
				continue
			}
			b.WriteByte(c)
			i++
		}
	}
	if inPath {
		if err := endSegment(); err != nil {
			return "", err
		}
	}
	return b.String(), nil
}

func lookupVar(name string, v Vars, downstreamKey string, allowKey bool) (string, error) {
	var val string
	switch {
	case name == "tenant":
		val = v.Tenant
	case name == "action_id":
		val = v.ActionID
	case name == "downstream_key" && allowKey:
		val = downstreamKey
	case strings.HasPrefix(name, "args."):
		s, err := argValue(v.Args, strings.TrimPrefix(name, "args."))
		if err != nil {
			return "", fmt.Errorf("%w: {%s}: %v", ErrTemplate, name, err)
		}
		val = s
	default:
		return "", fmt.Errorf("%w: unknown placeholder {%s}", ErrTemplate, name)
	}
	if val == "" {
		return "", fmt.Errorf("%w: {%s} is empty", ErrTemplate, name)
	}
	return val, nil
}

// argValue walks a dotted path through decoded JSON objects and formats the
// scalar it finds.
func argValue(args map[string]any, path string) (string, error) {
	if path == "" {
		return "", errors.New("no field name")
	}
	var cur any = args
	for _, part := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok || part == "" {
			return "", errors.New("not an object field")
		}
		cur, ok = m[part]
		if !ok {
			return "", errors.New("missing")
		}
	}
	switch x := cur.(type) {
	case string:
		return x, nil
	case bool:
		return strconv.FormatBool(x), nil
	case json.Number:
		return x.String(), nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return "", errors.New("not a finite number")
		}
		return strconv.FormatFloat(x, 'f', -1, 64), nil
	case int:
		return strconv.Itoa(x), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case nil:
		return "", errors.New("is null")
	default:
		return "", fmt.Errorf("is not a scalar (%T)", cur)
	}
}

// Placeholder is one {name} of a template and where it stands.
type Placeholder = placeholder.Placeholder

// Placeholders lists a template's placeholders in order, without checking their names;
// an unclosed "{" or an unmatched "}" is an error wrapping ErrTemplate, as Expand reports
// it. Configuration checks use the same scanner (internal/placeholder) to refuse unknown
// placeholders at load time.
func Placeholders(tmpl string) ([]Placeholder, error) {
	ps, err := placeholder.Scan(tmpl)
	if err != nil {
		return ps, fmt.Errorf("%w: %v", ErrTemplate, err)
	}
	return ps, nil
}

// ArgumentError names an argument that a binding's templates cannot take.
type ArgumentError struct {
	Field string // the argument's path as {args.FIELD} writes it: "account", "customer.id"
	// Template is the binding's field: "url", "lookup.url", "state.url" or
	// "downstream_key".
	Template string
	// Header: the argument would put a control character (or too many
	// bytes) into the downstream key's header; otherwise it would make a
	// URL path segment a dot segment.
	Header bool
}

// ArgumentErrors lists the arguments a call's binding cannot send as they
// are, in template order, each once, so that the call can be refused before
// anything is stored or sent: an argument that makes a path segment of one
// of b's URL templates a dot segment (Expand refuses those; one that
// reaches a URL through {downstream_key} too), and one that makes the
// downstream key an invalid header value (DownstreamKey refuses those).
// Other expansion problems are left to the call itself.
func ArgumentErrors(b *Binding, v Vars) []ArgumentError {
	var keyArgs []string
	tmpl := b.DownstreamKey
	if tmpl == "" {
		tmpl = DefaultDownstreamKey
	}
	if ps, err := Placeholders(tmpl); err == nil {
		for _, p := range ps {
			if f, ok := strings.CutPrefix(p.Name, "args."); ok {
				keyArgs = append(keyArgs, f)
			}
		}
	}
	var out []ArgumentError
	seen := map[string]bool{}
	add := func(field, template string, header bool) {
		if !seen[field] {
			seen[field] = true
			out = append(out, ArgumentError{Field: field, Template: template, Header: header})
		}
	}
	key, err := DownstreamKey(b, v)
	if err != nil && len(keyArgs) > 0 {
		if raw, rerr := expand(tmpl, v, "", false); rerr == nil && (len(raw) > 1024 || strings.ContainsFunc(raw, isControl)) {
			for _, f := range keyArgs {
				if s, err := argValue(v.Args, f); err == nil && (len(raw) > 1024 || strings.ContainsFunc(s, isControl)) {
					add(f, "downstream_key", true)
				}
			}
		}
	}
	for _, t := range [...]struct{ field, tmpl string }{{"url", b.URL}, {"lookup.url", b.LookupURL}, {"state.url", b.StateURL}} {
		if t.tmpl == "" {
			continue
		}
		_, err := expand(t.tmpl, v, key, true)
		if err == nil { // the usual case: no error value to look into (and none allocated for errors.As)
			continue
		}
		var de *DotSegmentError
		if !errors.As(err, &de) {
			continue
		}
		for _, name := range de.Placeholders {
			fields := keyArgs
			if f, ok := strings.CutPrefix(name, "args."); ok {
				fields = []string{f}
			} else if name != "downstream_key" {
				continue
			}
			for _, f := range fields {
				add(f, t.field, false)
			}
		}
	}
	return out
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }
