package schemadiff

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Contract is what the diff compares in a schema file (docs/reference/files.md). Parameters and Result
// are JSON Schema documents decoded with encoding/json (nil when absent).
type Contract struct {
	ToolID      string     `json:"tool_id"`
	Version     string     `json:"version"`
	Name        string     `json:"name"`
	Description string     `json:"description"`
	Effect      string     `json:"effect"`
	Parameters  any        `json:"parameters"`
	Result      any        `json:"result"`
	Errors      []ErrorDef `json:"errors"`
	Rules       []Rule     `json:"rules"`
}

// ErrorDef is one entry of a tool's error catalogue.
type ErrorDef struct {
	Code       string `json:"code"`
	Category   string `json:"category"`
	HTTPStatus int    `json:"http_status"`
	Retryable  bool   `json:"retryable"`
}

// Rule is one CEL rule over the call's arguments.
type Rule struct {
	ID      string `json:"id"`
	Rule    string `json:"rule"`
	Message string `json:"message"`
	Field   string `json:"field"`
	Outcome string `json:"outcome"`
}

// ErrNotContract is returned by ParseContract for a JSON document that is not a schema file.
var ErrNotContract = errors.New("not a contract schema file: needs tool_id and parameters")

// ParseContract decodes a schema file's bytes. It checks only what the diff needs: the
// document is a JSON object with tool_id and parameters.
func ParseContract(data []byte) (Contract, error) {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(data, &probe); err != nil {
		return Contract{}, fmt.Errorf("parse contract: %w", err)
	}
	if _, ok := probe["tool_id"]; !ok {
		return Contract{}, ErrNotContract
	}
	if _, ok := probe["parameters"]; !ok {
		return Contract{}, ErrNotContract
	}
	var c Contract
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // numbers are compared exactly, as the validator compares them
	if err := dec.Decode(&c); err != nil {
		return Contract{}, fmt.Errorf("parse contract: %w", err)
	}
	return c, nil
}

// Diff compares two versions of a tool contract: the parameters (input) and result
// (output) schemas, the tool's name, description and effect, its error catalogue and its
// rules. The report's declared bump comes from the two versions.
func Diff(oldC, newC Contract, opts Options) Report {
	var ch []Change
	tool := func(kind, ptr string, t Tier, detail string) {
		ch = append(ch, Change{Kind: kind, Pointer: ptr, Direction: Tool, Tier: t, Detail: detail})
	}
	if oldC.ToolID != newC.ToolID {
		tool("tool_id_changed", "/tool_id", TierMajor, "tool_id "+strconv.Quote(oldC.ToolID)+" → "+strconv.Quote(newC.ToolID)+": a different tool")
	}
	if oldC.Name != newC.Name {
		tool("name_changed", "/name", TierMajor, "name "+strconv.Quote(oldC.Name)+" → "+strconv.Quote(newC.Name)+": agents call the tool by name")
	}
	if oldC.Description != newC.Description {
		tool("description_changed", "/description", TierHighRisk, "tool description changed (it changes what a model does)")
	}
	if oldC.Effect != newC.Effect {
		what := "effect " + strconv.Quote(oldC.Effect) + " → " + strconv.Quote(newC.Effect)
		if newC.Effect == "mutating" {
			tool("effect_changed", "/effect", TierMajor, what+": calls now have side effects and need idempotency keys")
		} else {
			tool("effect_changed", "/effect", TierHighRisk, what)
		}
	}
	ch = append(ch, diffSchemaSets(orTrue(oldC.Parameters, oldC.Parameters != nil), orTrue(newC.Parameters, newC.Parameters != nil), Input, "/parameters")...)
	ch = append(ch, diffSchemaSets(orTrue(oldC.Result, oldC.Result != nil), orTrue(newC.Result, newC.Result != nil), Output, "/result")...)
	ch = append(ch, diffErrors(oldC.Errors, newC.Errors)...)
	rules := diffRules(oldC.Rules, newC.Rules)
	for i := range rules {
		// A rule about an x-impact field is as risky as a change to the field itself.
		if r := ruleAt(rules[i].Pointer, oldC.Rules, newC.Rules, rules[i].Kind == "rule_removed"); r != nil {
			rules[i].impact = impactAtField(newC.Parameters, r.Field)
			if rules[i].impact == "" {
				rules[i].impact = impactAtField(oldC.Parameters, r.Field)
			}
		}
	}
	ch = append(ch, rules...)

	var declared *Bump
	if b, ok := DeclaredBump(oldC.Version, newC.Version); ok {
		declared = &b
	}
	return finish(ch, opts, declared)
}

// diffErrors matches error definitions by code. Errors are output: the tool returns them.
func diffErrors(oldE, newE []ErrorDef) []Change {
	var ch []Change
	add := func(kind string, i int, t Tier, detail string) {
		ch = append(ch, Change{Kind: kind, Pointer: "/errors/" + strconv.Itoa(i), Direction: Output, Tier: t, Detail: detail})
	}
	oldIdx := map[string]int{}
	for i, e := range oldE {
		if _, dup := oldIdx[e.Code]; !dup {
			oldIdx[e.Code] = i
		}
	}
	newIdx := map[string]int{}
	for j, e := range newE {
		if _, dup := newIdx[e.Code]; dup {
			continue
		}
		newIdx[e.Code] = j
		q := strconv.Quote(e.Code)
		i, ok := oldIdx[e.Code]
		if !ok {
			add("error_added", j, TierCompatible, "error "+q+" added; the old mappings hold")
			continue
		}
		o := oldE[i]
		if o.Category != e.Category {
			add("error_category_changed", j, TierHighRisk, "error "+q+" category "+o.Category+" → "+e.Category)
		}
		if o.HTTPStatus != e.HTTPStatus {
			add("error_status_changed", j, TierHighRisk, fmt.Sprintf("error %s http_status %d → %d", q, o.HTTPStatus, e.HTTPStatus))
		}
		if o.Retryable != e.Retryable {
			add("error_retryable_changed", j, TierHighRisk, fmt.Sprintf("error %s retryable %t → %t: agents' retry behaviour changes", q, o.Retryable, e.Retryable))
		}
	}
	for i, e := range oldE {
		if _, ok := newIdx[e.Code]; !ok && oldIdx[e.Code] == i {
			add("error_removed", i, TierHighRisk, "error "+strconv.Quote(e.Code)+" removed: agents handling it now see another code")
		}
	}
	return ch
}

// diffRules matches rules by id. Rules constrain input: a new or changed rule may reject
// calls old agents make; a removed rule accepts more.
func diffRules(oldR, newR []Rule) []Change {
	var ch []Change
	add := func(kind string, i int, t Tier, detail string) {
		ch = append(ch, Change{Kind: kind, Pointer: "/rules/" + strconv.Itoa(i), Direction: Input, Tier: t, Detail: detail})
	}
	oldIdx := map[string]int{}
	for i, r := range oldR {
		if _, dup := oldIdx[r.ID]; !dup {
			oldIdx[r.ID] = i
		}
	}
	newIdx := map[string]int{}
	for j, r := range newR {
		if _, dup := newIdx[r.ID]; dup {
			continue
		}
		newIdx[r.ID] = j
		q := strconv.Quote(r.ID)
		i, ok := oldIdx[r.ID]
		if !ok {
			add("rule_added", j, TierHighRisk, "rule "+q+" added: it may reject calls old agents make")
			continue
		}
		o := oldR[i]
		if o.Rule != r.Rule {
			add("rule_changed", j, TierHighRisk, "rule "+q+" expression changed")
		}
		if o.Outcome != r.Outcome {
			add("rule_outcome_changed", j, TierHighRisk, "rule "+q+" outcome "+o.Outcome+" → "+r.Outcome)
		}
		if o.Field != r.Field {
			add("rule_field_changed", j, TierCompatible, "rule "+q+" field "+o.Field+" → "+r.Field)
		}
		if o.Message != r.Message {
			add("rule_message_changed", j, TierCompatible, "rule "+q+" message changed")
		}
	}
	for i, r := range oldR {
		if _, ok := newIdx[r.ID]; !ok && oldIdx[r.ID] == i {
			add("rule_removed", i, TierCompatible, "rule "+strconv.Quote(r.ID)+" removed: calls it rejected are accepted")
		}
	}
	return ch
}

// ruleAt returns the rule a /rules/N pointer names, in the old list for removals.
func ruleAt(ptr string, oldR, newR []Rule, removed bool) *Rule {
	i, err := strconv.Atoi(strings.TrimPrefix(ptr, "/rules/"))
	list := newR
	if removed {
		list = oldR
	}
	if err != nil || i < 0 || i >= len(list) {
		return nil
	}
	return &list[i]
}

// impactAtField returns the x-impact of the property a rule's field pointer ("/amount",
// "/refund/amount") names in a parameters schema, or of any property on the way to it.
func impactAtField(params any, field string) string {
	if !strings.HasPrefix(field, "/") {
		return ""
	}
	cur, _ := resolve(params, params, "")
	for _, seg := range strings.Split(field[1:], "/") {
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
		prop, ok := asMap(asMap(cur)["properties"])[seg]
		if !ok {
			return ""
		}
		if imp := impactOf(params, prop); imp != "" {
			return imp
		}
		cur, _ = resolve(params, prop, "")
	}
	return ""
}
