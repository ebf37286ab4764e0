package decisionlog

import (
	"encoding/json"
	"net/url"
	"strconv"

	secrets "github.com/toolgate/toolgate/internal/secret"
)

// MinScrubLength is the shortest sensitive value (in bytes) that Apply and
// Scrubber replace inside other text. Shorter ones ("1", "no") would turn
// every message into noise; they are still masked where the rules find them.
const MinScrubLength = 3

// maxScrubValues bounds how many distinct sensitive values one record's text
// is scrubbed of.
const maxScrubValues = 256

// scrubber collects the sensitive values of one record and replaces them
// wherever else they appear in its text.
type scrubber struct {
	values   map[string]bool
	replacer *secrets.Replacer
}

// collect adds every string and number inside v (a value a rule selected).
// Member names are not collected: they are mostly the schema's own words
// ("number", "email"), which would blank every message.
func (s *scrubber) collect(v any) {
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			s.collect(e)
		}
	case []any:
		for _, e := range x {
			s.collect(e)
		}
	case string:
		s.add(x)
	case json.Number:
		s.add(x.String())
	}
}

func (s *scrubber) add(v string) {
	if len(v) < MinScrubLength || len(s.values) >= maxScrubValues {
		return
	}
	if s.values == nil {
		s.values = map[string]bool{}
	}
	q, a := strconv.Quote(v), strconv.QuoteToASCII(v)
	j, _ := json.Marshal(v)
	for _, form := range []string{v, url.PathEscape(v), url.QueryEscape(v), q[1 : len(q)-1], a[1 : len(a)-1], string(j[1 : len(j)-1])} {
		if len(form) >= MinScrubLength && form != MaskToken {
			s.values[form] = true
		}
	}
	s.replacer = nil
}

// text returns t with every collected value replaced by MaskToken.
func (s *scrubber) text(t string) string {
	if len(s.values) == 0 || t == "" {
		return t
	}
	if s.replacer == nil {
		s.replacer = secrets.NewReplacer(s.values, MaskToken)
	}
	return s.replacer.Replace(t)
}

// tree scrubs every string of a decoded payload in place, except the values
// a rule already replaced.
func (s *scrubber) tree(v any) any {
	if len(s.values) == 0 {
		return v
	}
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = s.tree(e)
		}
	case []any:
		for i, e := range x {
			x[i] = s.tree(e)
		}
	case string:
		return s.text(x)
	}
	return v
}

// encode scrubs and encodes a payload: nil for an absent one; a payload kept
// as it came stays byte for byte unless it holds text to scrub.
func (s *scrubber) encode(p payload) (json.RawMessage, error) {
	switch {
	case p.absent:
		return nil, nil
	case p.tree != nil:
		return encodeValue(s.tree(p.tree))
	case len(s.values) == 0:
		return p.raw, nil
	}
	v, err := decodeOne(p.raw)
	if err != nil {
		return nil, err
	}
	return encodeValue(s.tree(v))
}

// Scrubber returns a function that replaces, in any text, the values m's
// argument and result rules select in args and result (payloads that are not
// JSON are ignored), as Apply does inside a record: for the texts kept beside
// a call's payloads, such as an action's history notes or provider evidence.
// A nil Masker's scrubber returns text unchanged.
func (m *Masker) Scrubber(args, result json.RawMessage) func(string) string {
	sc := &scrubber{}
	if m != nil {
		var discard Record
		for _, p := range []struct {
			raw json.RawMessage
			rs  []compiledRule
		}{{args, m.args}, {result, m.result}} {
			m.load(&discard, "", p.raw, p.rs, sc, false)
		}
	}
	return sc.text
}
