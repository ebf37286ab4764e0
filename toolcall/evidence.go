package toolcall

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"

	"github.com/toolgate/toolgate/decisionlog"
	"github.com/toolgate/toolgate/ledger"
)

// actionEvidence fills what a call left out from its action: the policy
// version (a two-phase action declares it at PUT, its calls do not repeat
// it) and the correlation id, so that every decision-log line of the action
// answers "which rule fired" (docs/reference/files.md).
func actionEvidence(f *Facts, a *ledger.Action) {
	if f.PolicyVersion == "" {
		f.PolicyVersion = a.PolicyVersion
	}
	if f.CorrelationID == "" {
		f.CorrelationID = a.CorrelationID
	}
}

// noteProviderTransition records a provider transition (docs/reference/http-api.md) when the
// call for existing action a came through another provider name or route
// than the last one recorded: the history gains the entry (prior route, new
// route, the action's state, the body's provider.reason) and the call's facts
// carry it for the decision log. It runs before the call's evidence is
// appended (AddProviderCall), so "the last one recorded" is the previous
// call's. A failure to record it is logged, never the call's answer.
func (c *call) noteProviderTransition(ctx context.Context, a *ledger.Action) {
	pc := c.body.Provider
	if pc == nil || c.facts().ProviderTransition != nil {
		return
	}
	pt, err := c.s.cfg.Ledger.NoteProviderTransition(ctx, a, *pc, c.body.ProviderReason)
	if err != nil && !errors.Is(err, ledger.ErrStale) {
		c.s.log().Warn("record provider transition", append(actionAttrs(a), "error", err.Error())...)
	}
	c.facts().ProviderTransition = pt
}

// Annotate adds to a decision-log record what the facts hold beyond the
// fields the front end maps itself: the policy version, the provider's
// reason, a provider transition, the result_hash of every answered body and
// the downstream request an execution
// made (method, URL template, key header and key template: what replay
// needs to send the call again; templates, never expanded values, so no
// argument leaks through them).
func (f *Facts) Annotate(rec *decisionlog.Record) {
	rec.PolicyVersion = f.PolicyVersion
	if rec.Provider != nil {
		rec.Provider.Reason = f.ProviderReason
	}
	if pt := f.ProviderTransition; pt != nil {
		rec.ProviderTransition = &decisionlog.ProviderTransition{
			From:        decisionlog.ProviderRoute{Name: pt.From.Name, Route: pt.From.Route},
			To:          decisionlog.ProviderRoute{Name: pt.To.Name, Route: pt.To.Route},
			ActionState: string(pt.State),
			Reason:      pt.Reason,
		}
	}
	switch f.Outcome {
	case decisionlog.OutcomeExecuted, decisionlog.OutcomeReplayed, decisionlog.OutcomeJoined:
		// Every answered body is identified, also one that is empty or not
		// JSON (which the line does not keep): replay compares by it.
		if rec.ResultHash == "" {
			sum := sha256.Sum256(f.Result)
			rec.ResultHash = "sha256:" + hex.EncodeToString(sum[:])
		}
	}
	if b := f.Binding; b != nil && b.MCP == nil { // replay re-sends HTTP calls only
		d := b.WithDefaults()
		rec.Downstream = &decisionlog.Downstream{
			Method: d.Method, URL: withoutUserinfo(d.URL), IdempotencyHeader: d.IdempotencyHeader, DownstreamKey: d.DownstreamKey,
		}
	}
}

// withoutUserinfo drops credentials from a URL template
// (http://user:secret@host/…) before it is logged.
func withoutUserinfo(tmpl string) string {
	scheme, rest, ok := strings.Cut(tmpl, "://")
	if !ok {
		return tmpl
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	at := strings.LastIndex(rest[:end], "@")
	if at < 0 {
		return tmpl
	}
	return scheme + "://" + rest[at+1:]
}
