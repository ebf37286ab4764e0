package schemadiff

import (
	"encoding/json"
	"strings"
	"testing"
)

func mustJSON(t testing.TB, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("bad JSON %s: %v", s, err)
	}
	return v
}

// findKind returns the first change of the given kind.
func findKind(r Report, kind string) (Change, bool) {
	for _, c := range r.Changes {
		if c.Kind == kind {
			return c, true
		}
	}
	return Change{}, false
}

// TestChangeKinds checks every change kind the schema walk reports, in both directions.
func TestChangeKinds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		old, new string
		kind     string
		pointer  string
		input    Tier
		output   Tier
	}{
		{"optional property added to closed object", `{"type":"object","additionalProperties":false,"properties":{"a":{"type":"string"}}}`, `{"type":"object","additionalProperties":false,"properties":{"a":{"type":"string"},"b":{"type":"integer"}}}`, "property_added", "/properties/b", TierCompatible, TierHighRisk},
		{"optional property added to open object", `{"type":"object","properties":{"a":{"type":"string"}}}`, `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}}}`, "property_added", "/properties/b", TierHighRisk, TierCompatible},
		{"required property added without default", `{"type":"object","properties":{}}`, `{"type":"object","properties":{"b":{"type":"string"}},"required":["b"]}`, "required_property_added", "/properties/b", TierMajor, TierCompatible},
		{"required property added with default", `{"type":"object","properties":{}}`, `{"type":"object","properties":{"b":{"type":"string","default":"x"}},"required":["b"]}`, "required_property_added", "/properties/b", TierMajor, TierCompatible},
		{"optional property removed", `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}}}`, `{"type":"object","properties":{"a":{"type":"string"}}}`, "property_removed", "/properties/b", TierCompatible, TierHighRisk},
		{"required property removed", `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}},"required":["b"]}`, `{"type":"object","properties":{"a":{"type":"string"}}}`, "property_removed", "/properties/b", TierCompatible, TierMajor},
		{"property renamed", `{"type":"object","properties":{"a":{"type":"string"},"amount":{"type":"integer","minimum":1}}}`, `{"type":"object","properties":{"a":{"type":"string"},"amount_cents":{"type":"integer","minimum":1}}}`, "property_renamed", "/properties/amount_cents", TierHighRisk, TierHighRisk},
		{"required property renamed", `{"type":"object","properties":{"amount":{"type":"integer"}},"required":["amount"]}`, `{"type":"object","properties":{"amount_cents":{"type":"integer"}},"required":["amount_cents"]}`, "property_renamed", "/properties/amount_cents", TierMajor, TierHighRisk},
		{"property moved one level down", `{"type":"object","properties":{"status":{"type":"string","enum":["ok","pending"]},"meta":{"type":"object","properties":{}}}}`, `{"type":"object","properties":{"meta":{"type":"object","properties":{"status":{"type":"string","enum":["ok","pending"]}}}}}`, "property_moved", "/properties/meta/properties/status", TierHighRisk, TierHighRisk},
		{"optional made required", `{"type":"object","properties":{"a":{"type":"string"}}}`, `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`, "required_added", "/properties/a", TierMajor, TierCompatible},
		{"required made optional", `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`, `{"type":"object","properties":{"a":{"type":"string"}}}`, "required_removed", "/properties/a", TierCompatible, TierHighRisk},
		{"integer widened to number", `{"type":"integer"}`, `{"type":"number"}`, "type_widened", "/type", TierCompatible, TierHighRisk},
		{"type added to union", `{"type":"string"}`, `{"type":["string","null"]}`, "type_widened", "/type", TierCompatible, TierHighRisk},
		{"number narrowed to integer", `{"type":"number"}`, `{"type":"integer"}`, "type_narrowed", "/type", TierHighRisk, TierCompatible},
		{"type changed", `{"type":"object","properties":{"a":{"type":"string"}}}`, `{"type":"object","properties":{"a":{"type":"integer"}}}`, "type_changed", "/properties/a/type", TierHighRisk, TierHighRisk},
		{"root result type changed", `{"type":"object"}`, `{"type":"array"}`, "type_changed", "/type", TierHighRisk, TierMajor},
		{"enum value added", `{"enum":["a","b"]}`, `{"enum":["a","b","c"]}`, "enum_value_added", "/enum", TierCompatible, TierHighRisk},
		{"enum value removed", `{"enum":["a","b","c"]}`, `{"enum":["a","b"]}`, "enum_value_removed", "/enum", TierHighRisk, TierCompatible},
		{"enum value renamed", `{"enum":["a","b"]}`, `{"enum":["a","c"]}`, "enum_value_renamed", "/enum", TierHighRisk, TierHighRisk},
		{"enum constraint added", `{"type":"string"}`, `{"type":"string","enum":["a"]}`, "enum_added", "/enum", TierHighRisk, TierCompatible},
		{"enum constraint removed", `{"type":"string","enum":["a"]}`, `{"type":"string"}`, "enum_removed", "/enum", TierCompatible, TierHighRisk},
		{"const changed", `{"const":"v1"}`, `{"const":"v2"}`, "enum_value_renamed", "/const", TierHighRisk, TierHighRisk},
		{"default changed", `{"type":"integer","default":1}`, `{"type":"integer","default":2}`, "default_changed", "/default", TierHighRisk, TierHighRisk},
		{"default added", `{"type":"integer"}`, `{"type":"integer","default":2}`, "default_added", "/default", TierHighRisk, TierHighRisk},
		{"default removed", `{"type":"integer","default":2}`, `{"type":"integer"}`, "default_removed", "/default", TierHighRisk, TierHighRisk},
		{"pattern changed", `{"type":"string","pattern":"^a"}`, `{"type":"string","pattern":"^b"}`, "pattern_changed", "/pattern", TierHighRisk, TierHighRisk},
		{"pattern added", `{"type":"string"}`, `{"type":"string","pattern":"^b"}`, "pattern_added", "/pattern", TierHighRisk, TierCompatible},
		{"pattern removed", `{"type":"string","pattern":"^b"}`, `{"type":"string"}`, "pattern_removed", "/pattern", TierCompatible, TierHighRisk},
		{"format changed", `{"type":"string","format":"date"}`, `{"type":"string","format":"date-time"}`, "format_changed", "/format", TierHighRisk, TierHighRisk},
		{"format added", `{"type":"string"}`, `{"type":"string","format":"email"}`, "format_added", "/format", TierHighRisk, TierCompatible},
		{"format removed", `{"type":"string","format":"email"}`, `{"type":"string"}`, "format_removed", "/format", TierCompatible, TierHighRisk},
		{"maximum tightened", `{"type":"integer","maximum":1000}`, `{"type":"integer","maximum":500}`, "bound_tightened", "/maximum", TierHighRisk, TierCompatible},
		{"maximum relaxed", `{"type":"integer","maximum":500}`, `{"type":"integer","maximum":1000}`, "bound_relaxed", "/maximum", TierCompatible, TierHighRisk},
		{"minLength added", `{"type":"string"}`, `{"type":"string","minLength":3}`, "bound_tightened", "/minLength", TierHighRisk, TierCompatible},
		{"maxItems removed", `{"type":"array","maxItems":3}`, `{"type":"array"}`, "bound_relaxed", "/maxItems", TierCompatible, TierHighRisk},
		{"multipleOf to a multiple", `{"type":"integer","multipleOf":5}`, `{"type":"integer","multipleOf":10}`, "bound_tightened", "/multipleOf", TierHighRisk, TierCompatible},
		{"multipleOf to a divisor", `{"type":"integer","multipleOf":10}`, `{"type":"integer","multipleOf":5}`, "bound_relaxed", "/multipleOf", TierCompatible, TierHighRisk},
		{"multipleOf unrelated", `{"type":"integer","multipleOf":3}`, `{"type":"integer","multipleOf":5}`, "bound_changed", "/multipleOf", TierHighRisk, TierHighRisk},
		{"uniqueItems required", `{"type":"array"}`, `{"type":"array","uniqueItems":true}`, "bound_tightened", "/uniqueItems", TierHighRisk, TierCompatible},
		{"object closed", `{"type":"object","properties":{"a":{}}}`, `{"type":"object","properties":{"a":{}},"additionalProperties":false}`, "object_closed", "/additionalProperties", TierHighRisk, TierCompatible},
		{"object opened", `{"type":"object","properties":{"a":{}},"additionalProperties":false}`, `{"type":"object","properties":{"a":{}}}`, "object_opened", "/additionalProperties", TierCompatible, TierHighRisk},
		{"unevaluatedProperties closed", `{"type":"object"}`, `{"type":"object","unevaluatedProperties":false}`, "object_closed", "/unevaluatedProperties", TierHighRisk, TierCompatible},
		{"additionalProperties schema narrowed", `{"type":"object","additionalProperties":{"type":"number"}}`, `{"type":"object","additionalProperties":{"type":"integer"}}`, "type_narrowed", "/additionalProperties/type", TierHighRisk, TierCompatible},
		{"pattern property added to open object", `{"type":"object"}`, `{"type":"object","patternProperties":{"^x_":{"type":"string"}}}`, "pattern_property_added", "/patternProperties/^x_", TierHighRisk, TierCompatible},
		{"pattern property added to closed object", `{"type":"object","additionalProperties":false}`, `{"type":"object","additionalProperties":false,"patternProperties":{"^x_":{"type":"string"}}}`, "pattern_property_added", "/patternProperties/^x_", TierCompatible, TierHighRisk},
		{"pattern property removed from open object", `{"type":"object","patternProperties":{"^x_":{"type":"string"}}}`, `{"type":"object"}`, "pattern_property_removed", "/patternProperties/^x_", TierCompatible, TierHighRisk},
		{"pattern property removed from closed object", `{"type":"object","additionalProperties":false,"patternProperties":{"^x_":{"type":"string"}}}`, `{"type":"object","additionalProperties":false}`, "pattern_property_removed", "/patternProperties/^x_", TierHighRisk, TierCompatible},
		{"pattern property schema changed", `{"type":"object","patternProperties":{"^x_":{"type":"string"}}}`, `{"type":"object","patternProperties":{"^x_":{"type":"string","maxLength":5}}}`, "bound_tightened", "/patternProperties/^x_/maxLength", TierHighRisk, TierCompatible},
		{"propertyNames tightened", `{"type":"object"}`, `{"type":"object","propertyNames":{"pattern":"^[a-z]+$"}}`, "pattern_added", "/propertyNames/pattern", TierHighRisk, TierCompatible},
		{"dependentRequired added", `{"type":"object"}`, `{"type":"object","dependentRequired":{"card":["cvv"]}}`, "dependent_required_added", "/dependentRequired/card", TierHighRisk, TierCompatible},
		{"dependentRequired removed", `{"type":"object","dependentRequired":{"card":["cvv"]}}`, `{"type":"object"}`, "dependent_required_removed", "/dependentRequired/card", TierCompatible, TierHighRisk},
		{"dependentSchemas added", `{"type":"object"}`, `{"type":"object","dependentSchemas":{"card":{"required":["cvv"]}}}`, "dependent_schema_added", "/dependentSchemas/card", TierHighRisk, TierCompatible},
		{"dependentSchemas removed", `{"type":"object","dependentSchemas":{"card":{"required":["cvv"]}}}`, `{"type":"object"}`, "dependent_schema_removed", "/dependentSchemas/card", TierCompatible, TierHighRisk},
		{"items type narrowed", `{"type":"array","items":{"type":["string","integer"]}}`, `{"type":"array","items":{"type":"string"}}`, "type_narrowed", "/items/type", TierHighRisk, TierCompatible},
		{"items closed", `{"type":"array","prefixItems":[{"type":"string"}]}`, `{"type":"array","prefixItems":[{"type":"string"}],"items":false}`, "array_closed", "/items", TierHighRisk, TierCompatible},
		{"items opened", `{"type":"array","prefixItems":[{"type":"string"}],"items":false}`, `{"type":"array","prefixItems":[{"type":"string"}]}`, "array_opened", "/items", TierCompatible, TierHighRisk},
		{"tuple item added to open tuple", `{"type":"array","prefixItems":[{"type":"string"}]}`, `{"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}]}`, "tuple_item_added", "/prefixItems/1", TierHighRisk, TierCompatible},
		{"tuple item added to closed tuple", `{"type":"array","prefixItems":[{"type":"string"}],"items":false}`, `{"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}],"items":false}`, "tuple_item_added", "/prefixItems/1", TierCompatible, TierHighRisk},
		{"tuple item removed from open tuple", `{"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}]}`, `{"type":"array","prefixItems":[{"type":"string"}]}`, "tuple_item_removed", "/prefixItems/1", TierCompatible, TierHighRisk},
		{"tuple item removed from closed tuple", `{"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}],"items":false}`, `{"type":"array","prefixItems":[{"type":"string"}],"items":false}`, "tuple_item_removed", "/prefixItems/1", TierHighRisk, TierCompatible},
		{"tuple item type changed", `{"type":"array","prefixItems":[{"type":"string"}]}`, `{"type":"array","prefixItems":[{"type":"boolean"}]}`, "type_changed", "/prefixItems/0/type", TierHighRisk, TierHighRisk},
		{"contains added", `{"type":"array"}`, `{"type":"array","contains":{"const":"x"}}`, "contains_added", "/contains", TierHighRisk, TierCompatible},
		{"contains removed", `{"type":"array","contains":{"const":"x"}}`, `{"type":"array"}`, "contains_removed", "/contains", TierCompatible, TierHighRisk},
		{"anyOf branch added", `{"anyOf":[{"type":"string"}]}`, `{"anyOf":[{"type":"string"},{"type":"integer"}]}`, "branch_added", "/anyOf/1", TierCompatible, TierHighRisk},
		{"anyOf branch removed", `{"anyOf":[{"type":"string"},{"type":"integer"}]}`, `{"anyOf":[{"type":"string"}]}`, "branch_removed", "/anyOf/1", TierHighRisk, TierCompatible},
		{"oneOf disjoint branch added", `{"oneOf":[{"type":"string"}]}`, `{"oneOf":[{"type":"string"},{"type":"integer"}]}`, "branch_added", "/oneOf/1", TierCompatible, TierHighRisk},
		{"oneOf overlapping branch added", `{"oneOf":[{"type":"string"}]}`, `{"oneOf":[{"type":"string"},{"type":"string","maxLength":3}]}`, "branch_added", "/oneOf/1", TierHighRisk, TierCompatible},
		{"oneOf discriminated branch added", `{"oneOf":[{"type":"object","properties":{"kind":{"const":"card"}},"required":["kind"]}]}`, `{"oneOf":[{"type":"object","properties":{"kind":{"const":"card"}},"required":["kind"]},{"type":"object","properties":{"kind":{"const":"bank"}},"required":["kind"]}]}`, "branch_added", "/oneOf/1", TierCompatible, TierHighRisk},
		{"oneOf branch removed", `{"oneOf":[{"type":"string"},{"type":"integer"}]}`, `{"oneOf":[{"type":"string"}]}`, "branch_removed", "/oneOf/1", TierHighRisk, TierCompatible},
		{"allOf branch added", `{"allOf":[{"type":"object"}]}`, `{"allOf":[{"type":"object"},{"required":["a"]}]}`, "branch_added", "/allOf/1", TierHighRisk, TierCompatible},
		{"allOf branch removed", `{"allOf":[{"type":"object"},{"required":["a"]}]}`, `{"allOf":[{"type":"object"}]}`, "branch_removed", "/allOf/1", TierCompatible, TierHighRisk},
		{"branch contents changed", `{"anyOf":[{"type":"string","maxLength":5}]}`, `{"anyOf":[{"type":"string","maxLength":3}]}`, "bound_tightened", "/anyOf/0/maxLength", TierHighRisk, TierCompatible},
		{"branch changed while another is added", `{"anyOf":[{"type":"string","maxLength":9},{"type":"integer"}]}`, `{"anyOf":[{"type":"string","maxLength":5},{"type":"integer"},{"type":"null"}]}`, "bound_tightened", "/anyOf/0/maxLength", TierHighRisk, TierCompatible},
		{"combinator added", `{"type":"object"}`, `{"type":"object","anyOf":[{"required":["a"]},{"required":["b"]}]}`, "combinator_added", "/anyOf", TierHighRisk, TierCompatible},
		{"combinator removed", `{"type":"object","oneOf":[{"required":["a"]},{"required":["b"]}]}`, `{"type":"object"}`, "combinator_removed", "/oneOf", TierCompatible, TierHighRisk},
		{"not added", `{"type":"string"}`, `{"type":"string","not":{"const":""}}`, "not_added", "/not", TierHighRisk, TierCompatible},
		{"not removed", `{"type":"string","not":{"const":""}}`, `{"type":"string"}`, "not_removed", "/not", TierCompatible, TierHighRisk},
		{"not contents widened", `{"not":{"enum":["a"]}}`, `{"not":{"enum":["a","b"]}}`, "enum_value_added", "/not/enum", TierHighRisk, TierCompatible},
		{"conditional added", `{"type":"object"}`, `{"type":"object","if":{"required":["a"]},"then":{"required":["b"]}}`, "conditional_added", "/if", TierHighRisk, TierCompatible},
		{"conditional removed", `{"type":"object","if":{"required":["a"]},"then":{"required":["b"]}}`, `{"type":"object"}`, "conditional_removed", "/if", TierCompatible, TierHighRisk},
		{"if condition widened", `{"if":{"properties":{"k":{"const":"a"}}},"then":{"required":["b"]}}`, `{"if":{"properties":{"k":{"enum":["a","c"]}}},"then":{"required":["b"]}}`, "enum_value_added", "/if/properties/k/enum", TierHighRisk, TierCompatible},
		{"then tightened", `{"if":{"required":["a"]},"then":{"properties":{"b":{"maxLength":9}}}}`, `{"if":{"required":["a"]},"then":{"properties":{"b":{"maxLength":5}}}}`, "bound_tightened", "/then/properties/b/maxLength", TierHighRisk, TierCompatible},
		{"else relaxed", `{"if":{"required":["a"]},"else":{"properties":{"b":{"maxLength":5}}}}`, `{"if":{"required":["a"]},"else":{"properties":{"b":{"maxLength":9}}}}`, "bound_relaxed", "/else/properties/b/maxLength", TierCompatible, TierHighRisk},
		{"schema closed to false", `{"type":"object","properties":{"a":{"type":"string"}}}`, `{"type":"object","properties":{"a":false}}`, "schema_closed", "/properties/a", TierHighRisk, TierCompatible},
		{"schema opened from false", `{"type":"object","properties":{"a":false}}`, `{"type":"object","properties":{"a":true}}`, "schema_opened", "/properties/a", TierCompatible, TierHighRisk},
		{"property description changed", `{"type":"object","properties":{"a":{"type":"string","description":"Order id"}}}`, `{"type":"object","properties":{"a":{"type":"string","description":"Order or invoice id"}}}`, "description_changed", "/properties/a/description", TierHighRisk, TierHighRisk},
		{"title changed", `{"title":"A"}`, `{"title":"B"}`, "annotation_changed", "/title", TierCompatible, TierCompatible},
		{"x-impact removed", `{"type":"object","properties":{"a":{"type":"integer","x-impact":"funds"}}}`, `{"type":"object","properties":{"a":{"type":"integer"}}}`, "extension_changed", "/properties/a/x-impact", TierMajor, TierMajor},
		{"x-impact added", `{"type":"object","properties":{"a":{"type":"integer"}}}`, `{"type":"object","properties":{"a":{"type":"integer","x-impact":"funds"}}}`, "extension_changed", "/properties/a/x-impact", TierCompatible, TierCompatible},
		{"x-sensitive removed", `{"type":"object","properties":{"a":{"type":"string","x-sensitive":true}}}`, `{"type":"object","properties":{"a":{"type":"string"}}}`, "extension_changed", "/properties/a/x-sensitive", TierHighRisk, TierHighRisk},
		{"other extension changed", `{"x-owner":"a"}`, `{"x-owner":"b"}`, "extension_changed", "/x-owner", TierCompatible, TierCompatible},
		{"x-impact raises a tightened bound", `{"type":"object","properties":{"amount":{"type":"integer","maximum":1000,"x-impact":"funds"}}}`, `{"type":"object","properties":{"amount":{"type":"integer","maximum":500,"x-impact":"funds"}}}`, "bound_tightened", "/properties/amount/maximum", TierMajor, TierCompatible},
		{"x-impact on a parent raises a nested change", `{"type":"object","properties":{"refund":{"type":"object","x-impact":"funds","properties":{"currency":{"type":"string","pattern":"^[A-Z]{3}$"}}}}}`, `{"type":"object","properties":{"refund":{"type":"object","x-impact":"funds","properties":{"currency":{"type":"string","pattern":"^[A-Z]{3,4}$"}}}}}`, "pattern_changed", "/properties/refund/properties/currency/pattern", TierCompatible, TierMajor},
		{"not a schema changed", `{"properties":{"a":5}}`, `{"properties":{"a":6}}`, "schema_changed", "/properties/a", TierHighRisk, TierHighRisk},
		{"optional with default made required", `{"type":"object","properties":{"a":{"type":"string","default":"x"}}}`, `{"type":"object","properties":{"a":{"type":"string","default":"x"}},"required":["a"]}`, "required_added", "/properties/a", TierMajor, TierCompatible},
		{"draft-07 additionalItems opened", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"array","items":[{"type":"string"}],"additionalItems":false}`, `{"$schema":"http://json-schema.org/draft-07/schema#","type":"array","items":[{"type":"string"}]}`, "array_opened", "/additionalItems", TierCompatible, TierHighRisk},
		{"property added under a typed additionalProperties", `{"type":"object","additionalProperties":{"type":"string"}}`, `{"type":"object","additionalProperties":{"type":"string"},"properties":{"tag":{"type":"string","maxLength":8}}}`, "bound_tightened", "/properties/tag/maxLength", TierHighRisk, TierCompatible},
		{"unresolvable ref changed", `{"$ref":"other.json#/a"}`, `{"$ref":"other.json#/b"}`, "ref_changed", "/$ref", TierHighRisk, TierHighRisk},
		{"unknown keyword changed", `{"type":"string","contentSchema2":1}`, `{"type":"string","contentSchema2":2}`, "keyword_changed", "/contentSchema2", TierHighRisk, TierHighRisk},
		{"ref target changed", `{"type":"object","properties":{"m":{"$ref":"#/$defs/Money"}},"$defs":{"Money":{"type":"integer","minimum":0}}}`, `{"type":"object","properties":{"m":{"$ref":"#/$defs/Money"}},"$defs":{"Money":{"type":"integer","minimum":1}}}`, "bound_tightened", "/properties/m/minimum", TierHighRisk, TierCompatible},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o, n := mustJSON(t, tt.old), mustJSON(t, tt.new)
			for _, dc := range []struct {
				dir  Direction
				want Tier
			}{{Input, tt.input}, {Output, tt.output}} {
				r := DiffSchemas(o, n, dc.dir, Options{})
				c, ok := findKind(r, tt.kind)
				if !ok {
					t.Fatalf("%s: no %s change in %+v", dc.dir, tt.kind, r.Changes)
				}
				if c.Tier != dc.want {
					t.Errorf("%s: %s tier = %s, want %s (%s)", dc.dir, tt.kind, c.Tier, dc.want, c.Detail)
				}
				if c.Pointer != tt.pointer {
					t.Errorf("%s: %s pointer = %q, want %q", dc.dir, tt.kind, c.Pointer, tt.pointer)
				}
				if c.Direction != dc.dir {
					t.Errorf("direction = %s, want %s", c.Direction, dc.dir)
				}
				if strings.TrimSpace(c.Detail) == "" {
					t.Errorf("empty detail")
				}
			}
		})
	}
}
