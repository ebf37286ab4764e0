package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/decisionlog"
	"go.opentelemetry.io/otel/trace"
)

// trail collects what one tool call did, for its decision log line and its
// metrics. The handlers fill it in as they decide; observe reads it once the
// answer is written.
type trail struct {
	start       time.Time
	toolID      string // set once the tool is known to exist
	version     string
	actionID    string
	key         string
	inputHash   string
	args        json.RawMessage
	correlation string
	provider    *decisionlog.Provider
	principal   string
	tenant      string

	outcome     decisionlog.Outcome // "" until a handler decides; else derived from the status
	problem     string              // the problem code answered, if any
	stateBefore string              // the action's ledger state when the call arrived
	stateAfter  string
	attempt     int
	result      []byte

	span trace.Span // the execute_tool span

	probeBefore, probeAfter       json.RawMessage
	probeBeforeErr, probeAfterErr string
}

type trailKey struct{}

func trailOf(r *http.Request) *trail {
	if t, ok := r.Context().Value(trailKey{}).(*trail); ok {
		return t
	}
	return &trail{span: noopSpan} // outside a call endpoint: collected and forgotten
}

// statusWriter remembers the status and problem code of an answer.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// observed wraps a call endpoint: it gives the handler a trail and, once the
// answer is written, counts the call and logs its decision.
func (s *Server) observed(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t := &trail{start: time.Now()}
		ctx, span := s.startCallSpan(r)
		t.span = span
		sw := &statusWriter{ResponseWriter: w}
		r = r.WithContext(context.WithValue(ctx, trailKey{}, t))
		next.ServeHTTP(sw, r)
		outcome := s.observe(r, t, sw.status, sw.Header().Get("Content-Type"))
		endCallSpan(span, t, string(outcome), sw.status)
	})
}

// outcomeFor derives an outcome from the answer's status when no handler set one.
func outcomeFor(status int) decisionlog.Outcome {
	switch {
	case status == http.StatusAccepted:
		return decisionlog.OutcomeAwaitingApproval
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return decisionlog.OutcomeDenied
	case status == http.StatusConflict:
		return decisionlog.OutcomeConflict
	case status == http.StatusBadGateway || status == http.StatusServiceUnavailable || status >= 500 && status != http.StatusGatewayTimeout:
		return decisionlog.OutcomeUnreachable
	case status == http.StatusGatewayTimeout:
		return decisionlog.OutcomeUnknown
	}
	return decisionlog.OutcomeInvalid
}

func (s *Server) observe(r *http.Request, t *trail, status int, contentType string) decisionlog.Outcome {
	outcome := t.outcome
	if outcome == "" {
		outcome = outcomeFor(status)
	}
	code := t.problem
	elapsed := time.Since(t.start)
	if m := s.metrics; m != nil {
		tool := t.toolID
		m.Calls.WithLabelValues(tool, string(outcome)).Inc()
		m.CallDuration.WithLabelValues(tool, string(outcome)).Observe(elapsed.Seconds())
		switch outcome {
		case decisionlog.OutcomeReplayed:
			m.Replays.WithLabelValues(tool).Inc()
		case decisionlog.OutcomeJoined:
			m.Joins.WithLabelValues(tool).Inc()
		}
		if status == http.StatusConflict {
			m.Conflicts.WithLabelValues(tool, code).Inc()
		}
	}
	if len(s.observers) > 0 {
		ev := CallEvent{Time: t.start, Tenant: t.tenant, ToolID: t.toolID, ActionID: t.actionID,
			Outcome: string(outcome), Status: status, Code: code, Duration: elapsed}
		for _, o := range s.observers {
			o(ev)
		}
	}
	if s.cfg.DecisionLog == nil {
		return outcome
	}
	rec := decisionlog.Record{
		Timestamp: t.start.UTC(), CorrelationID: t.correlation, Principal: t.principal, Tenant: t.tenant,
		ActionID: t.actionID, ToolID: t.toolID, ToolVersion: t.version, IdempotencyKey: t.key,
		InputHash: t.inputHash, Outcome: outcome, StatusCode: status, ErrorClass: code,
		ActionStateBefore: t.stateBefore, ActionStateAfter: t.stateAfter, Attempt: t.attempt,
		Provider: t.provider, StateBefore: t.probeBefore, StateAfter: t.probeAfter,
		StateBeforeError: t.probeBeforeErr, StateAfterError: t.probeAfterErr, Arguments: t.args,
	}
	if sc := t.span.SpanContext(); sc.IsValid() {
		rec.TraceID, rec.SpanID = sc.TraceID().String(), sc.SpanID().String()
	} else {
		rec.TraceID, rec.SpanID = parseTraceparent(r.Header.Get("traceparent"))
	}
	if len(t.result) > 0 && strings.Contains(contentType, "json") {
		rec.Result = t.result
	}
	rec.SetDuration(elapsed)
	s.cfg.DecisionLog.Log(rec, s.masker(t.toolID, t.version))
	return outcome
}

// parseTraceparent returns the trace and parent ids of a W3C traceparent
// header, or empty strings when it is not one.
func parseTraceparent(h string) (traceID, spanID string) {
	parts := strings.Split(strings.TrimSpace(h), "-")
	if len(parts) < 4 || len(parts[1]) != 32 || len(parts[2]) != 16 || !isHex(parts[1]) || !isHex(parts[2]) {
		return "", ""
	}
	return parts[1], parts[2]
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// buildMaskers makes one decision-log masker per tool version from the
// contract's x-sensitive pointers; a pointer the masker refuses is an error
// at start-up, not a leak at run time.
func buildMaskers(reg *contract.Registry) (map[string]*decisionlog.Masker, error) {
	out := map[string]*decisionlog.Masker{}
	var errs []error
	for _, t := range reg.Tools() {
		for _, v := range t.Versions {
			params, result := v.Sensitive()
			m, err := decisionlog.NewMasker(decisionlog.MaskerConfig{
				Arguments: decisionlog.MaskRules(params...),
				Result:    decisionlog.MaskRules(result...),
				State:     decisionlog.MaskRules(result...),
			})
			if err != nil {
				errs = append(errs, err)
				continue
			}
			out[t.ID+"@"+v.Version] = m
		}
	}
	// A call whose tool version is not known (a 404, a malformed body) is
	// logged with its payloads erased whole: nothing says what is sensitive.
	all, err := decisionlog.NewMasker(decisionlog.MaskerConfig{
		Arguments: decisionlog.EraseRules(""), Result: decisionlog.EraseRules(""), State: decisionlog.EraseRules(""),
	})
	if err != nil {
		errs = append(errs, err)
	}
	out[""] = all
	return out, errors.Join(errs...)
}

// masker returns the tool version's masker, or one that erases every payload.
func (s *Server) masker(tool, version string) *decisionlog.Masker {
	if m, ok := s.maskers[tool+"@"+version]; ok {
		return m
	}
	return s.maskers[""]
}

// noteCall copies what is known of a call into its trail.
func (t *trail) noteCall(c *call) {
	t.toolID, t.key, t.inputHash, t.args = c.tool.ID, c.key, c.digest, json.RawMessage(c.canon)
	t.correlation, t.principal, t.tenant = c.body.CorrelationID, c.p.Name, c.p.Tenant
	if c.version != nil {
		t.version = c.version.Version
	} else if d := c.tool.Default(); d != nil {
		t.version = d.Version
	}
	if c.provider != nil {
		t.provider = &decisionlog.Provider{Name: c.provider.Name, Route: c.provider.Route, CallID: c.provider.CallID}
	}
}

var noopSpan = trace.SpanFromContext(context.Background()) // a span that records nothing
