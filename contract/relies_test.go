package contract

import (
	"encoding/json"
	"testing"
)

// ReliesOn.HeldBy finds the parameter a pointer names through nested
// objects, arrays, local $refs and combinators, and holds a value to the
// field's enum or const (compared as JSON), else to its type.
func TestReliesOnHeldBy(t *testing.T) {
	t.Parallel()
	v := &Version{Version: "1.0.0", Parameters: json.RawMessage(`{
	  "type": "object",
	  "properties": {
	    "reason": {"type": "string", "enum": ["LATE_DELIVERY", "DAMAGED"]},
	    "amount": {"type": "integer"},
	    "rate": {"type": "number"},
	    "express": {"const": true},
	    "customer": {"type": "object", "properties": {"tier": {"$ref": "#/$defs/tier", "description": "the tier"}}},
	    "items": {"type": "array", "items": {"type": "object", "properties": {"sku": {"type": "string"}}}},
	    "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer", "enum": [1, 2]}]},
	    "a/b": {"type": "string"},
	    "channel": {"anyOf": [{"const": "email"}, {"const": "sms"}]}
	  },
	  "allOf": [{"properties": {"note": {"type": "string"}}}],
	  "$defs": {"tier": {"type": "string", "enum": ["gold", "silver"]}}
	}`)}
	tests := []struct {
		pointer     string
		value       any
		held, field bool
	}{
		{"/reason", "LATE_DELIVERY", true, true},
		{"/reason", "EARLY", false, true},
		{"/reason", nil, true, true},
		{"/reasons", nil, false, false},
		{"/amount", 100, true, true},
		{"/amount", 1.5, false, true},
		{"/amount", "100", false, true},
		{"/rate", 1.5, true, true},
		{"/express", true, true, true},
		{"/express", false, false, true},
		{"/customer/tier", "gold", true, true},
		{"/customer/tier", "bronze", false, true},
		{"/customer/name", nil, false, false},
		{"/items/0/sku", "A-1", true, true},
		{"/items/*/sku", nil, true, true},
		{"/pair/1", 2, true, true},
		{"/pair/1", 3.0, false, true},
		{"/pair/1", 2.0, true, true}, // 2.0 is the JSON number 2
		{"/a~1b", nil, true, true},
		{"/channel", "sms", true, true},
		{"/channel", "fax", false, true},
		{"/note", nil, true, true},
	}
	for _, tt := range tests {
		r := ReliesOn{Pointer: tt.pointer, Value: tt.value}
		held, field, _ := r.HeldBy([]*Version{v})
		if held != tt.held || field != tt.field {
			t.Errorf("%s = %v: held %v field %v, want %v %v", tt.pointer, tt.value, held, field, tt.held, tt.field)
		}
	}
	_, _, enum := ReliesOn{Pointer: "/reason", Value: "EARLY"}.HeldBy([]*Version{v, v})
	if len(enum) != 2 || enum[0] != `"LATE_DELIVERY"` {
		t.Errorf("enum %q", enum)
	}
}
