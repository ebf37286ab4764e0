package toolcall

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"testing"
	"time"

	"github.com/toolgate/toolgate/decisionlog"
	"github.com/toolgate/toolgate/ledger"
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

// One contract for errors (docs/reference/problems.md): 503
// ledger_unavailable only for a ledger that cannot serve or a deadline, 409
// for a lost race, 500 for everything else, a context.Canceled included
// (the caller that went away is told apart where its context is known).
func TestStoreErrorsMapToOneContract(t *testing.T) {
	t.Parallel()
	plain := errors.New("sqlite: no such table: actions (code 1)")
	for _, tc := range []struct {
		name string
		err  error
		want Code
	}{
		{"unavailable", fmt.Errorf("get action x: %w", ledger.ErrUnavailable), CodeLedgerUnavailable},
		{"unavailable with its cause", fmt.Errorf("%w: %w", ledger.ErrUnavailable, plain), CodeLedgerUnavailable},
		{"a deadline", fmt.Errorf("get action x: %w", context.DeadlineExceeded), CodeLedgerUnavailable},
		{"stale", fmt.Errorf("update action x: %w", ledger.ErrStale), CodeActionInProgress},
		{"gone", fmt.Errorf("update action x: %w", ledger.ErrNotFound), CodeActionInProgress},
		{"a plain store error", plain, CodeInternal},
		{"a canceled context", fmt.Errorf("get action x: %w", context.Canceled), CodeInternal},
		{"ErrExists", ledger.ErrExists, CodeInternal},
		{"a bad transition", &ledger.TransitionError{From: ledger.Succeeded, To: ledger.Running}, CodeInternal},
	} {
		p := storeFailed(tc.err)
		if p.Code != tc.want || !errors.Is(p, tc.err) {
			t.Errorf("%s: %s (cause %v), want %s with the error as its cause", tc.name, p.Code, p.Cause, tc.want)
		}
		if p.Code == CodeLedgerUnavailable && (p.RetryAfter == 0 || p.Status() != 503) {
			t.Errorf("%s: %d, Retry-After %d", tc.name, p.Status(), p.RetryAfter)
		}
		if got := ProblemOf(tc.err); tc.want != CodeActionInProgress && got.Code != tc.want {
			t.Errorf("ProblemOf(%s): %s, want %s as storeFailed", tc.name, got.Code, tc.want)
		}
	}
}

// A caller that went away is its context's cancellation, and only that: a
// context.Canceled while the call's context is live is no caller's doing
// (a 500), and a canceled context does not turn another error into one.
func TestCallerGone(t *testing.T) {
	t.Parallel()
	live := context.Background()
	canceled, cancel := context.WithCancel(live)
	cancel()
	late, stop := context.WithDeadline(live, time.Unix(0, 0))
	defer stop()
	storeCanceled := storeFailed(fmt.Errorf("get action x: %w", context.Canceled))
	for _, tc := range []struct {
		name string
		ctx  context.Context
		err  error
		want bool
	}{
		{"a ledger call canceled with the caller", canceled, storeCanceled, true},
		{"a join the caller left", canceled, ErrCallerGone, true},
		{"canceled while the caller is there", live, storeCanceled, false},
		{"an outage while the caller left", canceled, ledgerUnavailable(ledger.ErrUnavailable), false},
		{"the caller's deadline", late, storeFailed(context.DeadlineExceeded), false},
		{"no error", canceled, nil, false},
	} {
		if got := CallerGone(tc.ctx, tc.err); got != tc.want {
			t.Errorf("%s: CallerGone %v, want %v", tc.name, got, tc.want)
		}
		err := callerGone(tc.ctx, tc.err)
		if errors.Is(err, ErrCallerGone) != tc.want || (tc.err != nil && !errors.Is(err, tc.err)) {
			t.Errorf("%s: callerGone = %v", tc.name, err)
		}
	}
}

// One code, one status: no problem answers a status other than its code's
// (the page /problems/{code} and docs/reference/problems.md give it).
func TestEveryProblemAnswersItsCodesStatus(t *testing.T) {
	t.Parallel()
	for c, info := range codes {
		p := Errorf(c, "x")
		if p.Status() != info.Status || p.Wire().Status != info.Status || p.Outcome() != info.Outcome {
			t.Errorf("%s: %d %s, its code says %d %s", c, p.Status(), p.Outcome(), info.Status, info.Outcome)
		}
	}
}
