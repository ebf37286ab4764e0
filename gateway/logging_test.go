package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/gateway/gatewaytest"
	"github.com/toolgate/toolgate/internal/testrig"
	"github.com/toolgate/toolgate/invoke"
	"github.com/toolgate/toolgate/ledger"
)

// quotingInvoker is a downstream invoker whose errors quote the request it
// was given, arguments and all, as a careless invoker (or a library error
// below it) might: the gateway's log must not repeat them.
type quotingInvoker struct{ *invoke.Client }

func (q quotingInvoker) Call(ctx context.Context, r invoke.Request) invoke.Result {
	return invoke.Result{Outcome: ledger.Lost, Written: true,
		Err: errors.New("connection reset after sending " + string(r.Body))}
}

// A call's log line carries the call's attributes and none of its argument
// values, even when the error it reports quotes them.
func TestCallLogLineHoldsNoArgumentValue(t *testing.T) {
	t.Parallel()
	var logs testrig.Buffer
	g := newRig(t, withKeys, func(c *gatewaytest.Config) {
		c.Invoker = quotingInvoker{&invoke.Client{}}
		c.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	})
	args := `{"order_id":"ord_QuotedArg77","amount_minor":98765,"currency":"EUR","reason":"customer_request","customer_email":"quoted@example.com"}`
	g.refund("log-quoted-0001", args, append(bearer("key-acme-agent"),
		"traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")...).wantProblem(t, 504, "outcome_unknown")

	var line map[string]any
	sc := bufio.NewScanner(strings.NewReader(logs.String()))
	for sc.Scan() {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("not a JSON line: %s", sc.Bytes())
		}
		if rec["msg"] == "outcome_unknown" {
			line = rec
		}
	}
	if line == nil {
		t.Fatalf("no outcome_unknown line in the log:\n%s", logs.String())
	}
	for k, want := range map[string]string{"level": "WARN", "action_id": "log-quoted-0001", "tool_id": "payments.issue_refund",
		"tenant": "acme", "trace_id": "0af7651916cd43dd8448eb211c80319c", "code": "outcome_unknown"} {
		if line[k] != want {
			t.Errorf("%s = %v, want %q", k, line[k], want)
		}
	}
	if e, _ := line["error"].(string); !strings.Contains(e, "connection reset after sending") {
		t.Errorf("the line does not say what happened: %v", line["error"])
	}
	for _, v := range []string{"ord_QuotedArg77", "98765", "quoted@example.com", "customer_request", "key-acme-agent"} {
		if strings.Contains(logs.String(), v) {
			t.Errorf("the log holds %q:\n%s", v, logs.String())
		}
	}
	t.Logf("the call's line: %v", line)
}
