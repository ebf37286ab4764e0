package toolcall

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"testing"

	"github.com/toolgate/toolgate/decisionlog"
)

// Every Code constant is a row of the table, and every row is complete.
func TestEveryCodeIsInTheTable(t *testing.T) {
	t.Parallel()
	f, err := parser.ParseFile(token.NewFileSet(), "problems.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	declared := 0
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || vs.Type == nil || len(vs.Values) != 1 {
			return true
		}
		if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Code" {
			return true
		}
		lit, ok := vs.Values[0].(*ast.BasicLit)
		if !ok {
			t.Errorf("%s is not a string literal", vs.Names[0].Name)
			return true
		}
		code, _ := strconv.Unquote(lit.Value)
		declared++
		if _, ok := Code(code).Info(); !ok {
			t.Errorf("%s (%q) is not in the problem table", vs.Names[0].Name, code)
		}
		return true
	})
	if declared != len(codes) || declared != len(Codes()) {
		t.Fatalf("%d constants, %d rows, %d listed", declared, len(codes), len(Codes()))
	}
	for c, info := range codes {
		if info.Status < 400 || info.Status > 599 || info.Title == "" || info.Fix == "" || !info.Outcome.Valid() {
			t.Errorf("%s: incomplete row %+v", c, info)
		}
	}
}

// The decision-log outcome of every code is the one the gateway derived from
// the answer's status before the table knew it (kept here as the rule it
// replaced), so moving the outcome into the table changed no log line.
func TestOutcomesMatchTheStatusRule(t *testing.T) {
	t.Parallel()
	byStatus := func(status int) decisionlog.Outcome {
		switch {
		case status == 401 || status == 403:
			return decisionlog.OutcomeDenied
		case status == 409:
			return decisionlog.OutcomeConflict
		case status == 504:
			return decisionlog.OutcomeUnknown
		case status >= 500:
			return decisionlog.OutcomeUnreachable
		}
		return decisionlog.OutcomeInvalid
	}
	for c, info := range codes {
		if want := byStatus(info.Status); info.Outcome != want {
			t.Errorf("%s (%d): outcome %s, the status says %s", c, info.Status, info.Outcome, want)
		}
	}
	later := Errorf(CodeOutcomeUnknown, "x")
	later.later = true
	if later.Status() != 409 || later.Outcome() != byStatus(409) {
		t.Errorf("outcome_unknown on a later call: %d %s", later.Status(), later.Outcome())
	}
}

func TestWireProblem(t *testing.T) {
	t.Parallel()
	p := Errorf(CodeActionInProgress, "wait %d", 3).withRetry(3)
	p.ActionID, p.State = "a-1", "running"
	w := p.Wire()
	if w.Type != "/problems/action_in_progress" || w.Title != "Action in progress" || w.Status != 409 || w.Code != "action_in_progress" ||
		w.Detail != "wait 3" || w.RetryAfter != 3 || w.ActionID != "a-1" || w.State != "running" {
		t.Fatalf("wire %+v", w)
	}
}
