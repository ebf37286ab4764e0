package gateway

import (
	"context"
	"net/http"

	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/invoke"
	"github.com/toolgate/toolgate/ledger"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Span attribute keys: the OpenTelemetry GenAI semantic conventions, then
// toolgate's own.
const (
	attrOperation = attribute.Key("gen_ai.operation.name")
	attrToolName  = attribute.Key("gen_ai.tool.name")
	attrToolCall  = attribute.Key("gen_ai.tool.call.id")
	attrToolType  = attribute.Key("gen_ai.tool.type")
	attrErrorType = attribute.Key("error.type")
	attrActionID  = attribute.Key("toolgate.action_id")
	attrOutcome   = attribute.Key("toolgate.outcome")
	attrAttempt   = attribute.Key("toolgate.attempt")
	attrVersion   = attribute.Key("toolgate.tool_version")
	attrTenant    = attribute.Key("toolgate.tenant")
)

var traceContext = propagation.TraceContext{}

func (s *Server) tracer() trace.Tracer {
	if s.cfg.Tracer != nil {
		return s.cfg.Tracer
	}
	return noopTracer
}

var noopTracer = noop.NewTracerProvider().Tracer("")

// startCallSpan continues the caller's trace (W3C traceparent) with an
// execute_tool span; the tool's name is added once it is known.
func (s *Server) startCallSpan(r *http.Request) (context.Context, trace.Span) {
	if s.cfg.Tracer == nil {
		// No tracing: no span work on the hot path. The caller's traceparent
		// still goes downstream as it came (call.trace).
		return r.Context(), noopSpan
	}
	ctx := traceContext.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	return s.tracer().Start(ctx, "execute_tool", trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attrOperation.String("execute_tool"), attrToolType.String("function")))
}

// endCallSpan names the span after its tool and records what the call came to.
func endCallSpan(span trace.Span, t *trail, outcome string, status int) {
	if !span.IsRecording() {
		span.End()
		return
	}
	if t.toolID != "" {
		span.SetName("execute_tool " + t.toolID)
		span.SetAttributes(attrToolName.String(t.toolID))
	}
	span.SetAttributes(attrOutcome.String(outcome), attribute.Int("http.response.status_code", status))
	if t.actionID != "" {
		span.SetAttributes(attrActionID.String(t.actionID))
	}
	if t.version != "" {
		span.SetAttributes(attrVersion.String(t.version))
	}
	if t.tenant != "" {
		span.SetAttributes(attrTenant.String(t.tenant))
	}
	if t.attempt > 0 {
		span.SetAttributes(attrAttempt.Int(t.attempt))
	}
	if t.provider != nil && t.provider.CallID != "" {
		span.SetAttributes(attrToolCall.String(t.provider.CallID))
	}
	if t.problem != "" && status >= 400 {
		span.SetAttributes(attrErrorType.String(t.problem))
		if status >= 500 {
			span.SetStatus(codes.Error, t.problem)
		}
	}
	span.End()
}

// child starts a span under the call's span.
func (s *Server) child(ctx context.Context, name string, kind trace.SpanKind, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	return s.tracer().Start(ctx, name, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
}

// traceparent renders the span context of ctx as a W3C traceparent header,
// or "" when ctx carries none.
func traceparent(ctx context.Context) string {
	h := http.Header{}
	traceContext.Inject(ctx, propagation.HeaderCarrier(h))
	return h.Get("traceparent")
}

// traceparentOr is the traceparent to send downstream: the downstream span's
// context when there is one, else the caller's header as it came.
func traceparentOr(ctx context.Context, incoming string) string {
	if tp := traceparent(ctx); tp != "" {
		return tp
	}
	return incoming
}

// validate checks arguments against a contract version under a span.
func (s *Server) validate(ctx context.Context, v *contract.Version, c *call) contract.Verdict {
	_, span := s.child(ctx, "validate", trace.SpanKindInternal, attrVersion.String(v.Version))
	verdict := v.Validate(c.decoded())
	span.SetAttributes(attribute.Int("toolgate.validation.errors", len(verdict.Errors)), attribute.Bool("toolgate.validation.review", len(verdict.Review) > 0))
	if !verdict.Valid() {
		span.SetAttributes(attrErrorType.String("invalid_arguments"))
	}
	span.End()
	return verdict
}

func endClaimSpan(span trace.Span, created bool, err error) {
	span.SetAttributes(attribute.Bool("toolgate.claimed", created))
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
		span.SetAttributes(attrErrorType.String("ledger_unavailable"))
	}
	span.End()
}

func endDownstreamSpan(span trace.Span, res invoke.Result) {
	span.SetAttributes(attribute.String("toolgate.downstream.outcome", res.Outcome.String()))
	if res.StatusCode != 0 {
		span.SetAttributes(attribute.Int("http.response.status_code", res.StatusCode))
	}
	if res.Outcome != ledger.Answered || res.StatusCode >= 500 {
		span.SetStatus(codes.Error, res.Outcome.String())
		span.SetAttributes(attrErrorType.String(res.Outcome.String()))
	}
	span.End()
}
