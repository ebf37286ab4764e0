package replay

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/toolgate/toolgate/invoke"
	"github.com/toolgate/toolgate/ledger"
)

// Filter selects the records to replay.
type Filter struct {
	ToolID string    // "" for every tool
	Since  time.Time // records received (log) or created (ledger) at or after; zero for all
	// Limit stops after this many executed calls (those judged: deterministic,
	// differs or not replayable); 0 for no limit.
	Limit int
}

func (f Filter) keeps(tool string, at time.Time) bool {
	return (f.ToolID == "" || tool == f.ToolID) && (f.Since.IsZero() || !at.Before(f.Since))
}

// MaxLineBytes bounds one decision-log line FromLog reads.
const MaxLineBytes = 16 << 20

// logRecordVersion is the newest decision-log record_version FromLog reads.
const logRecordVersion = 1

// logLine is the part of a decision-log record (docs/decision-log.md) replay reads.
type logLine struct {
	RecordVersion  int             `json:"record_version"`
	Timestamp      time.Time       `json:"timestamp"`
	Tenant         string          `json:"tenant"`
	ActionID       string          `json:"action_id"`
	ToolID         string          `json:"tool_id"`
	ToolVersion    string          `json:"tool_version"`
	IdempotencyKey string          `json:"idempotency_key"`
	InputHash      string          `json:"input_hash"`
	Outcome        string          `json:"outcome"`
	StatusCode     int             `json:"status_code"`
	ErrorClass     string          `json:"error_class"`
	Arguments      json.RawMessage `json:"arguments"`
	Result         json.RawMessage `json:"result"`
	ResultHash     string          `json:"result_hash"`
	Erased         []string        `json:"erased"`
	Masked         []string        `json:"masked"`
	Downstream     *struct {
		Method            string `json:"method"`
		URL               string `json:"url"`
		IdempotencyHeader string `json:"idempotency_header"`
		DownstreamKey     string `json:"downstream_key"`
	} `json:"downstream"`
}

// Why a decision-log line is skipped, by outcome (docs/decision-log.md).
var skipReasons = map[string]string{
	"replayed":          "answered from the stored result of an executed call",
	"joined":            "a duplicate that waited for an executed call",
	"conflict":          "a conflict: nothing was sent",
	"invalid":           "an invalid call: refused before the ledger",
	"denied":            "denied: nothing was sent",
	"awaiting_approval": "parked for approval (its execution is a line of its own)",
	"unreachable":       "never reached the downstream",
	"client_gone":       "the caller went away before the call was answered: nothing was sent",
}

// FromLog reads decision-log lines (JSON Lines, docs/decision-log.md) in
// order and returns one Call per line that f keeps: executed calls to replay,
// and every other line judged already (skipped, or not replayable with the
// reason: arguments masked, erased or not logged, no recorded response). A
// line that is not a decision-log record is not replayable, never dropped
// silently. An action is judged once, on its executed line.
func FromLog(r io.Reader, f Filter) ([]Call, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxLineBytes)
	type parsed struct {
		n   int
		l   logLine
		err error
	}
	var lines []parsed
	n := 0
	for sc.Scan() {
		n++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		p := parsed{n: n}
		if err := json.Unmarshal(text, &p.l); err != nil {
			p.err = err
		} else if p.l.RecordVersion > logRecordVersion {
			p.err = fmt.Errorf("record_version %d is newer than this toolgate reads (%d)", p.l.RecordVersion, logRecordVersion)
		} else if p.l.Outcome == "" || (p.l.ToolID == "" && (p.l.Outcome == "executed" || p.l.Outcome == "unknown")) {
			// A refused call (an unknown tool, a key that may not call it)
			// may have no tool_id; anything that reached the ledger has one.
			p.err = fmt.Errorf("no tool_id or outcome")
		}
		lines = append(lines, p)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read decision log: line %d: %w", n+1, err)
	}
	// The line each action is judged on: its first executed line, else its
	// first unknown one.
	judged := map[string]int{} // action -> index in lines
	for i, p := range lines {
		if p.err != nil || p.l.ActionID == "" {
			continue
		}
		k := p.l.Tenant + "\x00" + p.l.ActionID
		prev, seen := judged[k]
		switch {
		case p.l.Outcome == "executed" && (!seen || lines[prev].l.Outcome != "executed"):
			judged[k] = i
		case p.l.Outcome == "unknown" && !seen:
			judged[k] = i
		}
	}
	var out []Call
	count := 0
	for i, p := range lines {
		if f.Limit > 0 && count >= f.Limit {
			break
		}
		src := fmt.Sprintf("line %d", p.n)
		if p.err != nil {
			out = append(out, Call{Source: src, Verdict: NotReplayable, Reason: "not a decision-log record: " + p.err.Error()})
			count++
			continue
		}
		l := p.l
		if !f.keeps(l.ToolID, l.Timestamp) {
			continue
		}
		c := Call{Source: src, At: l.Timestamp, Tenant: l.Tenant, ActionID: l.ActionID, ToolID: l.ToolID, Version: l.ToolVersion,
			Arguments: l.Arguments, InputHash: l.InputHash, Status: l.StatusCode}
		if l.ActionID == "" && l.Outcome == "executed" {
			c.Verdict, c.Reason = Skipped, "a read-only call: its answer depends on the state it read"
			out = append(out, c)
			continue
		}
		if l.Outcome != "executed" && l.Outcome != "unknown" {
			c.Verdict, c.Reason = Skipped, skipReasons[l.Outcome]
			if c.Reason == "" {
				c.Reason = "outcome " + l.Outcome + ": not an execution"
			}
			out = append(out, c)
			continue
		}
		if at := judged[l.Tenant+"\x00"+l.ActionID]; at != i {
			c.Verdict, c.Reason, c.Related = Skipped, "the action is judged on another line", fmt.Sprintf("line %d", lines[at].n)
			if lines[at].l.Outcome == "executed" && l.Outcome == "unknown" {
				c.Reason = "an earlier attempt of an action executed later"
			}
			out = append(out, c)
			continue
		}
		count++
		if l.Outcome == "unknown" {
			c.Verdict, c.Reason = NotReplayable, "no recorded response: the call's outcome was unknown (the answer was lost)"
			out = append(out, c)
			continue
		}
		judgeLogLine(&c, l)
		out = append(out, c)
	}
	return out, nil
}

// judgeLogLine fills what an executed line gives a replay, or marks it not
// replayable with the reason.
func judgeLogLine(c *Call, l logLine) {
	var argMasked []string
	for _, ptrs := range [][]string{l.Erased, l.Masked} {
		for _, p := range ptrs {
			switch {
			case p == "/arguments":
				argMasked = append(argMasked, "/")
			case strings.HasPrefix(p, "/arguments/"):
				argMasked = append(argMasked, strings.TrimPrefix(p, "/arguments"))
			case p == "/result" || strings.HasPrefix(p, "/result/"):
				c.BodyMasked = append(c.BodyMasked, strings.TrimPrefix(p, "/result"))
			}
		}
	}
	sort.Strings(argMasked)
	sort.Strings(c.BodyMasked)
	switch {
	case len(argMasked) > 0:
		how := "masked"
		if contains(l.Erased, "/arguments"+argMasked[0]) || contains(l.Erased, "/arguments") {
			how = "erased"
		}
		c.Verdict, c.Field = NotReplayable, argMasked[0]
		c.Reason = fmt.Sprintf("argument %s was %s in the log (decision_log.arguments: masked): log with arguments: full (sandboxes only), or replay --from-ledger", argMasked[0], how)
		if len(argMasked) > 1 {
			c.Reason += fmt.Sprintf("; %d more: %s", len(argMasked)-1, strings.Join(argMasked[1:], ", "))
		}
		return
	case len(bytes.TrimSpace(l.Arguments)) == 0 || string(bytes.TrimSpace(l.Arguments)) == "null":
		c.Verdict, c.Reason = NotReplayable, "the log has no arguments (decision_log.arguments: digest): log with arguments: full (sandboxes only), or replay --from-ledger"
		return
	case l.StatusCode == 0:
		c.Verdict, c.Reason = NotReplayable, "no recorded response: the line has no status"
		return
	case l.ResultHash == "" && len(l.Result) == 0:
		c.Verdict, c.Reason = NotReplayable, "no recorded response body (neither result nor result_hash): replay --from-ledger, which keeps every body"
		return
	}
	if len(l.Result) > 0 && string(l.Result) != "null" {
		c.Body = l.Result
	}
	c.BodyHash = l.ResultHash
	if d := l.Downstream; d != nil && d.URL != "" {
		c.Binding = &invoke.Binding{URL: d.URL, Method: d.Method, IdempotencyHeader: d.IdempotencyHeader, DownstreamKey: d.DownstreamKey}
	}
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// Lister is the part of a ledger.Store FromLedger needs.
type Lister = ledger.Lister

// FromLedger lists a tenant's actions that f keeps (created since f.Since)
// and returns one Call per action, in the order their last request was sent:
// actions whose stored result is the downstream's answer to that request are
// replayed; the others are judged already (never sent, still running,
// unknown, settled by a lookup or an operator, purged after retention). The
// ledger keeps every body byte for byte, but no binding: Run needs
// Config.Bindings (or a gateway target) for these calls.
func FromLedger(ctx context.Context, store Lister, tenant string, f Filter) ([]Call, error) {
	acts, err := ledger.ListAll(ctx, store, ledger.Filter{Tenant: tenant, ToolID: f.ToolID})
	if err != nil {
		return nil, err
	}
	sentAt := func(a *ledger.Action) time.Time {
		if !a.LastSentAt.IsZero() {
			return a.LastSentAt
		}
		return a.CreatedAt
	}
	sort.SliceStable(acts, func(i, j int) bool {
		if ti, tj := sentAt(acts[i]), sentAt(acts[j]); !ti.Equal(tj) {
			return ti.Before(tj)
		}
		return acts[i].ID < acts[j].ID
	})
	var out []Call
	count := 0
	for _, a := range acts {
		if !f.keeps(a.ToolID, a.CreatedAt) {
			continue
		}
		if f.Limit > 0 && count >= f.Limit {
			break
		}
		c := Call{Source: "ledger " + a.Tenant + "/" + a.ID, At: sentAt(a), Tenant: a.Tenant, ActionID: a.ID,
			ToolID: a.ToolID, Version: a.Version, Arguments: a.Arguments, InputHash: a.ArgsDigest}
		judgeAction(&c, a)
		if c.Verdict != Skipped {
			count++
		}
		out = append(out, c)
	}
	return out, nil
}

// judgeAction decides whether an action's stored result is the downstream's
// answer to its last request.
func judgeAction(c *Call, a *ledger.Action) {
	switch a.State {
	case ledger.Prepared, ledger.Pending, ledger.AwaitingApproval:
		c.Verdict, c.Reason = Skipped, "never executed (state "+string(a.State)+")"
		return
	case ledger.Running:
		c.Verdict, c.Reason = Skipped, "still running"
		return
	case ledger.Unknown:
		c.Verdict, c.Reason = NotReplayable, "no recorded response: the outcome is unknown until the action is reconciled"
		return
	}
	var last *ledger.Transition
	for i := len(a.History) - 1; i >= 0; i-- {
		if h := &a.History[i]; h.StateChange() && h.To == a.State {
			last = h
			break
		}
	}
	switch {
	case last == nil:
		c.Verdict, c.Reason = NotReplayable, "the history does not say how the action ended"
	case last.From == ledger.AwaitingApproval:
		c.Verdict, c.Reason = Skipped, "denied by an operator: nothing was sent"
	case last.From == ledger.Running && last.By == string(ledger.ByGateway),
		last.From == ledger.Unknown && strings.HasPrefix(last.Reason, "late answer"):
		// The downstream's answer to the request (late or not).
	case strings.HasPrefix(last.By, string(ledger.ByOperator)):
		c.Verdict, c.Reason = NotReplayable, "resolved by an operator: the downstream's answer to the call was never recorded"
	default:
		c.Verdict, c.Reason = NotReplayable, "settled by the downstream lookup: the answer to the call itself was lost"
	}
	if c.Verdict != "" {
		return
	}
	switch {
	case a.Arguments == nil:
		c.Verdict, c.Reason = NotReplayable, "purged after the retention: its arguments and body are gone"
	case a.Result == nil:
		c.Verdict, c.Reason = NotReplayable, "no recorded response"
	default:
		c.Status, c.Body, c.BodyExact, c.ContentType = a.Result.StatusCode, a.Result.Body, true, a.Result.ContentType
		if c.Body == nil {
			c.Body = []byte{}
		}
		c.BodyHash = digest(c.Body)
	}
}
