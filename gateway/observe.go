package gateway

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/decisionlog"
	"github.com/toolgate/toolgate/internal/tracectx"
	"github.com/toolgate/toolgate/toolcall"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// callObs is one call being observed, from its arrival to its answer: when
// it began, its execute_tool span (in ctx) and the caller's traceparent.
type callObs struct {
	start       time.Time
	ctx         context.Context
	span        trace.Span
	traceparent string
}

// beginCall starts observing a call whose transport headers are h.
func (s *Server) beginCall(ctx context.Context, h http.Header) callObs {
	o := callObs{start: time.Now(), traceparent: h.Get("traceparent")}
	o.ctx, o.span = s.calls.StartCall(ctx, propagation.HeaderCarrier(h))
	return o
}

// endCall counts the answered call, tells the observers, writes its
// decision-log line and ends its span: one of each per call, whichever front
// end it came through.
func (s *Server) endCall(o *callObs, f *toolcall.Facts, rep *reply) {
	outcome, status, code := rep.outcome, rep.status, rep.code
	elapsed := time.Since(o.start)
	defer toolcall.EndCall(o.span, f, outcome, status, code)
	if rep.cause != nil {
		s.logCall(o, f, code, rep.cause)
	}
	if m := s.metrics; m != nil {
		tool := f.ToolID
		m.Calls.WithLabelValues(tool, string(outcome)).Inc()
		m.CallDuration.WithLabelValues(tool, string(outcome)).Observe(elapsed.Seconds())
		if f.Downstream > 0 {
			m.DownstreamDuration.WithLabelValues(tool).Observe(f.Downstream.Seconds())
		}
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
		ev := CallEvent{Time: o.start, Tenant: f.Tenant, ToolID: f.ToolID, ActionID: f.ActionID,
			Outcome: outcome, Status: status, Code: code, Duration: elapsed}
		for _, ob := range s.observers {
			ob(ev)
		}
	}
	if s.cfg.DecisionLog == nil {
		return
	}
	rec := decisionlog.Record{
		Timestamp: o.start.UTC(), CorrelationID: f.CorrelationID, Principal: f.Principal, Tenant: f.Tenant,
		ActionID: f.ActionID, ToolID: f.ToolID, ToolVersion: f.Version, IdempotencyKey: f.ActionID,
		InputHash: f.InputHash, Outcome: outcome, StatusCode: status, ErrorClass: code,
		ActionStateBefore: string(f.StateBefore), ActionStateAfter: string(f.StateAfter), Attempt: f.Attempt,
		StateBefore: f.ProbeBefore, StateAfter: f.ProbeAfter,
		StateBeforeError: f.ProbeBeforeErr, StateAfterError: f.ProbeAfterErr, Arguments: f.Arguments,
	}
	if pc := f.Provider; pc != nil {
		rec.Provider = &decisionlog.Provider{Name: pc.Name, Route: pc.Route, CallID: pc.CallID}
	}
	if sc := o.span.SpanContext(); sc.IsValid() {
		rec.TraceID, rec.SpanID = sc.TraceID().String(), sc.SpanID().String()
	} else {
		rec.TraceID, rec.SpanID = parseTraceparent(o.traceparent)
	}
	if len(f.Result) > 0 && strings.Contains(rep.contentType, "json") {
		rec.Result = f.Result
	}
	if rec.ToolID == "" {
		rec.ToolID = f.SentToolID
	}
	f.Annotate(&rec)
	rec.SetDuration(elapsed)
	s.cfg.DecisionLog.Log(rec, s.masks().Call(f.ToolID, f.ArgsVersion, f.Version))
}

// parseTraceparent returns the trace and parent ids of a W3C traceparent
// header, or empty strings when it is not one: the one reader of the header
// (internal/tracectx) decides, as for the trace the gateway continues.
func parseTraceparent(h string) (traceID, spanID string) {
	p, ok := tracectx.Parse(strings.TrimSpace(h))
	if !ok {
		return "", ""
	}
	return p.TraceID, p.ParentID
}

// callProblem is a refused call's problem as every front end answers it, and
// its decision-log outcome. Its texts (detail, each error's detail, the log
// line of a 5xx cause) go through the call's masker: a sensitive argument
// value that an error quotes (a rule that could not be evaluated, a cause
// from below) is replaced there, as in the decision log.
func (s *Server) callProblem(where string, f *toolcall.Facts, err error) (api.Problem, decisionlog.Outcome, *causeLog) {
	m := s.masks().Call(f.ToolID, f.ArgsVersion, f.Version)
	scrub := m.Scrubber(f.Arguments, nil)
	p := toolcall.ProblemOf(err)
	var cl *causeLog
	if level, text, ok := logCause(p); ok {
		// The log gets no argument value at all, sensitive or not.
		cl = &causeLog{level: level, where: where, err: everyArgument.Scrubber(f.Arguments, nil)(scrub(text))}
	}
	wire := p.Wire()
	wire.Detail = scrub(wire.Detail)
	if len(wire.Errors) > 0 {
		errs := make([]api.FieldError, len(wire.Errors))
		for i, e := range wire.Errors {
			errs[i] = api.FieldError{Pointer: e.Pointer, Code: e.Code, Detail: scrub(e.Detail)}
			// A propertyNames error's pointer ends in the member name the
			// agent sent; under a sensitive object that name is the secret.
			if parent, _, ok := cutLastSegment(e.Pointer); ok && e.Code == "propertyNames" && m.CoversArgument(parent) {
				errs[i].Pointer = parent + "/" + decisionlog.MaskToken
			}
		}
		wire.Errors = errs
	}
	return wire, p.Outcome(), cl
}

// causeLog is the log line of a call's problem (logCause), written by endCall.
type causeLog struct {
	level      slog.Level
	where, err string
	msg        string // the line's message; "" for the problem's code
}

// everyArgument masks every value of a call's arguments: its Scrubber takes
// them out of a log line.
var everyArgument = func() *decisionlog.Masker {
	m, err := decisionlog.NewMasker(decisionlog.MaskerConfig{Arguments: decisionlog.MaskRules("")})
	if err != nil {
		panic(err) // the root pointer always compiles
	}
	return m
}()

// logCall writes a call's log line: its message, then the call's
// attributes where they apply.
func (s *Server) logCall(o *callObs, f *toolcall.Facts, code string, cl *causeLog) {
	attrs := make([]any, 0, 14)
	for _, kv := range [][2]string{{"action_id", f.ActionID}, {"tool_id", f.ToolID}, {"tenant", f.Tenant},
		{"trace_id", traceIDOf(o)}, {"code", code}, {"where", cl.where}, {"error", cl.err}} {
		if kv[1] != "" {
			attrs = append(attrs, kv[0], kv[1])
		}
	}
	msg := cl.msg
	if msg == "" {
		msg = code
	}
	s.log().Log(context.Background(), cl.level, msg, attrs...)
}

// traceIDOf is the call's trace id: its span's, else its traceparent's.
func traceIDOf(o *callObs) string {
	if sc := o.span.SpanContext(); sc.IsValid() {
		return sc.TraceID().String()
	}
	id, _ := parseTraceparent(o.traceparent)
	return id
}

// cutLastSegment splits a JSON pointer before its last segment.
func cutLastSegment(p string) (parent, last string, ok bool) {
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return "", "", false
	}
	return p[:i], p[i+1:], true
}
