package contract

import (
	"reflect"
	"strings"
	"sync"
	"testing"
)

// Patterns are ECMA-262: a lookahead or \cC loads, \s follows ECMA's classes, and a
// hostile pattern is cut off by the match time limit with a refusal, not a stall or a
// panic.
func TestECMAPatterns(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, schema, value string
		valid               bool
	}{
		{"lookahead", `{"properties":{"pw":{"type":"string","pattern":"^(?=.*[A-Z])(?=.*\\d).{8,}$"}}}`, `{"pw":"Secret123"}`, true},
		{"lookahead refuses", `{"properties":{"pw":{"type":"string","pattern":"^(?=.*[A-Z])(?=.*\\d).{8,}$"}}}`, `{"pw":"secret123"}`, false},
		{"control escape", `{"pattern":"^\\cC$"}`, `"\u0003"`, true},
		{"\\s takes NBSP", `{"pattern":"^\\s$"}`, `"\u00a0"`, true},
		{"\\s takes vertical tab", `{"pattern":"^\\s$"}`, `"\u000b"`, true},
		{"\\s takes U+FEFF", `{"pattern":"^\\s$"}`, `"\ufeff"`, true},
		{"\\S refuses U+2028", `{"pattern":"^\\S$"}`, `"\u2028"`, false},
		{"patternProperties lookahead", `{"patternProperties":{"^(?!x_)":{"type":"integer"}}}`, `{"a":"1"}`, false},
		{"format regex is ECMA", `{"format":"regex"}`, `"^(?=a)b"`, true},
		{"format regex refuses", `{"format":"regex"}`, `"(unclosed"`, false},
		{"hostname starting with a digit", `{"format":"hostname"}`, `"3com.com"`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := CompileSchema([]byte(tt.schema))
			if err != nil {
				t.Fatalf("does not compile: %v", err)
			}
			v, err := DecodeJSON([]byte(tt.value))
			if err != nil {
				t.Fatal(err)
			}
			if errs := s.Validate(v); (len(errs) == 0) != tt.valid {
				t.Fatalf("valid = %v, want %v: %v", len(errs) == 0, tt.valid, errs)
			}
		})
	}
}

func TestPatternTimeoutIsARefusal(t *testing.T) {
	t.Parallel()
	s, err := CompileSchema([]byte(`{"properties":{"name":{"type":"string","pattern":"^(?=(a+)+$)"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	v, _ := DecodeJSON([]byte(`{"name":"` + strings.Repeat("a", 48) + `!"}`))
	errs := s.Validate(v)
	if len(errs) != 1 || errs[0].Code != "pattern" || !strings.Contains(errs[0].Detail, "limit") {
		t.Fatalf("errors = %v, want one pattern refusal naming the time limit", errs)
	}
	// the regular ^(a+)+$ runs in linear time: an exact answer, no limit hit
	s, _ = CompileSchema([]byte(`{"pattern":"^(a+)+$"}`))
	v, _ = DecodeJSON([]byte(`"` + strings.Repeat("a", 5000) + `!"`))
	if errs := s.Validate(v); len(errs) != 1 || errs[0].Detail != "must match ^(a+)+$" {
		t.Fatalf("^(a+)+$: %v", errs)
	}
	// under not, a stopped match must not turn into an acceptance
	s, _ = CompileSchema([]byte(`{"not":{"pattern":"^(?=(a+)+$)"}}`))
	v, _ = DecodeJSON([]byte(`"` + strings.Repeat("a", 48) + `!"`))
	if errs := s.Validate(v); len(errs) == 0 {
		t.Fatalf("a timed-out match under not was accepted")
	}
}

// The propertyNames pointer is the object's, every run (issue: the library reused its
// location slice, so the pointer named a sibling about one run in five).
func TestPropertyNamesPointerStable(t *testing.T) {
	t.Parallel()
	s, err := CompileSchema([]byte(`{"type":"object","properties":{
		"meta":{"type":"object","propertyNames":{"pattern":"^[a-z_]+$"}},
		"tags":{"type":"object"},"labels":{"type":"object"},"extra":{}}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []FieldError{{"/meta/Bad-Key", "propertyNames", "is not an allowed property name"}}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				v, _ := DecodeJSON([]byte(`{"meta":{"Bad-Key":1,"ok":2},"tags":{"a":1,"b":{"c":2}},"labels":{"x":"y"},"extra":[1,{"q":1}]}`))
				if got := s.Validate(v); !reflect.DeepEqual(got, want) {
					t.Errorf("run %d: errors = %v, want %v", i, got, want)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// When the object with the refused name cannot be told apart, the error stays at the
// nearest certain pointer and names no member (masking never depends on a guess).
func TestPropertyNamesUnplacedNamesNoMember(t *testing.T) {
	t.Parallel()
	s, err := CompileSchema([]byte(`{"type":"object","patternProperties":{"^a$":{"type":"object","propertyNames":{"maxLength":2}}},"properties":{"b":{"type":"object"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	v, _ := DecodeJSON([]byte(`{"a":{"card-4111111111111111":1},"b":{"card-4111111111111111":1}}`))
	got := s.Validate(v)
	want := []FieldError{{"", "propertyNames", "holds an object with a property name that is not allowed"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("errors = %v, want %v", got, want)
	}
}
