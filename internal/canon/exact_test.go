package canon

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

func TestExactNumbers(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in    string
		exact bool
		canon string // with exact: the canonical form
	}{
		{"1", true, "1"}, {"1.0", true, "1"}, {"1e0", true, "1"}, {"1E+0", true, "1"}, {"100", true, "100"}, {"1e2", true, "100"},
		{"0.1", true, "0.1"}, {"12.34", true, "12.34"}, {"1.50", true, "1.5"}, {"-0", true, "0"}, {"-0.0", true, "0"}, {"0e999999999999999999", true, "0"},
		{"123456789012345", true, "123456789012345"}, {"9007199254740992", true, "9007199254740992"}, {"-9007199254740992", true, "-9007199254740992"},
		{"1e21", true, "1e+21"}, {"1e23", true, "1e+23"}, {"100000000000000000000000", true, "1e+23"}, {"0.000001", true, "0.000001"}, {"1E-7", true, "1e-7"},
		{"0.30000000000000004", true, "0.30000000000000004"}, {"5e-324", true, "5e-324"}, {"1.7976931348623157e308", true, "1.7976931348623157e+308"},
		{"1." + strings.Repeat("0", 400), true, "1"}, {"0." + strings.Repeat("0", 300) + "1e301", true, "1"},
		// The value changes.
		{"9007199254740993", false, ""}, {"-9007199254740993", false, ""}, {"123456789012345678901234567890", false, ""},
		{"0.10000000000000001", false, ""}, {"0.30000000000000001", false, ""}, {"4.9406564584124654e-324", false, ""},
		{"1e400", false, ""}, {"-1e400", false, ""}, {"1e99999999999999999999", false, ""}, {"1e-400", false, ""}, {"2e-324", false, ""},
		{"1.7976931348623159e308", false, ""}, {"9007199254740992.5", false, ""}, {"1." + strings.Repeat("0", 400) + "1", false, ""},
	} {
		t.Run(c.in[:min(len(c.in), 40)], func(t *testing.T) {
			if got := Exact(c.in); got != c.exact {
				t.Fatalf("Exact(%s) = %v", c.in, got)
			}
			doc := `{"a":[0,{"b~/c":` + c.in + `}]}`
			out, err := TransformExact([]byte(doc))
			if !c.exact {
				var ne *NotExactError
				if !errors.As(err, &ne) || ne.Total != 1 || len(ne.Numbers) != 1 || ne.Numbers[0].Pointer != "/a/1/b~0~1c" || ne.Numbers[0].Offset != 16 {
					t.Fatalf("TransformExact: %v (%+v)", err, ne)
				}
				return
			}
			if want := `{"a":[0,{"b~/c":` + c.canon + `}]}`; err != nil || string(out) != want {
				t.Fatalf("TransformExact = %s, %v; want %s", out, err, want)
			}
		})
	}
}

func TestNotExactListsEveryNumber(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString(`{"ok":1.5,"list":[`)
	for i := range MaxReported + 20 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("9007199254740993")
	}
	b.WriteString(`]}`)
	_, err := TransformExact([]byte(b.String()))
	var ne *NotExactError
	if !errors.As(err, &ne) || ne.Total != MaxReported+20 || len(ne.Numbers) != MaxReported || ne.Numbers[7].Pointer != "/list/7" {
		t.Fatalf("%v %+v", err, ne)
	}
	// Syntax errors win: the input is not JSON.
	if _, err := TransformExact([]byte(`{"a":1e400,}`)); err == nil || errors.As(err, &ne) {
		t.Fatalf("syntax: %v", err)
	}
}

// TestExactIsValuePreserving holds the rule against exact arithmetic: a
// literal is exact exactly when its decimal value equals the value of the
// canonical form written for it.
func TestExactIsValuePreserving(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		lit := randomNumber(r)
		out, err := TransformExact([]byte(lit))
		var ne *NotExactError
		switch {
		case errors.As(err, &ne):
			if v, ok := new(big.Rat).SetString(lit); ok {
				if f, _ := strconv.ParseFloat(lit, 64); !math.IsInf(f, 0) {
					c, _ := Transform([]byte(lit))
					w, _ := new(big.Rat).SetString(string(c))
					if v.Cmp(w) == 0 {
						t.Fatalf("%s refused, but its canonical form %s has the same value", lit, c)
					}
				}
			}
		case err != nil:
			t.Fatalf("%s: %v", lit, err)
		default:
			v, _ := new(big.Rat).SetString(lit)
			w, _ := new(big.Rat).SetString(string(out))
			if v.Cmp(w) != 0 {
				t.Fatalf("%s accepted as %s, another value", lit, out)
			}
		}
	}
}

func randomNumber(r *rand.Rand) string {
	switch r.IntN(4) {
	case 0:
		return strconv.FormatFloat(r.NormFloat64()*math.Pow(10, float64(r.IntN(40)-20)), 'g', -1, 64)
	case 1:
		return strconv.FormatFloat(r.Float64(), 'f', r.IntN(20), 64)
	case 2:
		return fmt.Sprintf("%d%s", r.Uint64(), strings.Repeat("0", r.IntN(8)))
	default:
		digits := make([]byte, 1+r.IntN(22))
		for i := range digits {
			digits[i] = byte('0' + r.IntN(10))
		}
		digits[0] = byte('1' + r.IntN(9))
		if len(digits) == 1 {
			return fmt.Sprintf("%se%d", digits, r.IntN(700)-350)
		}
		return fmt.Sprintf("%s.%se%d", digits[:1], digits[1:], r.IntN(700)-350)
	}
}

func FuzzTransformExact(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := TransformExact(in)
		want, werr := Transform(in)
		var ne *NotExactError
		switch {
		case errors.As(err, &ne):
			if ne.Total < 1 || len(ne.Numbers) < 1 {
				t.Fatalf("%q: empty %v", in, ne)
			}
		case err != nil:
			if werr == nil {
				t.Fatalf("%q: TransformExact %v, Transform accepts", in, err)
			}
		default:
			if werr != nil || string(out) != string(want) {
				t.Fatalf("%q: TransformExact %s, Transform %s %v", in, out, want, werr)
			}
		}
	})
}
