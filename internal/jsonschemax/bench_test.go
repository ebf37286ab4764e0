package jsonschemax

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The regex engine change measured in one run: each workload validated with the
// library's default engine (Go's regexp, RE2: what toolgate used before) and with the
// ECMA-262 engine Configure installs. BenchmarkPatternEngines gives the go test
// numbers; TestPatternEngineTable (TOOLGATE_BENCH_TABLE=1) prints them as one table:
//
//	TOOLGATE_BENCH_TABLE=1 go test ./internal/jsonschemax -run TestPatternEngineTable -v

type workload struct {
	name, schema, value string
}

var workloads = []workload{
	{"no patterns (formats only)", `{"type":"object","properties":{"id":{"type":"string","format":"uuid"},"host":{"type":"string","format":"hostname"},"n":{"type":"integer"}}}`,
		`{"id":"123e4567-e89b-12d3-a456-426614174000","host":"api.example.com","n":3}`},
	{"3 typical patterns", `{"type":"object","properties":{"order_id":{"type":"string","pattern":"^ord_[A-Za-z0-9]{8,}$"},"currency":{"type":"string","pattern":"^[A-Z]{3}$"},"key":{"type":"string","pattern":"^[a-z0-9-]{1,64}$"}}}`,
		`{"order_id":"ord_8Xk2Lm9Q","currency":"EUR","key":"refund-8xk2lm9q-1"}`},
	{"patternProperties, 10 names", `{"type":"object","patternProperties":{"^x_[a-z]+$":{"type":"integer"},"^[a-z]+$":{"type":"string"}}}`,
		`{"a":"1","b":"2","c":"3","d":"4","e":"5","x_a":1,"x_b":2,"x_c":3,"x_d":4,"x_e":5}`},
	{"pattern on a 4 KB string", `{"type":"string","pattern":"^[\\s\\S]*end$"}`, `"` + strings.Repeat("word ", 820) + `end"`},
	{"pathological ^(a+)+$, 30 a's and !", `{"type":"string","pattern":"^(a+)+$"}`, `"` + strings.Repeat("a", 30) + `!"`},
	{"lookahead ^(?=.*[A-Z])(?=.*\\d).{8,}$", `{"type":"string","pattern":"^(?=.*[A-Z])(?=.*\\d).{8,}$"}`, `"Secret123abc"`},
	{"pathological lookahead ^(?=(a+)+$), 30 a's and !", `{"type":"string","pattern":"^(?=(a+)+$)"}`, `"` + strings.Repeat("a", 30) + `!"`},
}

func compileWith(b testing.TB, schema string, ecma bool) *jsonschema.Schema {
	s, err := tryCompile(schema, ecma)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

func tryCompile(schema string, ecma bool) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(schema))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if ecma {
		Configure(c)
	}
	if err := c.AddResource("urn:b", doc); err != nil {
		return nil, err
	}
	return c.Compile("urn:b")
}

func validateOnce(s *jsonschema.Schema, v any) (refused bool) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := Recovered(r); !ok {
				panic(r)
			}
			refused = true
		}
	}()
	return s.Validate(v) != nil
}

func runWorkload(b *testing.B, w workload, ecma bool) {
	s := compileWith(b, w.schema, ecma)
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(w.value))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		validateOnce(s, v)
	}
}

func BenchmarkPatternEngines(b *testing.B) {
	for _, w := range workloads {
		for _, e := range []struct {
			name string
			ecma bool
		}{{"re2", false}, {"ecma", true}} {
			b.Run(w.name+"/"+e.name, func(b *testing.B) { runWorkload(b, w, e.ecma) })
		}
	}
}

func TestPatternEngineTable(t *testing.T) {
	if os.Getenv("TOOLGATE_BENCH_TABLE") == "" {
		t.Skip("set TOOLGATE_BENCH_TABLE=1 to measure and print the table")
	}
	fmt.Println("| workload | RE2 (before) | ECMA-262 (after) | after/before | allocs before → after | outcome after |")
	fmt.Println("|---|---:|---:|---:|---:|---|")
	for _, w := range workloads {
		// the engines alternate three times; the fastest run of each is kept
		var res [2]testing.BenchmarkResult
		_, re2Err := tryCompile(w.schema, false)
		for round := 0; round < 3; round++ {
			for i, ecma := range []bool{false, true} {
				if !ecma && re2Err != nil {
					continue
				}
				r := testing.Benchmark(func(b *testing.B) { runWorkload(b, w, ecma) })
				if round == 0 || r.NsPerOp() < res[i].NsPerOp() {
					res[i] = r
				}
			}
		}
		s := compileWith(t, w.schema, true)
		v, _ := jsonschema.UnmarshalJSON(strings.NewReader(w.value))
		outcome := "accepted"
		if validateOnce(s, v) {
			outcome = "refused"
		}
		if re2Err != nil {
			fmt.Printf("| %s | does not load | %v | — | — → %d | %s |\n", w.name, time.Duration(res[1].NsPerOp()), res[1].AllocsPerOp(), outcome)
			continue
		}
		ratio := float64(res[1].NsPerOp()) / float64(max(res[0].NsPerOp(), 1))
		fmt.Printf("| %s | %v | %v | %.2f× | %d → %d | %s |\n", w.name,
			time.Duration(res[0].NsPerOp()), time.Duration(res[1].NsPerOp()), ratio,
			res[0].AllocsPerOp(), res[1].AllocsPerOp(), outcome)
	}
}
