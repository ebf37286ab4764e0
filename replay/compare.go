package replay

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/toolgate/toolgate/internal/canon"
)

// digest is "sha256:<hex>" of b.
func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// compare judges a replayed answer against the recorded one.
func compare(mode Compare, c *Call, status int, body []byte) (Verdict, *Difference) {
	if status != c.Status {
		return Differs, &Difference{In: "status", Recorded: json.RawMessage(strconv.Itoa(c.Status)), Replayed: json.RawMessage(strconv.Itoa(status))}
	}
	if mode == CompareJSON {
		rec, rerr := canon.Transform(c.Body)
		got, gerr := canon.Transform(body)
		if rerr == nil && gerr == nil {
			if bytes.Equal(rec, got) {
				return Deterministic, nil
			}
			return Differs, firstBodyDifference(c.Body, body, nil)
		}
		// A body that is not JSON is compared byte for byte.
	}
	switch {
	case c.BodyExact:
		if bytes.Equal(c.Body, body) {
			return Deterministic, nil
		}
		return Differs, bytesDifference(c.Body, body, nil)
	case c.BodyHash != "":
		if digest(body) == c.BodyHash {
			return Deterministic, nil
		}
		return Differs, bytesDifference(c.Body, body, c.BodyMasked)
	case c.Body != nil:
		// A line with a body and no hash (an older writer): the body was
		// re-encoded in the log, so it can only be compared as JSON.
		rec, rerr := canon.Transform(c.Body)
		got, gerr := canon.Transform(body)
		if rerr == nil && gerr == nil && bytes.Equal(rec, got) {
			return Deterministic, nil
		}
		if d := firstBodyDifference(c.Body, body, c.BodyMasked); d != nil {
			return Differs, d
		}
		return Differs, &Difference{In: "body", Detail: "the replayed body is not the recorded JSON"}
	}
	// The source makes this not replayable; kept as a guard.
	return Differs, &Difference{In: "body", Detail: "no recorded body to compare with"}
}

// bytesDifference locates a byte difference: as a JSON pointer when both
// bodies are JSON, else as the first differing byte.
func bytesDifference(recorded, replayed []byte, masked []string) *Difference {
	if json.Valid(recorded) && json.Valid(replayed) && len(bytes.TrimSpace(recorded)) > 0 {
		if d := firstBodyDifference(recorded, replayed, masked); d != nil {
			return d
		}
		if len(masked) > 0 {
			return &Difference{In: "body", Detail: "the bytes differ; the recorded body masked " + strings.Join(masked, ", ") + ", so the difference is in a masked value or in spelling"}
		}
		return &Difference{In: "body", Detail: "the same JSON value in other bytes (key order, spacing, escapes or number spelling); --compare json accepts it"}
	}
	if recorded == nil {
		return &Difference{In: "body", Detail: "the body's SHA-256 differs from the recorded result_hash (the log kept no body to locate the difference)"}
	}
	i := 0
	for i < len(recorded) && i < len(replayed) && recorded[i] == replayed[i] {
		i++
	}
	return &Difference{In: "body", Recorded: jsonString(snippet(recorded, i)), Replayed: jsonString(snippet(replayed, i)),
		Detail: fmt.Sprintf("the bodies differ from byte %d (%d recorded bytes, %d replayed)", i, len(recorded), len(replayed))}
}

func snippet(b []byte, at int) string {
	end := min(len(b), at+40)
	return string(b[at:end])
}

func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// firstBodyDifference walks two JSON bodies in canonical order (object
// members sorted by name, array items in order) and returns the first place
// where they differ, skipping the pointers in skip (masked values); nil when
// they are equal as JSON.
func firstBodyDifference(recorded, replayed []byte, skip []string) *Difference {
	a, err1 := decodeNumbers(recorded)
	b, err2 := decodeNumbers(replayed)
	if err1 != nil || err2 != nil {
		return nil
	}
	skipped := map[string]bool{}
	for _, p := range skip {
		skipped[p] = true
	}
	d := walk(a, b, "", skipped)
	if d != nil {
		d.In = "body"
	}
	return d
}

func decodeNumbers(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

// absent marks a member or item that one side does not have.
type absent struct{}

func walk(a, b any, ptr string, skip map[string]bool) *Difference {
	if skip[ptr] || wildcardSkip(ptr, skip) {
		return nil
	}
	_, aAbsent := a.(absent)
	_, bAbsent := b.(absent)
	switch {
	case aAbsent || bAbsent:
		d := &Difference{Pointer: ptr}
		if aAbsent {
			d.Replayed, d.Detail = raw(b), "absent in the recorded body"
		} else {
			d.Recorded, d.Detail = raw(a), "absent in the replayed body"
		}
		return d
	}
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			return valueDiff(a, b, ptr)
		}
		keys := make([]string, 0, len(av)+len(bv))
		for k := range av {
			keys = append(keys, k)
		}
		for k := range bv {
			if _, dup := av[k]; !dup {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			x, okA := av[k]
			y, okB := bv[k]
			if !okA {
				x = absent{}
			}
			if !okB {
				y = absent{}
			}
			if d := walk(x, y, ptr+"/"+escape(k), skip); d != nil {
				return d
			}
		}
		return nil
	case []any:
		bv, ok := b.([]any)
		if !ok {
			return valueDiff(a, b, ptr)
		}
		for i := 0; i < max(len(av), len(bv)); i++ {
			var x, y any = absent{}, absent{}
			if i < len(av) {
				x = av[i]
			}
			if i < len(bv) {
				y = bv[i]
			}
			if d := walk(x, y, ptr+"/"+strconv.Itoa(i), skip); d != nil {
				return d
			}
		}
		return nil
	case json.Number:
		bv, ok := b.(json.Number)
		if !ok {
			return valueDiff(a, b, ptr)
		}
		x, err1 := canon.Transform([]byte(av))
		y, err2 := canon.Transform([]byte(bv))
		if err1 == nil && err2 == nil && bytes.Equal(x, y) {
			return nil
		}
		return valueDiff(a, b, ptr)
	default: // string, bool, nil
		if a == b {
			return nil
		}
		return valueDiff(a, b, ptr)
	}
}

// wildcardSkip reports whether ptr falls under a skipped pointer (a masked
// or erased value: nothing below it was recorded).
func wildcardSkip(ptr string, skip map[string]bool) bool {
	for p := range skip {
		if p == "" || strings.HasPrefix(ptr, p+"/") {
			return true
		}
	}
	return false
}

func valueDiff(a, b any, ptr string) *Difference {
	return &Difference{Pointer: ptr, Recorded: raw(a), Replayed: raw(b)}
}

func raw(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage(`null`)
	}
	return b
}

// escape makes a member name a JSON-pointer segment (RFC 6901).
func escape(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}
