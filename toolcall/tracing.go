package toolcall

import (
	"context"
	"slices"

	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/decisionlog"
	"github.com/toolgate/toolgate/internal/tracectx"
	"github.com/toolgate/toolgate/invoke"
	"github.com/toolgate/toolgate/ledger"
	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
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

var (
	traceContext = propagation.TraceContext{}
	noopTracer   = noop.NewTracerProvider().Tracer("")
	noopSpan     = trace.SpanFromContext(context.Background()) // a span that records nothing
)

// StartCall starts a call's execute_tool span, continuing the caller's trace
// that carrier holds (W3C traceparent); the tool's name is added when the
// span ends. Without a tracer nothing is started: the caller's traceparent
// still goes downstream as it came (Input.Traceparent).
func (s *Service) StartCall(ctx context.Context, carrier propagation.TextMapCarrier) (context.Context, trace.Span) {
	if s.cfg.Tracer == noopTracer {
		return ctx, noopSpan
	}
	ctx = traceContext.Extract(ctx, carrier)
	return s.cfg.Tracer.Start(ctx, "execute_tool", trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attrOperation.String("execute_tool"), attrToolType.String("function")))
}

// EndCall names a call's span after its tool and records what the call came
// to: outcome, the status answered and the problem code (if any).
func EndCall(span trace.Span, f *Facts, outcome decisionlog.Outcome, status int, code string) {
	if !span.IsRecording() {
		span.End()
		return
	}
	if f.ToolID != "" {
		span.SetName("execute_tool " + f.ToolID)
		span.SetAttributes(attrToolName.String(f.ToolID))
	}
	span.SetAttributes(attrOutcome.String(string(outcome)), attribute.Int("http.response.status_code", status))
	if f.ActionID != "" {
		span.SetAttributes(attrActionID.String(f.ActionID))
	}
	if f.Version != "" {
		span.SetAttributes(attrVersion.String(f.Version))
	}
	if f.Tenant != "" {
		span.SetAttributes(attrTenant.String(f.Tenant))
	}
	if f.Attempt > 0 {
		span.SetAttributes(attrAttempt.Int(f.Attempt))
	}
	if f.Provider != nil && f.Provider.CallID != "" {
		span.SetAttributes(attrToolCall.String(f.Provider.CallID))
	}
	if code != "" && status >= 400 {
		span.SetAttributes(attrErrorType.String(code))
		if status >= 500 {
			span.SetStatus(otelcodes.Error, code)
		}
	}
	span.End()
}

// child starts a span under the call's span. Without a tracer it starts
// nothing and builds no options: the call's context holds no span then
// (StartCall extracts none), so the no-op tracer's span would carry an
// empty span context, as noopSpan does. The attributes are copied for the
// tracer, so the caller's variadic slice can stay on its stack.
func (s *Service) child(ctx context.Context, name string, kind trace.SpanKind, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if s.cfg.Tracer == noopTracer {
		return ctx, noopSpan
	}
	return s.cfg.Tracer.Start(ctx, name, trace.WithSpanKind(kind), trace.WithAttributes(slices.Clone(attrs)...))
}

// downstreamSpan is child for the downstream call, named after its method
// (the name is built only for a tracer).
func (s *Service) downstreamSpan(ctx context.Context, method string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if s.cfg.Tracer == noopTracer {
		return ctx, noopSpan
	}
	return s.child(ctx, "downstream "+method, trace.SpanKindClient, attrs...)
}

// traceparentOr is the traceparent to send downstream: the downstream span's
// context when there is one, else the caller's header if it is a valid W3C
// traceparent (in the form tracectx forwards), else none.
func traceparentOr(ctx context.Context, incoming string) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		if p, ok := tracectx.Parse(incoming); ok {
			return p.String()
		}
		return ""
	}
	c := propagation.MapCarrier{}
	traceContext.Inject(ctx, c)
	if tp := c.Get("traceparent"); tp != "" {
		return tp
	}
	return ""
}

// validate checks arguments against a contract version under a span.
func (s *Service) validate(ctx context.Context, v *contract.Version, args any) contract.Verdict {
	_, span := s.child(ctx, "validate", trace.SpanKindInternal, attrVersion.String(v.Version))
	verdict := v.Validate(args)
	if !span.IsRecording() { // nothing to record: no attributes built
		span.End()
		return verdict
	}
	span.SetAttributes(attribute.Int("toolgate.validation.errors", len(verdict.Errors)), attribute.Bool("toolgate.validation.review", len(verdict.Review) > 0))
	if !verdict.Valid() {
		span.SetAttributes(attrErrorType.String("invalid_arguments"))
	}
	span.End()
	return verdict
}

func endClaimSpan(span trace.Span, created bool, err error) {
	if !span.IsRecording() {
		span.End()
		return
	}
	span.SetAttributes(attribute.Bool("toolgate.claimed", created))
	if err != nil {
		span.SetStatus(otelcodes.Error, err.Error())
		span.SetAttributes(attrErrorType.String("ledger_unavailable"))
	}
	span.End()
}

func endDownstreamSpan(span trace.Span, res invoke.Result) {
	if !span.IsRecording() {
		span.End()
		return
	}
	span.SetAttributes(attribute.String("toolgate.downstream.outcome", res.Outcome.String()))
	if res.StatusCode != 0 {
		span.SetAttributes(attribute.Int("http.response.status_code", res.StatusCode))
	}
	if res.Outcome != ledger.Answered || res.StatusCode >= 500 {
		span.SetStatus(otelcodes.Error, res.Outcome.String())
		span.SetAttributes(attrErrorType.String(res.Outcome.String()))
	}
	span.End()
}
