// Package capture turns recorded tool calls (ledger actions or decision-log lines) into
// shadow contract cases (docs/reference/files.md, contracts/shadow/*.yaml): every value any version of the
// tool marks x-sensitive — and every value the log masked or erased — is replaced by a
// synthetic value built from the schema alone (format email → an example.com address, a pattern → a generated match, …),
// the recorded result becomes mock_tool_result, and calls are deduplicated by argument
// shape. The package reads no files; FromLog reads an io.Reader and FromLedger a store.
package capture

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/decisionlog"
	"github.com/toolgate/toolgate/internal/masking"
)

// Record is one recorded call of a tool.
type Record struct {
	Source      string // where it came from, for messages: "log line 3", "ledger default/act-1"
	ToolID      string
	ToolVersion string
	Arguments   json.RawMessage // as recorded (raw, or masked with values replaced/removed)
	Result      json.RawMessage // the 2xx result body; nil when none
	// Masked and Erased are pointers into Arguments (and ResultMasked/ResultErased into
	// Result) whose recorded values were replaced or removed by the decision log.
	Masked, Erased             []string
	ResultMasked, ResultErased []string
}

// Config is one capture.
type Config struct {
	// Tool is the tool whose calls are captured. Required.
	Tool *contract.Tool
	// Sample keeps at most this many cases after deduplication, spread evenly over the
	// records in their order. 0 keeps every shape.
	Sample int
	// Agent is written as each case's agent ("" leaves it out).
	Agent string
}

// Case is one captured case, ready to be written as contracts/shadow/<ID>.yaml.
type Case struct {
	ID    string
	YAML  []byte
	Shape string
}

// Summary counts what a capture did with its records.
type Summary struct {
	Records    int      `json:"records"`
	Skipped    int      `json:"skipped"`    // other tool, unknown version, no arguments
	Duplicates int      `json:"duplicates"` // same shape as a kept record or an existing shadow case
	Sampled    int      `json:"sampled"`    // dropped by --sample
	Cases      int      `json:"cases"`
	Warnings   []string `json:"warnings"`
}

// Build anonymizes, deduplicates and samples records into cases.
//
// Every record is first masked as the decision log masks a call whose
// version is ambiguous: by every version's x-sensitive pointers at once
// (internal/masking.ForTool), because a recorded line's tool_version is the
// version that served the call, which for a retry under an existing key is
// not the version its arguments were sent for. Each value masked, and each
// the log masked or erased, is then replaced by a synthetic one; a value the
// synthesis cannot reach stays masked. No recorded sensitive value is copied.
func Build(cfg Config, recs []Record) ([]Case, Summary) {
	sum := Summary{Records: len(recs), Warnings: []string{}}
	masker, err := masking.ForTool(cfg.Tool)
	if err != nil { // the registry loaded, so its pointers are valid; never copy unmasked values
		sum.Skipped = len(recs)
		sum.Warnings = append(sum.Warnings, fmt.Sprintf("%s: sensitive values cannot be masked: %v", cfg.Tool.ID, err))
		return nil, sum
	}
	seen := map[string]bool{}
	docs := map[*contract.Version][2]any{}
	doc := func(v *contract.Version) (params, result any) {
		d, ok := docs[v]
		if !ok {
			d[0], _ = contract.DecodeJSON(v.Parameters)
			if len(v.Result) > 0 {
				d[1], _ = contract.DecodeJSON(v.Result)
			}
			docs[v] = d
		}
		return d[0], d[1]
	}
	for _, c := range cfg.Tool.Cases {
		if c.Suite != "shadow" {
			continue
		}
		if v := cfg.Tool.Version(c.ToolVersion); v != nil {
			if args, err := contract.DecodeJSON(c.Arguments); err == nil {
				p, _ := doc(v)
				seen[v.Version+" "+shape(p, p, args)] = true
			}
		}
	}
	var kept []Case
	for i, r := range recs {
		v := cfg.Tool.Version(r.ToolVersion)
		if r.ToolID != cfg.Tool.ID || v == nil || len(r.Arguments) == 0 || string(r.Arguments) == "null" {
			sum.Skipped++
			continue
		}
		m, err := mask(masker, r)
		if err != nil {
			sum.Skipped++
			sum.Warnings = append(sum.Warnings, r.Source+": arguments are not JSON")
			continue
		}
		args, err := contract.DecodeJSON(m.Arguments)
		if err != nil {
			sum.Skipped++
			sum.Warnings = append(sum.Warnings, r.Source+": arguments are not JSON")
			continue
		}
		n := len(kept) + 1
		pdoc, rdoc := doc(v)
		args = anonymize(pdoc, args, union(m.Masked, r.Masked), union(m.Erased, r.Erased), n)
		key := v.Version + " " + shape(pdoc, pdoc, args)
		if seen[key] {
			sum.Duplicates++
			continue
		}
		seen[key] = true
		var result any
		if len(m.Result) > 0 {
			if res, err := contract.DecodeJSON(m.Result); err == nil {
				result = anonymize(rdoc, res, union(m.ResultMasked, r.ResultMasked), union(m.ResultErased, r.ResultErased), n)
			}
		}
		c, warn := render(cfg, v, args, result, key)
		if warn != "" {
			sum.Warnings = append(sum.Warnings, fmt.Sprintf("%s (record %d): %s", r.Source, i+1, warn))
		}
		kept = append(kept, c)
	}
	if cfg.Sample > 0 && len(kept) > cfg.Sample {
		picked := make([]Case, 0, cfg.Sample)
		for i := 0; i < cfg.Sample; i++ {
			picked = append(picked, kept[i*len(kept)/cfg.Sample])
		}
		sum.Sampled = len(kept) - len(picked)
		kept = picked
	}
	sum.Cases = len(kept)
	return kept, sum
}

// mask masks a record's arguments and result with m, as the decision log
// would, and returns them with the pointers m masked or erased.
func mask(m *decisionlog.Masker, r Record) (Record, error) {
	rec := decisionlog.Record{Arguments: r.Arguments, Result: r.Result}
	if err := m.Apply(&rec, decisionlog.ModeMasked); err != nil {
		return Record{}, err
	}
	out := Record{Arguments: rec.Arguments, Result: rec.Result}
	split := func(ptrs []string, args, result *[]string) {
		for _, p := range ptrs {
			if rest, ok := strings.CutPrefix(p, "/arguments"); ok {
				*args = append(*args, rest)
			} else if rest, ok := strings.CutPrefix(p, "/result"); ok {
				*result = append(*result, rest)
			}
		}
	}
	split(rec.Masked, &out.Masked, &out.ResultMasked)
	split(rec.Erased, &out.Erased, &out.ResultErased)
	return out, nil
}

func union(a, b []string) []string {
	set := map[string]bool{}
	for _, p := range append(append([]string{}, a...), b...) {
		set[p] = true
	}
	out := make([]string, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// anonymize replaces the value at every sensitive pointer ("*" matches every item) with a
// synthetic one, and puts a synthetic value back at every erased pointer.
func anonymize(schema any, v any, sensitive, erased []string, n int) any {
	for _, p := range sensitive {
		v = replaceAt(schema, schema, v, segments(p), n, false)
	}
	for _, p := range erased {
		v = replaceAt(schema, schema, v, segments(p), n, true)
	}
	return v
}

func segments(p string) []string {
	if p == "" || p == "/" {
		return nil
	}
	out := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i, s := range out {
		out[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
	return out
}

// replaceAt walks v along segs, following the schema, and replaces what it reaches. With
// create, a missing last object member is added (it was erased from the record).
func replaceAt(root, schema, v any, segs []string, n int, create bool) any {
	if len(segs) == 0 {
		return synthetic(root, schema, n)
	}
	seg, rest := segs[0], segs[1:]
	switch x := v.(type) {
	case map[string]any:
		if seg == "*" {
			for k, e := range x {
				x[k] = replaceAt(root, child(root, schema, k), e, rest, n, create)
			}
			return x
		}
		e, ok := x[seg]
		if !ok && !(create && len(rest) == 0) {
			return x
		}
		x[seg] = replaceAt(root, child(root, schema, seg), e, rest, n, create)
	case []any:
		for i := range x {
			if seg == "*" || seg == strconv.Itoa(i) {
				x[i] = replaceAt(root, child(root, schema, strconv.Itoa(i)), x[i], rest, n, create)
			}
		}
	}
	return v
}

// shape is the deduplication key of arguments: the members present and their JSON types,
// with the literal value kept where the schema enumerates the allowed values (an enum
// value often picks a different path through the tool and its rules).
func shape(root, schema, v any) string {
	m := resolve(root, schema)
	if m != nil {
		if _, ok := m["enum"]; ok {
			b, _ := json.Marshal(v)
			return string(b)
		}
	}
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = strconv.Quote(k) + ":" + shape(root, child(root, schema, k), x[k])
		}
		return "{" + strings.Join(parts, ",") + "}"
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = shape(root, child(root, schema, strconv.Itoa(i)), e)
		}
		return "[" + strings.Join(parts, ",") + "]"
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "boolean"
	case json.Number:
		return "number"
	}
	return "?"
}

// render writes one case as YAML (values as JSON flow mappings, which YAML reads as is).
func render(cfg Config, v *contract.Version, args, result any, key string) (Case, string) {
	sum := sha256.Sum256([]byte(key))
	id := "shadow_" + hex.EncodeToString(sum[:5])
	argsJSON, _ := json.Marshal(args)
	var b strings.Builder
	fmt.Fprintf(&b, "case_id: %s\n", id)
	b.WriteString("source: shadow_traffic\n")
	if cfg.Agent != "" {
		fmt.Fprintf(&b, "agent: %s\n", strconv.Quote(cfg.Agent))
	}
	fmt.Fprintf(&b, "user_intent: %s\n", strconv.Quote("[captured] a recorded "+cfg.Tool.ID+" call; sensitive values replaced by synthetic ones"))
	fmt.Fprintf(&b, "tool: {id: %s, version: %s}\n", cfg.Tool.ID, v.Version)
	fmt.Fprintf(&b, "expected_tool_arguments: %s\n", argsJSON)
	if result != nil {
		resJSON, _ := json.Marshal(result)
		fmt.Fprintf(&b, "mock_tool_result: %s\n", resJSON)
	}
	b.WriteString("expected:\n")
	verdict := v.Validate(args)
	warn := ""
	if verdict.Valid() {
		if m, ok := result.(map[string]any); ok {
			if s, ok := m["status"].(string); ok {
				fmt.Fprintf(&b, "  tool_status: %s\n", strconv.Quote(s))
			}
		}
		b.WriteString("  validation: ok\n")
	} else {
		b.WriteString("  validation: invalid\n  expected_errors:\n")
		for _, e := range verdict.Errors {
			fmt.Fprintf(&b, "    - {pointer: %s, code: %s}\n", strconv.Quote(e.Pointer), strconv.Quote(e.Code))
		}
		warn = "the anonymized arguments are invalid (" + verdict.Errors[0].Code + " at " + verdict.Errors[0].Pointer + "): captured as an invalid case"
	}
	return Case{ID: id, YAML: []byte(b.String()), Shape: key}, warn
}
