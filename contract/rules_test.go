package contract

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// writeTool writes a one-version tool folder and returns the tools directory.
func writeTool(t *testing.T, id, version, schema string, extra map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{filepath.Join(id, "schemas", "v"+version+".json"): schema}
	for k, v := range extra {
		files[filepath.Join(id, k)] = v
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func ruleSchema(rules string) string {
	return `{"tool_id":"t.tool","version":"1.0.0","name":"tool","effect":"mutating",
  "parameters":{"type":"object","properties":{"reason":{"type":"string"},"ticket":{"type":"string"},
    "amount":{"type":"number"},"items":{"type":"array"}}},
  "rules":` + rules + `}`
}

func loadVersion(t *testing.T, schema string) *Version {
	t.Helper()
	reg, err := Load(writeTool(t, "t.tool", "1.0.0", schema, nil))
	if err != nil {
		t.Fatal(err)
	}
	return reg.Tool("t.tool").Version("1.0.0")
}

// TestRuleOutcomes covers reject, review, holding rules, rule_error and the cost limit.
func TestRuleOutcomes(t *testing.T) {
	t.Parallel()
	rules := `[
	  {"id":"needs_ticket","rule":"args.reason != 'service_failure' || has(args.ticket)","message":"needs a ticket","field":"/ticket","outcome":"reject"},
	  {"id":"big","rule":"!has(args.amount) || args.amount <= 100","message":"large amounts need approval","field":"/amount","outcome":"review"},
	  {"id":"ticket_shape","rule":"!has(args.ticket) || args.ticket.startsWith('T-')","message":"tickets start with T-","field":"/ticket"},
	  {"id":"first_item_positive","rule":"!has(args.items) || args.items[0] > 0","message":"first item must be positive","field":"/items/0","outcome":"reject"},
	  {"id":"costly","rule":"!has(args.items) || size(args.items) < 3 || args.items.all(a, args.items.all(b, args.items.all(c, args.items.all(d, a + b + c + d >= 0))))","message":"too costly","field":"/items","outcome":"reject"}
	]`
	v := loadVersion(t, ruleSchema(rules))
	many := `[` + strings.Repeat("1,", 60) + `1]`
	tests := []struct {
		name       string
		args       string
		wantErrors []FieldError
		wantReview []RuleHit
	}{
		{"all rules hold", `{"reason":"customer_request"}`, nil, nil},
		{"reject rule fails", `{"reason":"service_failure"}`, []FieldError{{"/ticket", "needs_ticket", "needs a ticket"}}, nil},
		{"outcome defaults to reject", `{"ticket":"X-1"}`, []FieldError{{"/ticket", "ticket_shape", "tickets start with T-"}}, nil},
		{"review rule fires", `{"reason":"customer_request","amount":250}`, nil, []RuleHit{{"big", "large amounts need approval", "/amount"}}},
		{"review threshold uses decimals too", `{"reason":"x","amount":100.5}`, nil, []RuleHit{{"big", "large amounts need approval", "/amount"}}},
		{"reject and review together", `{"reason":"service_failure","amount":101}`,
			[]FieldError{{"/ticket", "needs_ticket", "needs a ticket"}}, []RuleHit{{"big", "large amounts need approval", "/amount"}}},
		{"rule that cannot be evaluated", `{"reason":"x","items":[]}`,
			[]FieldError{{"/items/0", "rule_error", "rule first_item_positive could not be evaluated: index out of bounds: 0"}}, nil},
		{"cost limit", `{"reason":"x","items":` + many + `}`,
			[]FieldError{{"/items", "rule_error", "rule costly could not be evaluated: operation cancelled: actual cost limit exceeded"}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args, err := DecodeJSON([]byte(tt.args))
			if err != nil {
				t.Fatal(err)
			}
			got := v.Validate(args)
			if !reflect.DeepEqual(got.Errors, tt.wantErrors) {
				t.Errorf("errors: got %q\nwant %q", got.Errors, tt.wantErrors)
			}
			if !reflect.DeepEqual(got.Review, tt.wantReview) {
				t.Errorf("review: got %q\nwant %q", got.Review, tt.wantReview)
			}
			if got.Valid() != (len(tt.wantErrors) == 0) {
				t.Errorf("Valid() = %v", got.Valid())
			}
		})
	}
}

// TestRulesRunOnlyAfterSchema: a schema error hides the rules' verdicts.
func TestRulesRunOnlyAfterSchema(t *testing.T) {
	t.Parallel()
	v := loadVersion(t, ruleSchema(`[{"id":"never","rule":"false","message":"m","outcome":"reject"}]`))
	args, _ := DecodeJSON([]byte(`{"amount":"x"}`))
	got := v.Validate(args)
	want := []FieldError{{"/amount", "type", "must be a number, not string"}}
	if !reflect.DeepEqual(got.Errors, want) {
		t.Errorf("got %q, want %q", got.Errors, want)
	}
}

func TestRuleLoadErrors(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, rules, want string }{
		{"does not compile", `[{"id":"r1","rule":"args.reason ==","message":"m"}]`, "t.tool v1.0.0: rule r1 does not compile"},
		{"not bool", `[{"id":"r2","rule":"size(args)","message":"m"}]`, "t.tool v1.0.0: rule r2 must return bool, returns int"},
		{"bad outcome", `[{"id":"r3","rule":"true","outcome":"warn"}]`, `outcome must be "reject" or "review", not "warn"`},
		{"duplicate id", `[{"id":"r4","rule":"true"},{"id":"r4","rule":"true"}]`, "rule r4 is listed twice"},
		{"missing id", `[{"rule":"true"}]`, "rule 0 has no id"},
		{"field not a pointer", `[{"id":"r5","rule":"true","field":"ticket"}]`, "field must be a JSON pointer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Load(writeTool(t, "t.tool", "1.0.0", ruleSchema(tt.rules), nil))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want it to contain %q", err, tt.want)
			}
			if !strings.Contains(err.Error(), "v1.0.0.json:") {
				t.Errorf("problem does not name the file: %v", err)
			}
		})
	}
}

// TestValidateConcurrently runs one compiled version from many goroutines (run with -race).
func TestValidateConcurrently(t *testing.T) {
	t.Parallel()
	reg, err := Load(examples)
	if err != nil {
		t.Fatal(err)
	}
	v := reg.Tool("payments.issue_refund").Version("1.0.0")
	calls := []string{
		`{"order_id":"ord_8Xk2Lm9Q","amount_minor":1999,"currency":"EUR","reason":"duplicate_charge"}`,
		`{"order_id":"ord_8Xk2Lm9Q","amount_minor":200000,"currency":"EUR","reason":"customer_request"}`,
		`{"order_id":"x","amount_minor":0}`,
	}
	want := make([]Verdict, len(calls))
	for i, c := range calls {
		want[i] = v.Validate(mustDecode(t, c))
	}
	done := make(chan error)
	for g := 0; g < 16; g++ {
		go func(g int) {
			for i := 0; i < 50; i++ {
				k := (g + i) % len(calls)
				args, _ := DecodeJSON([]byte(calls[k]))
				if got := v.Validate(args); !reflect.DeepEqual(got, want[k]) {
					done <- fmt.Errorf("call %d: got %+v, want %+v", k, got, want[k])
					return
				}
			}
			done <- nil
		}(g)
	}
	for g := 0; g < 16; g++ {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}
