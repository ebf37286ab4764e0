package decisionlog

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// MaskToken replaces a masked value when the Masker has no HashKey.
const MaskToken = "***"

// ErrUnmaskable reports a record whose arguments cannot be masked (they are
// not one valid JSON value). Such a record is dropped, never written raw.
var ErrUnmaskable = errors.New("decision log record cannot be masked")

// MaskAction says what happens to a sensitive value.
type MaskAction int

const (
	// Mask keeps the member and replaces its value (of any type) with
	// MaskToken, or with a keyed hash when the Masker has a HashKey.
	Mask MaskAction = iota
	// Erase removes the value: an object member is deleted; an array item
	// becomes null, so the indices of the other items keep their meaning.
	Erase
)

func (a MaskAction) String() string {
	if a == Erase {
		return "erase"
	}
	return "mask"
}

// Rule is one sensitive location: an RFC 6901 pointer into a payload, whose
// segment "*" (Wildcard) matches every array item and every object member and
// whose segment "**" (AnyDepth) matches any number of segments, none included.
// A member literally named "*" or "**" is matched as the wildcard: a rule may
// select more than it names, never less.
type Rule struct {
	Pointer string
	Action  MaskAction
}

// MaskRules returns a Mask rule for each pointer.
func MaskRules(pointers ...string) []Rule { return rules(Mask, pointers) }

// EraseRules returns an Erase rule for each pointer.
func EraseRules(pointers ...string) []Rule { return rules(Erase, pointers) }

func rules(a MaskAction, pointers []string) []Rule {
	out := make([]Rule, len(pointers))
	for i, p := range pointers {
		out[i] = Rule{Pointer: p, Action: a}
	}
	return out
}

// MaskerConfig holds a tool version's sensitive locations, per payload. The
// zero value masks nothing.
type MaskerConfig struct {
	// Arguments are pointers into the call's arguments (the x-sensitive
	// properties of the schema's parameters).
	Arguments []Rule
	// Result are pointers into the downstream response body (the
	// x-sensitive properties of the schema's result).
	Result []Rule
	// State are pointers into the state probe's bodies (state_before and
	// state_after). The contract has no schema for them; the gateway passes
	// the result's pointers, as the probe usually reads the same resource.
	State []Rule
	// HashKey, when set, makes Mask write "hmac-sha256:<32 hex>" (HMAC-SHA256
	// of the value's JSON, truncated to 128 bits) instead of MaskToken, so
	// equal values can be correlated across records without being revealed.
	// Defaults to nil: every masked value is MaskToken.
	HashKey []byte
}

// Masker turns a Record's payloads into their loggable form. It is built once
// per tool version, is immutable and safe for concurrent use.
type Masker struct {
	args, result, state []compiledRule
	hashKey             []byte
}

type compiledRule struct {
	p     pointer
	erase bool
}

// NewMasker validates every pointer and returns the Masker; a malformed
// pointer is an error, so a bad contract fails at load time, not per call.
func NewMasker(cfg MaskerConfig) (*Masker, error) {
	m := &Masker{hashKey: bytes.Clone(cfg.HashKey)}
	var err error
	if m.args, err = compile("arguments", cfg.Arguments); err != nil {
		return nil, err
	}
	if m.result, err = compile("result", cfg.Result); err != nil {
		return nil, err
	}
	if m.state, err = compile("state", cfg.State); err != nil {
		return nil, err
	}
	return m, nil
}

// compile parses the rules and orders them so that erasures run before masks
// and shallower pointers before deeper ones: a value inside an erased or
// masked one is then not listed a second time.
func compile(part string, rs []Rule) ([]compiledRule, error) {
	out := make([]compiledRule, 0, len(rs))
	seen := map[Rule]bool{}
	for _, r := range rs {
		if r.Action != Mask && r.Action != Erase {
			return nil, fmt.Errorf("%s rule %q: unknown action %d", part, r.Pointer, r.Action)
		}
		p, err := parsePointer(r.Pointer)
		if err != nil {
			return nil, fmt.Errorf("%s rule: %w", part, err)
		}
		if seen[r] {
			continue
		}
		seen[r] = true
		out = append(out, compiledRule{p: p, erase: r.Action == Erase})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].erase != out[j].erase {
			return out[i].erase
		}
		return len(out[i].p.segments) < len(out[j].p.segments)
	})
	return out, nil
}

// Apply replaces rec's payloads by what mode allows in the log, appends the
// pointers it erased or masked to rec.Erased and rec.Masked, and sets
// rec.ResultHash. The payload bytes it was given are never modified: masking
// works on a decoded copy.
//
// digest: arguments and result are removed (input_hash and result_hash stay).
// masked: every payload is masked by its rules. full: payloads are kept raw.
// State bodies are masked in both digest and masked modes. A result or state
// body that is not JSON is erased whole. Arguments that are not JSON make the
// whole record unloggable: Apply returns an error wrapping ErrUnmaskable (in
// digest mode the arguments are not written, so they need not be JSON).
// A nil Masker masks nothing.
//
// In digest and masked modes every value the rules select (each string and
// number inside it, at least MinScrubLength bytes long) is also replaced by
// MaskToken wherever else it appears in the record's text: inside the other
// strings of the payloads, in state_before_error and state_after_error, the
// correlation id and the provider evidence, also URL-escaped or quoted — so
// an error message or an echoing downstream
// cannot carry a sensitive value past the masker.
func (m *Masker) Apply(rec *Record, mode ArgumentsMode) error {
	_, err := m.ApplyScrub(rec, mode)
	return err
}

// ApplyScrub is Apply that also returns the record's scrubber: a function
// replacing the sensitive values Apply found (as Scrubber does) in texts kept
// beside the record, such as an action's history.
func (m *Masker) ApplyScrub(rec *Record, mode ArgumentsMode) (func(string) string, error) {
	if m == nil {
		m = &Masker{}
	}
	sc := &scrubber{}
	mode = mode.orDefault()
	if !absent(rec.Result) && rec.ResultHash == "" {
		sum := sha256.Sum256(rec.Result)
		rec.ResultHash = "sha256:" + hex.EncodeToString(sum[:])
	}
	switch mode {
	case ModeFull:
		if !absent(rec.Arguments) && !json.Valid(rec.Arguments) {
			return sc.text, fmt.Errorf("%w: arguments are not JSON", ErrUnmaskable)
		}
		rec.Result = m.wholeOrErased(rec, "/result", rec.Result)
		rec.StateBefore = m.wholeOrErased(rec, "/state_before", rec.StateBefore)
		rec.StateAfter = m.wholeOrErased(rec, "/state_after", rec.StateAfter)
		return sc.text, nil
	case ModeDigest, ModeMasked:
	default:
		return sc.text, fmt.Errorf("decision log: unknown arguments mode %q", mode)
	}
	// In digest mode the arguments are not written, but their sensitive
	// values are still looked for in the rest of the record.
	args, err := m.load(rec, "/arguments", rec.Arguments, m.args, sc, mode == ModeMasked)
	if err != nil && mode == ModeMasked {
		return sc.text, fmt.Errorf("%w: arguments: %v", ErrUnmaskable, err)
	}
	var result payload
	if mode == ModeMasked {
		result = m.loadOrErase(rec, "/result", rec.Result, m.result, sc)
	}
	before := m.loadOrErase(rec, "/state_before", rec.StateBefore, m.state, sc)
	after := m.loadOrErase(rec, "/state_after", rec.StateAfter, m.state, sc)
	rec.StateBeforeError = sc.text(rec.StateBeforeError)
	rec.StateAfterError = sc.text(rec.StateAfterError)
	rec.CorrelationID = sc.text(rec.CorrelationID)
	rec.PolicyVersion = sc.text(rec.PolicyVersion)
	if p := rec.Provider; p != nil {
		rec.Provider = &Provider{Name: sc.text(p.Name), Route: sc.text(p.Route), CallID: sc.text(p.CallID), Reason: sc.text(p.Reason)}
	}
	if pt := rec.ProviderTransition; pt != nil {
		rec.ProviderTransition = &ProviderTransition{
			From:        ProviderRoute{Name: sc.text(pt.From.Name), Route: sc.text(pt.From.Route)},
			To:          ProviderRoute{Name: sc.text(pt.To.Name), Route: sc.text(pt.To.Route)},
			ActionState: pt.ActionState, Reason: sc.text(pt.Reason),
		}
	}
	if mode == ModeDigest {
		rec.Arguments, rec.Result = nil, nil
	} else {
		if rec.Arguments, err = sc.encode(args); err != nil {
			return sc.text, fmt.Errorf("%w: arguments: %v", ErrUnmaskable, err)
		}
		if rec.Result, err = sc.encode(result); err != nil {
			rec.Result = nil
			rec.Erased = append(rec.Erased, "/result")
		}
	}
	if rec.StateBefore, err = sc.encode(before); err != nil {
		rec.StateBefore = nil
		rec.Erased = append(rec.Erased, "/state_before")
	}
	if rec.StateAfter, err = sc.encode(after); err != nil {
		rec.StateAfter = nil
		rec.Erased = append(rec.Erased, "/state_after")
	}
	return sc.text, nil
}

// payload is one part of a record being masked: absent, kept as it came
// (no rule applies to it; tree nil), or decoded and masked.
type payload struct {
	absent bool
	raw    json.RawMessage
	tree   any
}

// load reads one payload. One that rules apply to is decoded into a fresh
// tree and masked, collecting the values replaced in sc; with list, the
// concrete pointers touched are recorded in rec. The tree is re-encoded even
// when no rule matched: the raw bytes may hold a sensitive value in an
// earlier duplicate of a key that the decoder (keeping the last) no longer
// shows. One that no rule applies to is only checked to be JSON, and kept.
func (m *Masker) load(rec *Record, prefix string, raw json.RawMessage, rs []compiledRule, sc *scrubber, list bool) (payload, error) {
	if absent(raw) {
		return payload{absent: true}, nil
	}
	if len(rs) == 0 {
		if !json.Valid(raw) {
			return payload{}, errors.New("not valid JSON")
		}
		return payload{raw: raw}, nil
	}
	tree, err := decodeOne(raw)
	if err != nil {
		return payload{}, err
	}
	tree = m.maskTree(rec, prefix, tree, rs, sc, list)
	if tree == erasedRoot {
		return payload{absent: true}, nil
	}
	return payload{raw: raw, tree: tree}, nil
}

// loadOrErase loads a result or state body; one that is not JSON is erased
// whole.
func (m *Masker) loadOrErase(rec *Record, prefix string, raw json.RawMessage, rs []compiledRule, sc *scrubber) payload {
	p, err := m.load(rec, prefix, raw, rs, sc, true)
	if err != nil {
		rec.Erased = append(rec.Erased, prefix)
		return payload{absent: true}
	}
	return p
}

// wholeOrErased keeps a raw payload in full mode if it is JSON, else erases it.
func (m *Masker) wholeOrErased(rec *Record, prefix string, raw json.RawMessage) json.RawMessage {
	if absent(raw) {
		return nil
	}
	if !json.Valid(raw) {
		rec.Erased = append(rec.Erased, prefix)
		return nil
	}
	return raw
}

func absent(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

// maskTree masks a decoded payload by its rules, collecting the values it
// replaces in sc; with list, it records the concrete pointers it touched,
// prefixed by prefix. Without, it only collects (and returns root as it was).
func (m *Masker) maskTree(rec *Record, prefix string, root any, rs []compiledRule, sc *scrubber, list bool) any {
	if len(rs) == 0 {
		return root
	}
	hit := map[string]bool{}
	for i := range rs {
		r := &rs[i]
		var hits []string
		w := walker{m: m, r: r, hit: hit, hits: &hits, sc: sc, collectOnly: !list}
		root = w.walk(root, r.p.segments, prefix)
		switch {
		case !list:
		case r.erase:
			rec.Erased = append(rec.Erased, hits...)
		default:
			rec.Masked = append(rec.Masked, hits...)
		}
	}
	return root
}

// erasedRoot is what walk returns for an erased location; the caller deletes
// the member (or nulls the item, or the whole payload).
var erasedRoot any = new(erasedMarker)

type erasedMarker struct{ _ int }

// maskedValue is a value's replacement; the scrubber leaves it alone.
type maskedValue string

// walker applies one rule to a payload tree.
type walker struct {
	m           *Masker
	r           *compiledRule
	hit         map[string]bool // locations already erased or masked by an earlier rule
	hits        *[]string       // locations this rule touched
	sc          *scrubber
	collectOnly bool // collect the values in sc, change nothing
}

// walk applies the rule's segments segs below node (found at path) and
// returns node's new value.
func (w *walker) walk(node any, segs []string, path string) any {
	if len(segs) == 0 {
		if w.hit[path] {
			return node
		}
		w.hit[path] = true
		w.sc.collect(node)
		if w.collectOnly {
			return node
		}
		*w.hits = append(*w.hits, path)
		if w.r.erase {
			return erasedRoot
		}
		return w.m.token(node)
	}
	seg, rest := segs[0], segs[1:]
	if seg == AnyDepth {
		// Zero segments here, then one or more below: every descendant.
		if node = w.walk(node, rest, path); node == erasedRoot {
			return node
		}
		return children(node, path, "", func(child any, childPath string) any { return w.walk(child, segs, childPath) })
	}
	return children(node, path, seg, func(child any, childPath string) any { return w.walk(child, rest, childPath) })
}

// children applies f to the children of node (found at path) that seg
// names (every child for Wildcard or ""), deleting members and nulling items
// f erases.
func children(node any, path, seg string, f func(child any, childPath string) any) any {
	switch n := node.(type) {
	case map[string]any:
		keys := []string{seg}
		if seg == Wildcard || seg == "" {
			keys = slices.Sorted(maps.Keys(n))
		}
		for _, k := range keys {
			child, ok := n[k]
			if !ok {
				continue
			}
			if nv := f(child, path+"/"+escapeSegment(k)); nv == erasedRoot {
				delete(n, k)
			} else {
				n[k] = nv
			}
		}
	case []any:
		set := func(i int) {
			nv := f(n[i], path+"/"+strconv.Itoa(i))
			if nv == erasedRoot {
				nv = nil
			}
			n[i] = nv
		}
		if seg == Wildcard || seg == "" {
			for i := range n {
				set(i)
			}
		} else if i, ok := arrayIndex(seg, len(n)); ok {
			set(i)
		}
	}
	return node
}

// token is the replacement for a masked value.
func (m *Masker) token(v any) any {
	if len(m.hashKey) == 0 {
		return maskedValue(MaskToken)
	}
	b, err := encodeValue(v)
	if err != nil { // cannot happen for decoded JSON; never fall back to the value
		return maskedValue(MaskToken)
	}
	mac := hmac.New(sha256.New, m.hashKey)
	mac.Write(b)
	return maskedValue("hmac-sha256:" + hex.EncodeToString(mac.Sum(nil)[:16]))
}

// decodeOne decodes exactly one JSON value into a fresh tree (the copy that
// is masked), keeping numbers as written.
func decodeOne(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON value")
	}
	return v, nil
}

func encodeValue(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// Encode masks rec per mode and returns its JSON line, newline included. It
// fills the record's defaults (record_version, a decision_id when empty,
// empty erased/masked lists, a UTC timestamp) and is what the Writer runs off
// the request path; the gateway may call it directly to log synchronously.
func Encode(rec Record, m *Masker, mode ArgumentsMode) ([]byte, error) {
	rec.Erased, rec.Masked = slices.Clone(rec.Erased), slices.Clone(rec.Masked) // never append into the caller's arrays
	if err := m.Apply(&rec, mode); err != nil {
		return nil, err
	}
	rec.RecordVersion = RecordVersion
	if rec.DecisionID == "" {
		rec.DecisionID = NewDecisionID()
	}
	rec.Timestamp = rec.Timestamp.UTC()
	rec.Erased = sortedUnique(rec.Erased)
	rec.Masked = sortedUnique(rec.Masked)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&rec); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnmaskable, err)
	}
	return b.Bytes(), nil
}

func sortedUnique(s []string) []string {
	if len(s) == 0 {
		return []string{}
	}
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}

// CoversArgument reports whether an argument rule selects the value at the
// concrete pointer p or a value that contains it. A pointer that does not
// parse is covered: the caller then shows less, never more.
func (m *Masker) CoversArgument(p string) bool {
	if m == nil {
		return false
	}
	ptr, err := parsePointer(p)
	if err != nil {
		return true
	}
	for _, r := range m.args {
		if coversPrefix(r.p.segments, ptr.segments) {
			return true
		}
	}
	return false
}

// coversPrefix reports whether rule segments (with Wildcard and AnyDepth)
// match path or one of its prefixes.
func coversPrefix(rule, path []string) bool {
	if len(rule) == 0 {
		return true
	}
	if rule[0] == AnyDepth {
		for i := 0; i <= len(path); i++ {
			if coversPrefix(rule[1:], path[i:]) {
				return true
			}
		}
		return false
	}
	return len(path) > 0 && (rule[0] == Wildcard || rule[0] == path[0]) && coversPrefix(rule[1:], path[1:])
}

// MasksResult reports whether the masker has rules for results: whether a
// result body it cannot read as JSON may hold a sensitive value.
func (m *Masker) MasksResult() bool { return m != nil && len(m.result) > 0 }

// String lists the masker's rules, for logs at start-up.
func (m *Masker) String() string {
	var b strings.Builder
	for _, g := range []struct {
		name string
		rs   []compiledRule
	}{{"arguments", m.args}, {"result", m.result}, {"state", m.state}} {
		for _, r := range g.rs {
			if b.Len() > 0 {
				b.WriteString(" ")
			}
			fmt.Fprintf(&b, "%s:%s%s", MaskAction(btoi(r.erase)), g.name, r.p.text)
		}
	}
	return b.String()
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
