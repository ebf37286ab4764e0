package contract

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/ext"
)

// RuleCostLimit bounds the work one rule may do for one call (CEL cost units). A rule that
// exceeds it fails with code rule_error.
const RuleCostLimit = 100_000

type ruleProgram struct {
	rule Rule
	prg  cel.Program
}

var (
	celEnvOnce sync.Once
	celEnv     *cel.Env
	celEnvErr  error
)

// ruleEnv is the CEL environment rules compile in: one variable `args` (the call's
// arguments as a map), the standard library, string extensions and cross-type numeric
// comparisons (so `args.amount > 100` holds whether the JSON said 101 or 101.0).
func ruleEnv() (*cel.Env, error) {
	celEnvOnce.Do(func() {
		celEnv, celEnvErr = cel.NewEnv(
			cel.Variable("args", cel.MapType(cel.StringType, cel.DynType)),
			cel.CrossTypeNumericComparisons(true),
			ext.Strings(),
		)
	})
	return celEnv, celEnvErr
}

// compileRule type-checks a rule and returns its program, or an error a person can act on.
func compileRule(r Rule) (*ruleProgram, error) {
	env, err := ruleEnv()
	if err != nil {
		return nil, err
	}
	ast, iss := env.Compile(r.Rule)
	if iss != nil && iss.Err() != nil {
		msg := iss.Err().Error()
		if i := strings.IndexByte(msg, '\n'); i >= 0 {
			msg = msg[:i]
		}
		return nil, fmt.Errorf("does not compile: %s", strings.TrimPrefix(msg, "ERROR: <input>:"))
	}
	if !ast.OutputType().IsExactType(cel.BoolType) {
		return nil, fmt.Errorf("must return bool, returns %s", ast.OutputType())
	}
	prg, err := env.Program(ast, cel.CostLimit(RuleCostLimit), cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		return nil, fmt.Errorf("cannot be planned: %v", err)
	}
	return &ruleProgram{rule: r, prg: prg}, nil
}

// eval runs the rule; ok reports whether it holds. err is set when the rule cannot be
// evaluated for these arguments (a missing field, a type mismatch, the cost limit).
func (p *ruleProgram) eval(activation map[string]any) (ok bool, err error) {
	out, _, err := p.prg.Eval(activation)
	if err != nil {
		return false, err
	}
	b, isBool := out.Value().(bool)
	if !isBool {
		return false, fmt.Errorf("returned %v, not a bool", out.Value())
	}
	return b, nil
}

// celValue converts decoded JSON into values CEL understands: json.Number becomes int64
// when it is an integer that fits, float64 otherwise.
func celValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = celValue(e)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = celValue(e)
		}
		return l
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case int:
		return int64(x)
	case float32:
		return float64(x)
	}
	return v
}
