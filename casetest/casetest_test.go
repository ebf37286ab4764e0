package casetest

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/contract"
)

const examples = "../examples/agent-tools"

// setup loads the bundled examples and returns refund.create_request.
func setup(t testing.TB) *contract.Tool {
	t.Helper()
	reg, err := contract.Load(examples)
	if err != nil {
		t.Fatal(err)
	}
	return reg.Tool("refund.create_request")
}

func TestCrossVersionReplay(t *testing.T) {
	t.Parallel()
	tool := setup(t)
	rep, err := Run(context.Background(), Config{Tool: tool, Target: tool.Version("2.2.0"), From: "2.1.0"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Decision != DecisionBlock {
		t.Fatalf("decision %q", rep.Decision)
	}
	got := map[string]string{}
	for _, s := range rep.Suites {
		got[s.Suite] = strings.Join([]string{itoa(s.Passed), itoa(s.Total)}, "/")
	}
	if got["golden"] != "1/2" || got["regression"] != "2/2" || got["shadow"] != "1/1" {
		t.Fatalf("suites %v", got)
	}
	if len(rep.TopFailures) != 1 || rep.TopFailures[0].Cause != "Missing approval_channel in old prompt path" {
		t.Fatalf("top failures %+v", rep.TopFailures)
	}
	// Against 2.1.0 itself, the 2.2.0 cases are not selected and everything passes.
	rep, err = Run(context.Background(), Config{Tool: tool, Target: tool.Version("2.1.0")})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Decision != DecisionAllow || len(rep.Cases) != 1 {
		t.Fatalf("against 2.1.0: %s, %d cases", rep.Decision, len(rep.Cases))
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestCaseChecks(t *testing.T) {
	t.Parallel()
	tool := setup(t)
	base := contract.Case{Suite: "golden", ID: "c", ToolID: tool.ID, ToolVersion: "2.2.0"}
	valid := `{"order_id":"ord_1","reason_code":"customer_request","approval_channel":"chat"}`
	tests := []struct {
		name   string
		edit   func(c *contract.Case)
		causes []string // failure causes, in order; nil = passes
		note   string   // a note that must appear
	}{
		{name: "valid arguments", edit: func(c *contract.Case) { c.Arguments = json.RawMessage(valid) }},
		{name: "unknown argument", edit: func(c *contract.Case) {
			c.Arguments = json.RawMessage(`{"order_id":"ord_1","reason_code":"customer_request","approval_channel":"chat","x":1}`)
		}, causes: []string{"Unknown argument x"}},
		{name: "expected invalid and reported", edit: func(c *contract.Case) {
			c.Arguments = json.RawMessage(`{"order_id":"ord_1","reason_code":"service_failure","approval_channel":"chat"}`)
			c.Expected.ExpectedErrors = []contract.ExpectedError{{Pointer: "/ticket_id", Code: "service_failure_needs_ticket"}}
		}},
		{name: "expected invalid but accepted", edit: func(c *contract.Case) {
			c.Arguments = json.RawMessage(valid)
			c.Expected.Validation = "invalid"
			c.Expected.ExpectedErrors = []contract.ExpectedError{{Pointer: "/order_id", Code: "pattern"}}
		}, causes: []string{"Arguments accepted by v2.2.0, expected pattern at /order_id"}},
		{name: "expected error not reported", edit: func(c *contract.Case) {
			c.Arguments = json.RawMessage(`{"order_id":"nope","reason_code":"customer_request","approval_channel":"chat"}`)
			c.Expected.ExpectedErrors = []contract.ExpectedError{{Pointer: "/order_id", Code: "required"}}
		}, causes: []string{"Expected required at /order_id, not reported"}},
		{name: "mock result violates the result schema", edit: func(c *contract.Case) {
			c.MockResult = json.RawMessage(`{"status":"done"}`)
		}, causes: []string{"mock_tool_result violates the v2.2.0 result schema: enum at /status"}, note: "no expected_tool_arguments"},
		{name: "tool status differs", edit: func(c *contract.Case) {
			c.MockResult = json.RawMessage(`{"status":"submitted"}`)
			c.Expected.ToolStatus = "pending_review"
		}, causes: []string{`tool_status "submitted", expected "pending_review"`}},
		{name: "phrases are case-insensitive", edit: func(c *contract.Case) {
			c.AgentResponse = "Refund Request Has Been Submitted."
			c.MustInclude = []string{"refund request has been submitted"}
		}},
		{name: "must_not_include matches", edit: func(c *contract.Case) {
			c.AgentResponse = "REFUND SUCCESSFUL."
			c.MustNotInclude = []string{"Refund successful."}
		}, causes: []string{`Agent text says "Refund successful."`}},
		{name: "regex phrase", edit: func(c *contract.Case) {
			c.AgentResponse = "You will hear from us within 24 hours."
			c.MustInclude = []string{`/within \d+ hours/`, "/days?/"}
		}, causes: []string{`Agent text lacks "/days?/"`}},
		{name: "bad regex", edit: func(c *contract.Case) {
			c.AgentResponse = "x"
			c.MustInclude = []string{"/(/"}
		}, causes: []string{"Bad phrase /(/"}},
		{name: "no text to check", edit: func(c *contract.Case) {
			c.MustInclude = []string{"x"}
		}, note: "agent behavior not checked"},
		{name: "matchers need a model", edit: func(c *contract.Case) {
			c.Arguments = json.RawMessage(`{"order_id":"{{regex:^ord_}}"}`)
		}, note: "matchers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := base
			tt.edit(&c)
			r := &runner{cfg: Config{Tool: tool}, target: tool.Version("2.2.0")}
			res := r.check(context.Background(), &c)
			var causes []string
			for _, f := range res.Failures {
				causes = append(causes, f.Cause)
			}
			if strings.Join(causes, "|") != strings.Join(tt.causes, "|") {
				t.Fatalf("causes %q, want %q", causes, tt.causes)
			}
			if res.Passed != (len(tt.causes) == 0) {
				t.Fatalf("passed %v", res.Passed)
			}
			if tt.note != "" && !strings.Contains(strings.Join(res.Notes, "|"), tt.note) {
				t.Fatalf("notes %q lack %q", res.Notes, tt.note)
			}
		})
	}
}

func TestMatchArgs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, want, got string
		diffs           int
	}{
		{name: "equal", want: `{"a":"x","n":1}`, got: `{"n":1.0,"a":"x"}`},
		{name: "any", want: `{"a":"{{any}}"}`, got: `{"a":[1]}`},
		{name: "any needs presence", want: `{"a":"{{any}}"}`, got: `{}`, diffs: 1},
		{name: "type", want: `{"a":"{{type:integer}}","b":"{{type:number}}"}`, got: `{"a":3,"b":3}`},
		{name: "type mismatch", want: `{"a":"{{type:integer}}"}`, got: `{"a":"3"}`, diffs: 1},
		{name: "regex", want: `{"a":"{{regex:^ord_[0-9]+$}}"}`, got: `{"a":"ord_42"}`},
		{name: "regex mismatch", want: `{"a":"{{regex:^ord_[0-9]+$}}"}`, got: `{"a":"jane@example.com"}`, diffs: 1},
		{name: "null matches absent", want: `{"a":null}`, got: `{}`},
		{name: "extra null ignored", want: `{}`, got: `{"a":null}`},
		{name: "extra value", want: `{}`, got: `{"a":1}`, diffs: 1},
		{name: "nested array", want: `{"a":[{"b":"{{any}}"}]}`, got: `{"a":[{"b":2}]}`},
		{name: "value differs", want: `{"a":"x"}`, got: `{"a":"y"}`, diffs: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w, _ := contract.DecodeJSON([]byte(tt.want))
			g, _ := contract.DecodeJSON([]byte(tt.got))
			if d := matchArgs(w, g, ""); len(d) != tt.diffs {
				t.Fatalf("diffs %q, want %d", d, tt.diffs)
			}
		})
	}
}

// TestCaseForAMissingVersionIsAnError: a case naming a version the tool does not have
// stops the replay instead of dropping out of the suite.
func TestCaseForAMissingVersionIsAnError(t *testing.T) {
	t.Parallel()
	reg, err := contract.Load("../examples/agent-tools")
	if err != nil {
		t.Fatal(err)
	}
	tool := *reg.Tool("payments.issue_refund")
	c := *tool.Cases[0]
	c.ToolVersion = "1.1.0"
	tool.Cases = append(append([]*contract.Case{}, tool.Cases...), &c)
	_, err = Run(context.Background(), Config{Tool: &tool})
	if err == nil || !strings.Contains(err.Error(), `payments.issue_refund has no version "1.1.0" (it has 1.0.0)`) {
		t.Fatalf("err %v", err)
	}
	other := c
	other.ToolVersion, other.ToolID = "1.0.0", "payments.other"
	tool.Cases = []*contract.Case{&other}
	if _, err := Run(context.Background(), Config{Tool: &tool}); err == nil || !strings.Contains(err.Error(), `names tool "payments.other"`) {
		t.Fatalf("err %v", err)
	}
}

// TestCoverage: a replay is judged on the cases that cover its target. Tools and changes
// that need coverage block without a covering golden or regression case (cross-version
// cases run but do not count); a replay of no case is "no cases"; a shadow case is no
// coverage; tool.versions makes a 1.x case cover 2.x.
func TestCoverage(t *testing.T) {
	t.Parallel()
	reg, err := contract.Load("../cmd/toolgate/testdata/gate/uncovered")
	if err != nil {
		t.Fatal(err)
	}
	base := reg.Tool("shop.place_order")
	withCase := func(suite, version string, versions ...string) *contract.Tool {
		tool := *base
		c := *base.Cases[0]
		c.Suite, c.ToolVersion, c.Versions, c.VersionSpecs = suite, version, versions, nil
		for _, v := range versions {
			s, err := contract.ParseVersionSpec(v)
			if err != nil {
				t.Fatal(err)
			}
			c.VersionSpecs = append(c.VersionSpecs, s)
		}
		// valid against 2.0.0, so a case that does not cover it passes and still counts nothing
		c.Arguments = json.RawMessage(`{"order_id":"ord_1","total_minor":1,"currency":"EUR","sales_channel":"web"}`)
		tool.Cases = []*contract.Case{&c}
		return &tool
	}
	low := func(tool *contract.Tool) *contract.Tool { t2 := *tool; t2.Owner.RiskLevel = "low"; return &t2 }
	tests := []struct {
		name     string
		tool     *contract.Tool
		from     string
		change   string
		decision string
		covering int
		detail   string
	}{
		{"high risk, the only case written for 1.0.0", base, "1.1.0", "major", DecisionBlock, 0, "no golden or regression case covers v2.0.0 (needed: risk_level high, major change)"},
		{"cross-version case runs but does not cover", withCase("golden", "1.1.0"), "1.1.0", "major", DecisionBlock, 0, "written for v1.1.0"},
		{"a golden case written for the target", withCase("golden", "2.0.0"), "1.1.0", "major", DecisionAllow, 1, ""},
		{"a regression case covers too", withCase("regression", "2.0.0"), "1.1.0", "major", DecisionAllow, 1, ""},
		{"a shadow case is no coverage", withCase("shadow", "2.0.0"), "1.1.0", "major", DecisionBlock, 0, "covers v2.0.0"},
		{"tool.versions 2.x", withCase("golden", "1.0.0", "2.x"), "1.1.0", "major", DecisionAllow, 1, ""},
		{"tool.versions range", withCase("golden", "1.0.0", ">=1.0.0 <3.0.0"), "1.1.0", "major", DecisionAllow, 1, ""},
		{"tool.versions that miss the target", withCase("golden", "1.0.0", "1.x"), "1.1.0", "major", DecisionBlock, 0, "covers v2.0.0"},
		{"low risk, compatible change, cross-version case", low(withCase("golden", "1.1.0")), "1.1.0", "compatible", DecisionAllow, 0, ""},
		{"low risk, high-risk change", low(withCase("golden", "1.1.0")), "1.1.0", "high_risk", DecisionBlock, 0, "needed: high-risk change"},
		{"low risk, nothing at all", low(base), "1.1.0", "compatible", DecisionNoCases, 0, "no case was replayed against v2.0.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rep, err := Run(context.Background(), Config{Tool: tt.tool, Target: tt.tool.Version("2.0.0"), From: tt.from, Change: tt.change})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Decision != tt.decision || rep.Coverage.Cases != tt.covering || !strings.Contains(rep.Coverage.Detail, tt.detail) || rep.Coverage.OK != (tt.detail == "") {
				t.Fatalf("decision %q, coverage %+v", rep.Decision, rep.Coverage)
			}
			if rep.OK() != (tt.decision == DecisionAllow) {
				t.Fatalf("OK() = %v for %q", rep.OK(), rep.Decision)
			}
		})
	}
}

// TestNothingIsNeverAPass is the zero-case rule as a property: over random sets of cases
// (suites, written-for versions, declared tool.versions), risk levels and changes, a
// replay is "allow release" only when it ran at least one case, and — when the tool is
// high-risk or the change major or high-risk — at least one golden or regression case
// that covers the target.
func TestNothingIsNeverAPass(t *testing.T) {
	t.Parallel()
	reg, err := contract.Load("../cmd/toolgate/testdata/gate/uncovered")
	if err != nil {
		t.Fatal(err)
	}
	base := reg.Tool("shop.place_order")
	rng := rand.New(rand.NewPCG(27, 3))
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	for i := range 500 {
		tool := *base
		tool.Owner.RiskLevel = pick("low", "medium", "high")
		tool.Cases = nil
		for range rng.IntN(4) {
			c := *base.Cases[0]
			c.Suite, c.ToolVersion = pick(contract.Suites...), pick("1.0.0", "1.1.0", "2.0.0")
			c.Versions, c.VersionSpecs = nil, nil
			if rng.IntN(3) == 0 {
				v := pick("1.x", "2.x", ">=1.1.0 <3.0.0", "9.x")
				s, _ := contract.ParseVersionSpec(v)
				c.Versions, c.VersionSpecs = []string{v}, []contract.VersionSpec{s}
			}
			c.Arguments = json.RawMessage(`{"order_id":"ord_1","total_minor":1,"currency":"EUR","sales_channel":"web"}`)
			tool.Cases = append(tool.Cases, &c)
		}
		change := pick("none", "compatible", "high_risk", "major", "")
		target := pick("1.0.0", "1.1.0", "2.0.0")
		rep, err := Run(context.Background(), Config{Tool: &tool, Target: tool.Version(target), From: pick("", "1.0.0", "1.1.0"), Change: change})
		if err != nil {
			t.Fatal(err)
		}
		covering := 0
		for _, c := range tool.Cases {
			if c.Covers(target) && c.Suite != "shadow" {
				covering++
			}
		}
		needs := tool.Owner.RiskLevel == "high" || change == "major" || change == "high_risk"
		if rep.Decision == DecisionAllow && (len(rep.Cases) == 0 || needs && covering == 0) {
			t.Fatalf("run %d: %q on %d cases (%d covering %s; risk %s, change %q)", i, rep.Decision, len(rep.Cases), covering, target, tool.Owner.RiskLevel, change)
		}
		if rep.Coverage.Cases != covering {
			t.Fatalf("run %d: coverage counts %d, want %d", i, rep.Coverage.Cases, covering)
		}
	}
}
