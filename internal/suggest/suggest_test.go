package suggest

import (
	"reflect"
	"testing"
)

func TestDistance(t *testing.T) {
	t.Parallel()
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"", "abc", 3},
		{"requried", "required", 1}, // transposition
		{"patern", "pattern", 1},
		{"maxLenght", "maxLength", 1},
		{"MaxLength", "maxLength", 0},
		{"timout", "timeout", 1},
		{"x-sensitve", "x-sensitive", 1},
		{"kitten", "sitting", 3},
		{"ca", "abc", 3}, // OSA, not full Damerau: no edits of a transposed pair
		{"δx", "xδ", 1},
	}
	for _, tt := range tests {
		if got := Distance(tt.a, tt.b); got != tt.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := Distance(tt.b, tt.a); got != tt.want {
			t.Errorf("Distance(%q, %q) = %d, want %d (symmetry)", tt.b, tt.a, got, tt.want)
		}
	}
}

func TestNearest(t *testing.T) {
	t.Parallel()
	words := []string{"required", "properties", "pattern", "patternProperties", "type", "title", "minLength", "maxLength"}
	tests := []struct {
		name string
		want []string
	}{
		{"requried", []string{"required"}},
		{"patern", []string{"pattern"}},
		{"mxLength", []string{"maxLength", "minLength"}},
		{"tpye", []string{"type"}},
		{"zzzzzzzz", nil},
		{"required", nil}, // itself is not a suggestion
		{"tipe", []string{"type"}},
	}
	for _, tt := range tests {
		got := Nearest(tt.name, words, 0)
		if len(got) == 0 && len(tt.want) == 0 {
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Nearest(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
	if got := Nearest("mxLength", words, 1); !reflect.DeepEqual(got, []string{"maxLength"}) {
		t.Errorf("limit 1: %v", got)
	}
}

func TestDidYouMean(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in   []string
		want string
	}{
		{nil, ""},
		{[]string{"a"}, `did you mean "a"?`},
		{[]string{"a", "b"}, `did you mean "a" or "b"?`},
		{[]string{"a", "b", "c"}, `did you mean "a", "b" or "c"?`},
	} {
		if got := DidYouMean(tt.in...); got != tt.want {
			t.Errorf("DidYouMean(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestNearestProperties: a candidate is suggested only within MaxDistance, never the
// name itself, and results are sorted by distance.
func TestNearestProperties(t *testing.T) {
	t.Parallel()
	cands := []string{"a", "ab", "abc", "abcd", "abcde", "abcdef", "timeout", "timeouts", "method", "url", "state", "lookup"}
	for _, name := range append(cands, "x", "tmeout", "metod", "lokup", "abcdefghijklmnop") {
		got := Nearest(name, cands, 0)
		last := -1
		for _, g := range got {
			d := Distance(name, g)
			if g == name || d > MaxDistance(name) || d < last {
				t.Fatalf("Nearest(%q) = %v: %q at distance %d", name, got, g, d)
			}
			last = d
		}
	}
}
