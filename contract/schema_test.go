package contract

import (
	"reflect"
	"testing"
)

// TestSchemaKeywords checks each JSON Schema keyword's error: pointer, code and detail.
func TestSchemaKeywords(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		schema string
		value  string
		want   []FieldError
	}{
		{"valid", `{"type":"object","properties":{"a":{"type":"string"}}}`, `{"a":"x"}`, nil},
		{"type integer given decimal", `{"type":"object","properties":{"amount_minor":{"type":"integer"}}}`, `{"amount_minor":9.99}`,
			[]FieldError{{"/amount_minor", "type", "must be an integer, not number"}}},
		{"type integer accepts 1.0", `{"type":"integer"}`, `1.0`, nil},
		{"type union", `{"type":["integer","null"]}`, `"x"`, []FieldError{{"", "type", "must be null or an integer, not string"}}},
		{"pattern", `{"type":"object","properties":{"order_id":{"type":"string","pattern":"^ord_[A-Za-z0-9]{8,}$"}}}`, `{"order_id":"jane@example.com"}`,
			[]FieldError{{"/order_id", "pattern", "must match ^ord_[A-Za-z0-9]{8,}$"}}},
		{"minimum", `{"minimum":1}`, `0`, []FieldError{{"", "minimum", "must be >= 1"}}},
		{"maximum", `{"maximum":10}`, `11`, []FieldError{{"", "maximum", "must be <= 10"}}},
		{"exclusiveMinimum", `{"exclusiveMinimum":0}`, `0`, []FieldError{{"", "exclusiveMinimum", "must be > 0"}}},
		{"exclusiveMaximum", `{"exclusiveMaximum":2.5}`, `3`, []FieldError{{"", "exclusiveMaximum", "must be < 2.5"}}},
		{"multipleOf", `{"multipleOf":5}`, `7`, []FieldError{{"", "multipleOf", "must be a multiple of 5"}}},
		{"enum", `{"enum":["EUR","USD"]}`, `"JPY"`, []FieldError{{"", "enum", `must be one of "EUR", "USD"`}}},
		{"const", `{"const":"v1"}`, `"v2"`, []FieldError{{"", "const", `must be "v1"`}}},
		{"required lists each missing property", `{"type":"object","required":["b","a"]}`, `{}`,
			[]FieldError{{"/a", "required", "is required"}, {"/b", "required", "is required"}}},
		{"required nested", `{"properties":{"x":{"required":["y"]}}}`, `{"x":{}}`, []FieldError{{"/x/y", "required", "is required"}}},
		{"additionalProperties names the extra property", `{"type":"object","properties":{"a":{}},"additionalProperties":false}`, `{"a":1,"z":2,"y":3}`,
			[]FieldError{{"/y", "additionalProperties", "is not an allowed property"}, {"/z", "additionalProperties", "is not an allowed property"}}},
		{"minLength", `{"minLength":3}`, `"ab"`, []FieldError{{"", "minLength", "must be at least 3 characters long"}}},
		{"maxLength", `{"maxLength":2}`, `"abc"`, []FieldError{{"", "maxLength", "must be at most 2 characters long"}}},
		{"minItems", `{"minItems":1}`, `[]`, []FieldError{{"", "minItems", "must have at least 1 item"}}},
		{"maxItems", `{"maxItems":1}`, `[1,2]`, []FieldError{{"", "maxItems", "must have at most 1 item"}}},
		{"uniqueItems", `{"uniqueItems":true}`, `[1,2,1]`, []FieldError{{"", "uniqueItems", "must not repeat items (items 0 and 2 are equal)"}}},
		{"minProperties", `{"minProperties":1}`, `{}`, []FieldError{{"", "minProperties", "must have at least 1 property"}}},
		{"maxProperties", `{"maxProperties":0}`, `{"a":1}`, []FieldError{{"", "maxProperties", "must have at most 0 properties"}}},
		{"format email", `{"format":"email"}`, `"not-an-email"`, []FieldError{{"", "format", "must be a valid email"}}},
		{"items pointer", `{"items":{"type":"integer"}}`, `[1,"x"]`, []FieldError{{"/1", "type", "must be an integer, not string"}}},
		{"prefixItems", `{"prefixItems":[{"type":"string"}]}`, `[1]`, []FieldError{{"/0", "type", "must be a string, not integer"}}},
		{"contains", `{"contains":{"const":1}}`, `[2]`, []FieldError{{"", "contains", "must contain at least one matching item"}}},
		{"anyOf reported once", `{"anyOf":[{"type":"string"},{"type":"integer"}]}`, `true`, []FieldError{{"", "anyOf", "must match at least one of the allowed schemas"}}},
		{"oneOf several", `{"oneOf":[{"type":"integer"},{"minimum":0}]}`, `1`, []FieldError{{"", "oneOf", "must match exactly one of the allowed schemas, but matches several"}}},
		{"not", `{"not":{"const":0}}`, `0`, []FieldError{{"", "not", "must not match the excluded schema"}}},
		{"allOf descends", `{"allOf":[{"minimum":1},{"maximum":0}]}`, `0.5`, []FieldError{{"", "maximum", "must be <= 0"}, {"", "minimum", "must be >= 1"}}},
		{"dependentRequired", `{"dependentRequired":{"a":["b"]}}`, `{"a":1}`, []FieldError{{"/b", "dependentRequired", `is required when "a" is present`}}},
		{"propertyNames", `{"propertyNames":{"pattern":"^[a-z]+$"}}`, `{"A":1}`, []FieldError{{"/A", "propertyNames", "is not an allowed property name"}}},
		{"false schema", `{"properties":{"a":false}}`, `{"a":1}`, []FieldError{{"/a", "false", "is not allowed here"}}},
		{"$ref to $defs", `{"$defs":{"id":{"type":"string"}},"properties":{"a":{"$ref":"#/$defs/id"}}}`, `{"a":1}`,
			[]FieldError{{"/a", "type", "must be a string, not integer"}}},
		{"pointer escaping", `{"properties":{"a/b~c":{"type":"string"}}}`, `{"a/b~c":1}`, []FieldError{{"/a~1b~0c", "type", "must be a string, not integer"}}},
		{"many errors sorted by pointer", `{"type":"object","properties":{"order_id":{"pattern":"^ord_"},"amount_minor":{"minimum":1}}}`, `{"order_id":"x","amount_minor":0}`,
			[]FieldError{{"/amount_minor", "minimum", "must be >= 1"}, {"/order_id", "pattern", "must match ^ord_"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := CompileSchema([]byte(tt.schema))
			if err != nil {
				t.Fatalf("compile: %v", err)
			}
			v, err := DecodeJSON([]byte(tt.value))
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			got := s.Validate(v)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestCompileSchemaErrors(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, schema string }{
		{"not JSON", `{`},
		{"bad type", `{"type":"strin"}`},
		{"bad pattern", `{"pattern":"("}`},
		{"external ref refused", `{"$ref":"https://example.com/s.json"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := CompileSchema([]byte(tt.schema)); err == nil {
				t.Fatal("want an error")
			}
		})
	}
}

func TestDecodeJSON(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in, wantErr string }{
		{"object", `{"a":1}`, ""},
		{"big number keeps precision", `123456789012345678901234567890`, ""},
		{"empty", ``, "invalid JSON: empty input"},
		{"trailing data", "{}\n{}", "invalid JSON at line 2, column 1: unexpected data after the value"},
		{"syntax", "{\n  \"a\": ,\n}", "invalid JSON at line 2, column 8: invalid character ',' looking for beginning of value"},
		{"truncated", `{"a":`, "invalid JSON at line 1, column 6: unexpected end of input"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := DecodeJSON([]byte(tt.in))
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.wantErr {
				t.Errorf("got %q, want %q", got, tt.wantErr)
			}
		})
	}
}
