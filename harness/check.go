package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// ledgerAction is the part of GET /v1/actions records the checker reads.
type ledgerAction struct {
	ID            string `json:"action_id"`
	State         string `json:"state"`
	NeedsOperator bool   `json:"needs_operator"`
	ArgsDigest    string `json:"args_digest"`
	Attempts      int    `json:"attempts"`
	Result        *struct {
		StatusCode int             `json:"status_code"`
		Body       json.RawMessage `json:"body"`
	} `json:"result"`
	History []struct {
		From string    `json:"from"`
		To   string    `json:"to"`
		At   time.Time `json:"at"`
	} `json:"history"`
}

// effect is one record of GET /_sandbox/effects.
type effect struct {
	RefundID       string `json:"refund_id"`
	IdempotencyKey string `json:"idempotency_key"`
	OrderID        string `json:"order_id"`
	AmountMinor    int    `json:"amount_minor"`
}

func getJSON(ctx context.Context, u string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// listLedger reads every action of the default tenant through a gateway.
func listLedger(ctx context.Context, gw string) (map[string]*ledgerAction, error) {
	out := map[string]*ledgerAction{}
	cursor := ""
	for {
		var page struct {
			Actions    []*ledgerAction `json:"actions"`
			NextCursor string          `json:"next_cursor"`
		}
		u := gw + "/v1/actions?limit=500"
		if cursor != "" {
			u += "&cursor=" + url.QueryEscape(cursor)
		}
		if err := getJSON(ctx, u, &page); err != nil {
			return nil, err
		}
		for _, a := range page.Actions {
			out[a.ID] = a
		}
		if page.NextCursor == "" {
			return out, nil
		}
		cursor = page.NextCursor
	}
}

// drain waits until no action is running and every unknown action is
// settled or flagged needs_operator, or until cfg.DrainTimeout, and returns
// the ledger as last read.
func drain(ctx context.Context, cfg *Config, gw string) (map[string]*ledgerAction, error) {
	deadline := time.Now().Add(cfg.DrainTimeout)
	var lastErr error
	for {
		led, err := listLedger(ctx, gw)
		if err == nil {
			open := 0
			for _, a := range led {
				if a.State == "running" || (a.State == "unknown" && !a.NeedsOperator) {
					open++
				}
			}
			if open == 0 {
				return led, nil
			}
			if time.Now().After(deadline) {
				cfg.logf("drain timed out with %d action(s) still running or unknown", open)
				return led, nil
			}
		} else {
			lastErr = err
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("read the ledger: %w", lastErr)
			}
		}
		sleep(ctx, 250*time.Millisecond)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
}

func fetchEffects(ctx context.Context, sbURL string) ([]effect, error) {
	var out struct {
		Count   int      `json:"count"`
		Effects []effect `json:"effects"`
	}
	if err := getJSON(ctx, sbURL+"/_sandbox/effects", &out); err != nil {
		return nil, err
	}
	return out.Effects, nil
}

// downstreamKey is the binding's default downstream key, "{tenant}:{action_id}";
// the harness runs without auth, so the tenant is "default".
func downstreamKey(key string) string { return "default:" + key }

// check compares what the clients were told, what the ledger holds and what
// the downstream did, and records every violation in rep.
func check(rep *Report, plans []*plan, led map[string]*ledgerAction, effects []effect) {
	rep.acked = map[string]bool{}
	defer rep.countLost()
	byKey := map[string][]effect{}
	for _, e := range effects {
		byKey[e.IdempotencyKey] = append(byKey[e.IdempotencyKey], e)
	}
	rep.Effects = len(effects)
	known := map[string]bool{}
	for _, p := range plans {
		rep.Actions++
		dk := downstreamKey(p.key)
		known[dk] = true
		effs := byKey[dk]
		v := func(kind, format string, args ...any) {
			rep.Violations = append(rep.Violations, Violation{Key: p.key, Kind: kind, Detail: fmt.Sprintf(format, args...)})
		}
		if len(effs) > 1 {
			v("duplicate effect", "%d downstream effects (%s, %s, …)", len(effs), effs[0].RefundID, effs[1].RefundID)
		}
		for _, e := range effs {
			if e.OrderID != p.args.OrderID || e.AmountMinor != p.args.AmountMinor {
				v("wrong effect", "effect %s refunds %d on %s; the action's arguments say %d on %s", e.RefundID, e.AmountMinor, e.OrderID, p.args.AmountMinor, p.args.OrderID)
			}
		}
		acked := false
		for _, f := range p.flows {
			acked = acked || f.known
			if f.acked {
				rep.acked[p.key] = true
			}
			switch f.kind {
			case duplicate:
				rep.Duplicates++
			case conflicting:
				rep.Conflicts++
			}
		}
		if p.args.Currency != "EUR" {
			rep.RejectsPlanned++
		}
		a := led[p.key]
		if a == nil {
			if acked {
				v("missing from ledger", "the gateway answered for this key but the ledger has no action")
			}
			if len(effs) > 0 {
				v("effect without action", "%d effect(s) but no ledger action", len(effs))
			}
			continue
		}
		wentUnknown := false
		var since time.Time
		for _, h := range a.History {
			switch {
			case h.To == "unknown" && h.From != "unknown":
				wentUnknown, since = true, h.At
			case h.From == "unknown" && h.To != "unknown" && !since.IsZero():
				if d := h.At.Sub(since); d > rep.LongestUnknown {
					rep.LongestUnknown, rep.LongestUnknownKey = d, p.key
				}
				since = time.Time{}
			}
		}
		if a.ArgsDigest != p.args.digest() {
			v("arguments changed", "ledger digest %s, original arguments %s", a.ArgsDigest, p.args.digest())
		}
		switch a.State {
		case "succeeded":
			rep.Succeeded++
			if len(effs) != 1 {
				v("succeeded without one effect", "ledger succeeded, %d effects", len(effs))
			}
		case "rejected":
			rep.Rejected++
			if len(effs) != 0 {
				v("rejected with an effect", "ledger rejected, %d effects", len(effs))
			}
		case "pending":
			rep.Pending++
			if len(effs) != 0 {
				v("pending with an effect", "ledger pending (attempts %d), %d effects: a retry would refund again", a.Attempts, len(effs))
			}
		case "running":
			v("still running", "running after the drain")
		case "unknown":
			if a.NeedsOperator {
				rep.NeedsOperator++
			} else {
				v("unknown not reconciled", "unknown after the drain, not flagged needs_operator")
			}
		default:
			v("unexpected state", "state %s", a.State)
		}
		if wentUnknown && a.State != "unknown" {
			rep.UnknownsReconciled++
		}
		for _, f := range p.flows {
			checkFlow(rep, f, a, effs, v)
		}
	}
	for k, effs := range byKey {
		if !known[k] {
			rep.Violations = append(rep.Violations, Violation{Key: k, Kind: "effect without action", Detail: fmt.Sprintf("%d effect(s) under a key no client used", len(effs))})
		}
	}
}

func checkFlow(rep *Report, f *flow, a *ledgerAction, effs []effect, v func(kind, format string, args ...any)) {
	if !f.finished {
		rep.Unfinished++
		v("no final answer", "the %s got no final answer before the load timeout (saw %v)", f.kind, f.answers)
		return
	}
	fa := f.final
	if f.kind == conflicting {
		if fa.code != "idempotency_key_reused" {
			v("conflict not refused", "a reuse with other arguments got %s, want 409 idempotency_key_reused", fa)
		}
		return
	}
	switch {
	case fa.terminal() && fa.state == "succeeded":
		if a.State != "succeeded" {
			v("ack differs from ledger", "the %s was told succeeded; the ledger says %s", f.kind, a.State)
		} else {
			checkResult(f, a, v)
		}
		if len(effs) == 1 && fa.refundID != effs[0].RefundID {
			v("ack differs from effect", "the %s was told refund %q; the downstream applied %s", f.kind, fa.refundID, effs[0].RefundID)
		}
	case fa.terminal() && fa.state == "rejected":
		if a.State != "rejected" {
			v("ack differs from ledger", "the %s was told rejected; the ledger says %s", f.kind, a.State)
		} else {
			checkResult(f, a, v)
		}
	case fa.code == "attempts_exhausted":
		rep.Exhausted++
	default:
		v("unexpected answer", "the %s ended with %s", f.kind, fa)
	}
}

// checkResult compares the result a client was given for a terminal action
// with the one the ledger holds: the same status and the same body.
func checkResult(f *flow, a *ledgerAction, v func(kind, format string, args ...any)) {
	fa := f.final
	if a.Result == nil {
		v("result differs from ack", "the %s was told %d; the ledger holds no result", f.kind, fa.status)
		return
	}
	if a.Result.StatusCode != fa.status || !sameBody(fa.body, a.Result.Body) {
		v("result differs from ack", "the %s was told %d %s; the ledger holds %d %s", f.kind, fa.status, clip(fa.body), a.Result.StatusCode, clip(a.Result.Body))
	}
}

// sameBody compares a body as a client got it with the ledger's rendering
// of the stored body: JSON (compacted) as JSON, other text as a string.
func sameBody(got []byte, stored json.RawMessage) bool {
	if json.Valid(got) {
		var a, b bytes.Buffer
		return json.Compact(&a, got) == nil && json.Compact(&b, stored) == nil && bytes.Equal(a.Bytes(), b.Bytes())
	}
	var str string
	if len(stored) == 0 {
		return len(got) == 0
	}
	return json.Unmarshal(stored, &str) == nil && str == string(got)
}

func clip(b []byte) string {
	if len(b) > 80 {
		return string(b[:80]) + "…"
	}
	return string(b)
}
