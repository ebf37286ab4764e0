package harness

import (
	"fmt"
	"strings"
	"time"
)

// Violation is one broken invariant.
type Violation struct {
	Key    string // the action id (idempotency key), or the downstream key
	Kind   string
	Detail string
}

func (v Violation) String() string { return fmt.Sprintf("%s: %s: %s", v.Key, v.Kind, v.Detail) }

// Report is the outcome of a run.
type Report struct {
	Store    string // sqlite or postgres
	Replicas int

	Actions, Duplicates, Conflicts, RejectsPlanned int
	Kills, Partitions, DBRestarts                  int
	ResetsBefore, ResetsAfter, LateDeliveries      int64
	NotForwarded                                   int64 // answered 503 (not started) by the proxy
	Blackholed                                     int64 // requests swallowed by partitions
	Requests, DownstreamRequests                   int64 // client requests; POST /refunds reaching the sandbox

	Succeeded, Rejected, Pending, NeedsOperator int // final ledger states
	UnknownsReconciled                          int // actions that were unknown at some point and are settled
	LongestUnknown                              time.Duration
	LongestUnknownKey                           string
	Exhausted                                   int // flows that ended with attempts_exhausted
	Unfinished                                  int // flows without a final answer
	Effects                                     int

	// Acknowledged counts the actions some client got a 2xx or 4xx answer
	// carrying an action state for; LostAcked those of them the ledger
	// does not hold as acknowledged at the end (missing, in another state,
	// or with another result): the recovery point, 0 when nothing is lost.
	Acknowledged, LostAcked int
	DuplicateEffects        int // downstream keys with more than one effect

	HA        string     // the PostgreSQL topology failed over, e.g. "primary + synchronous standby"
	Failovers []Failover // in order

	Violations []Violation
	LoadTime   time.Duration
	Duration   time.Duration

	acked map[string]bool // keys acknowledged, set by check
}

// OK reports a run without violations.
func (r *Report) OK() bool { return len(r.Violations) == 0 }

// lostKinds are the violations that mean an acknowledged action was lost.
var lostKinds = map[string]bool{"missing from ledger": true, "ack differs from ledger": true, "result differs from ack": true}

// countLost sets Acknowledged, LostAcked and DuplicateEffects from the
// violations.
func (r *Report) countLost() {
	r.Acknowledged = len(r.acked)
	lost, dups := map[string]bool{}, map[string]bool{}
	for _, v := range r.Violations {
		if lostKinds[v.Kind] && r.acked[v.Key] {
			lost[v.Key] = true
		}
		if v.Kind == "duplicate effect" {
			dups[v.Key] = true
		}
	}
	r.LostAcked, r.DuplicateEffects = len(lost), len(dups)
}

// Table is the summary as a Markdown table, followed by up to max
// violations (max <= 0: all of them).
func (r *Report) Table(max int) string {
	var b strings.Builder
	row := func(k string, v any) { fmt.Fprintf(&b, "| %s | %v |\n", k, v) }
	b.WriteString("| metric | value |\n| --- | --- |\n")
	row("ledger", fmt.Sprintf("%s, %d replica(s)", r.Store, r.Replicas))
	row("actions", r.Actions)
	row("duplicates (same key, same arguments)", r.Duplicates)
	row("conflicting reuses (same key, other arguments)", r.Conflicts)
	row("rejections planned (currency mismatch)", r.RejectsPlanned)
	row("client requests", r.Requests)
	row("replica kills (SIGKILL + restart)", r.Kills)
	row("database restarts", r.DBRestarts)
	row("partitions (requests blackholed)", fmt.Sprintf("%d (%d)", r.Partitions, r.Blackholed))
	row("resets before forwarding / after", fmt.Sprintf("%d / %d", r.ResetsBefore, r.ResetsAfter))
	row("late deliveries", r.LateDeliveries)
	row("503 not started (not forwarded)", r.NotForwarded)
	row("downstream requests (POST /refunds)", r.DownstreamRequests)
	row("ledger: succeeded / rejected / pending / needs_operator", fmt.Sprintf("%d / %d / %d / %d", r.Succeeded, r.Rejected, r.Pending, r.NeedsOperator))
	row("unknowns reconciled", r.UnknownsReconciled)
	if r.LongestUnknownKey != "" {
		row("longest unknown → settled", fmt.Sprintf("%s (%s)", r.LongestUnknown.Round(10*time.Millisecond), r.LongestUnknownKey))
	}
	row("attempts exhausted", r.Exhausted)
	r.failoverRows(row)
	row("acknowledged actions (2xx/4xx with an action state)", r.Acknowledged)
	row("acknowledged actions lost", r.LostAcked)
	row("duplicate downstream effects", r.DuplicateEffects)
	row("effects", r.Effects)
	row("violations", len(r.Violations))
	row("load / total time", fmt.Sprintf("%s / %s", r.LoadTime.Round(100*time.Millisecond), r.Duration.Round(100*time.Millisecond)))
	for i, v := range r.Violations {
		if max > 0 && i == max {
			fmt.Fprintf(&b, "\n… and %d more violations\n", len(r.Violations)-max)
			break
		}
		if i == 0 {
			b.WriteString("\nViolations:\n")
		}
		fmt.Fprintf(&b, "- %s\n", v)
	}
	return b.String()
}
