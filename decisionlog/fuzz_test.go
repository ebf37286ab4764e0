package decisionlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"testing"
)

// FuzzMask feeds arbitrary payloads and pointers to the masker. It must never
// panic; it may refuse only payloads that are not one JSON value; and no
// location the pointer names may hold anything but the mask token (masking)
// or null (erasing) afterwards.
func FuzzMask(f *testing.F) {
	f.Add([]byte(`{"customer_email":"a@b","n":1}`), "/customer_email", false)
	f.Add([]byte(`{"items":[{"email":"a"},{"email":"b"}]}`), "/items/*/email", true)
	f.Add([]byte(`{"m":{"x":{"k":1},"y":[1,{"k":2}]}}`), "/m/*/k", false)
	f.Add([]byte(`[["s"],{"0":"t"}]`), "/*/0", true)
	f.Add([]byte(`{"a/b":{"~":"s"}}`), "/a~1b/~0", false)
	f.Add([]byte(`"whole"`), "", true)
	f.Add([]byte(`{"a":1,"a":"secret"}`), "/a", false)
	f.Add([]byte(`{"a":1} 2`), "/a", false)
	f.Add([]byte(`{"t":{"s":"x","n":{"s":"y","n":[{"s":"z"}]}}}`), "/t/**/s", false)
	f.Add([]byte(`{"s":1,"a":{"s":[{"s":2}]}}`), "/**/s", true)
	f.Fuzz(func(t *testing.T, data []byte, ptr string, erase bool) {
		rules := MaskRules(ptr)
		if erase {
			rules = EraseRules(ptr)
		}
		m, err := NewMasker(MaskerConfig{Arguments: rules, Result: rules, State: rules})
		if err != nil {
			return // invalid pointers are refused at construction
		}
		p, _ := parsePointer(ptr)
		in := bytes.Clone(data)
		rec := Record{Arguments: data, Result: data, StateBefore: data}
		line, err := Encode(rec, m, ModeMasked)
		if !bytes.Equal(in, data) {
			t.Fatalf("input modified: %q became %q", in, data)
		}
		if err != nil {
			if !errors.Is(err, ErrUnmaskable) {
				t.Fatalf("error %v is not ErrUnmaskable", err)
			}
			if _, derr := decodeOne(data); derr == nil {
				t.Fatalf("refused a valid JSON payload %q: %v", data, err)
			}
			return
		}
		// Values that appear only inside sensitive subtrees of the input must
		// not appear anywhere in the output.
		var secrets map[string]bool
		if v, err := decodeOne(data); err == nil {
			secrets = sensitiveOnly(v, p.segments)
		}
		var out struct {
			Arguments   json.RawMessage `json:"arguments"`
			Result      json.RawMessage `json:"result"`
			StateBefore json.RawMessage `json:"state_before"`
		}
		if err := json.Unmarshal(line, &out); err != nil {
			t.Fatalf("line is not JSON: %v\n%s", err, line)
		}
		for _, part := range []json.RawMessage{out.Arguments, out.Result, out.StateBefore} {
			if len(part) == 0 || string(part) == "null" {
				continue
			}
			v, err := decodeOne(part)
			if err != nil {
				t.Fatalf("masked payload is not JSON: %v", err)
			}
			for _, leaf := range leaves(v, nil) {
				if secrets[leaf] {
					t.Fatalf("sensitive value %q (pointer %q) leaked into %s", leaf, ptr, part)
				}
			}
			for _, got := range lookup(v, p.segments) {
				if erase && got != nil || !erase && got != MaskToken {
					t.Fatalf("pointer %q still finds %#v in %s (from %q)", ptr, got, part, data)
				}
			}
		}
	})
}

// lookup returns every value the pointer's segments reach in v; "*" matches
// every member and item. It is written apart from the masker's walk so the
// two check each other.
func lookup(v any, segs []string) []any {
	if len(segs) == 0 {
		return []any{v}
	}
	var out []any
	if segs[0] == AnyDepth {
		out = lookup(v, segs[1:])
		switch n := v.(type) {
		case map[string]any:
			for _, c := range n {
				out = append(out, lookup(c, segs)...)
			}
		case []any:
			for _, c := range n {
				out = append(out, lookup(c, segs)...)
			}
		}
		return out
	}
	switch n := v.(type) {
	case map[string]any:
		for k, c := range n {
			if segs[0] == Wildcard || segs[0] == k {
				out = append(out, lookup(c, segs[1:])...)
			}
		}
	case []any:
		for i, c := range n {
			if segs[0] == Wildcard || segs[0] == strconv.Itoa(i) {
				out = append(out, lookup(c, segs[1:])...)
			}
		}
	}
	return out
}

// sensitiveOnly returns the keys and scalar values found only inside the
// subtrees the pointer's segments reach, never outside them (nor equal to the
// mask token).
func sensitiveOnly(v any, segs []string) map[string]bool {
	inside, outside := map[string]bool{}, map[string]bool{}
	var walk func(v any, path []string, sensitive bool)
	walk = func(v any, path []string, sensitive bool) {
		sensitive = sensitive || matches(path, segs)
		set := outside
		if sensitive {
			set = inside
		}
		switch n := v.(type) {
		case map[string]any:
			for k, c := range n {
				set["k:"+k] = true
				walk(c, append(path[:len(path):len(path)], k), sensitive)
			}
		case []any:
			for i, c := range n {
				walk(c, append(path[:len(path):len(path)], strconv.Itoa(i)), sensitive)
			}
		default:
			set[scalar(n)] = true
		}
	}
	walk(v, nil, false)
	out := map[string]bool{}
	for s := range inside {
		if !outside[s] && s != scalar(MaskToken) && s != scalar(nil) {
			out[s] = true
		}
	}
	return out
}

func matches(path, segs []string) bool {
	if len(segs) == 0 {
		return len(path) == 0
	}
	if segs[0] == AnyDepth {
		for i := 0; i <= len(path); i++ {
			if matches(path[i:], segs[1:]) {
				return true
			}
		}
		return false
	}
	return len(path) > 0 && (segs[0] == Wildcard || segs[0] == path[0]) && matches(path[1:], segs[1:])
}

// leaves lists every key and scalar of v in the form sensitiveOnly uses.
func leaves(v any, acc []string) []string {
	switch n := v.(type) {
	case map[string]any:
		for k, c := range n {
			acc = leaves(c, append(acc, "k:"+k))
		}
	case []any:
		for _, c := range n {
			acc = leaves(c, acc)
		}
	default:
		acc = append(acc, scalar(n))
	}
	return acc
}

func scalar(v any) string {
	switch n := v.(type) {
	case string:
		return "s:" + n
	case json.Number:
		return "n:" + n.String()
	case bool:
		return "b:" + strconv.FormatBool(n)
	}
	return "null"
}
