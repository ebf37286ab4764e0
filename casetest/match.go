package casetest

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// Phrases of expected_agent_behavior: a phrase written between slashes ("/refund(ed)? succe/")
// is a regular expression; any other phrase is a plain substring. Both match
// case-insensitively.
var phraseCache sync.Map // phrase → *regexp.Regexp

func matchPhrase(phrase, text string) (bool, error) {
	if len(phrase) >= 2 && strings.HasPrefix(phrase, "/") && strings.HasSuffix(phrase, "/") {
		if re, ok := phraseCache.Load(phrase); ok {
			return re.(*regexp.Regexp).MatchString(text), nil
		}
		re, err := regexp.Compile("(?i)" + phrase[1:len(phrase)-1])
		if err != nil {
			return false, err
		}
		phraseCache.Store(phrase, re)
		return re.MatchString(text), nil
	}
	return strings.Contains(strings.ToLower(text), strings.ToLower(phrase)), nil
}

// Argument matchers stand in expected_tool_arguments for values a model may legitimately
// vary. A string value is a matcher when it is exactly one of:
//
//	{{any}}           any value, but the argument must be present
//	{{type:T}}        a value of JSON type T: string, integer, number, boolean, object, array, null
//	{{regex:RE}}      a string matching the regular expression RE (unanchored; add ^…$)
//
// Any other expected value must equal the model's value (numbers compare numerically).
// An expected null also matches an absent argument. An argument the model adds that the
// case does not list is a mismatch unless its value is null.
func matcherOf(v any) (kind, arg string, ok bool) {
	s, isStr := v.(string)
	if !isStr || !strings.HasPrefix(s, "{{") || !strings.HasSuffix(s, "}}") {
		return "", "", false
	}
	body := s[2 : len(s)-2]
	if body == "any" {
		return "any", "", true
	}
	for _, k := range []string{"type", "regex"} {
		if strings.HasPrefix(body, k+":") {
			return k, body[len(k)+1:], true
		}
	}
	return "", "", false
}

func hasMatcher(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			if hasMatcher(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if hasMatcher(e) {
				return true
			}
		}
	default:
		_, _, ok := matcherOf(v)
		return ok
	}
	return false
}

// matchArgs compares a model's arguments with the expected ones and returns one
// mismatch per differing pointer, sorted.
func matchArgs(want, got any, at string) []string {
	if kind, arg, ok := matcherOf(want); ok {
		switch kind {
		case "any":
			return nil
		case "type":
			if jsonType(got) != arg && !(arg == "number" && jsonType(got) == "integer") {
				return []string{fmt.Sprintf("%s: want a value of type %s, got %s", ptr(at), arg, show(got))}
			}
			return nil
		default:
			re, err := regexp.Compile(arg)
			s, isStr := got.(string)
			if err != nil || !isStr || !re.MatchString(s) {
				return []string{fmt.Sprintf("%s: want a string matching %s, got %s", ptr(at), arg, show(got))}
			}
			return nil
		}
	}
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: want an object, got %s", ptr(at), show(got))}
		}
		var out []string
		for k, wv := range w {
			gv, present := g[k]
			if !present {
				if wv != nil {
					out = append(out, fmt.Sprintf("%s/%s: missing", at, k))
				}
				continue
			}
			out = append(out, matchArgs(wv, gv, at+"/"+k)...)
		}
		for k, gv := range g {
			if _, listed := w[k]; !listed && gv != nil {
				out = append(out, fmt.Sprintf("%s/%s: not expected, got %s", at, k, show(gv)))
			}
		}
		sort.Strings(out)
		return out
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{fmt.Sprintf("%s: want %s, got %s", ptr(at), show(want), show(got))}
		}
		var out []string
		for i := range w {
			out = append(out, matchArgs(w[i], g[i], fmt.Sprintf("%s/%d", at, i))...)
		}
		return out
	case json.Number:
		if gn, ok := got.(json.Number); ok {
			a, _ := w.Float64()
			b, _ := gn.Float64()
			if a == b {
				return nil
			}
		}
	default:
		if want == got {
			return nil
		}
	}
	return []string{fmt.Sprintf("%s: want %s, got %s", ptr(at), show(want), show(got))}
}

func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "boolean"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case json.Number:
		if _, err := x.Int64(); err == nil {
			return "integer"
		}
		return "number"
	case float64:
		if x == float64(int64(x)) {
			return "integer"
		}
		return "number"
	}
	return "unknown"
}

func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
