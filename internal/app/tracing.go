package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// tracing is OTLP/HTTP trace export as a Service, when the standard OTEL_*
// environment asks for it: OTEL_TRACES_EXPORTER=otlp, or an
// OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT. It is off by default, and
// OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none turn it off. The
// exporter itself reads the rest (endpoint, headers, timeout, protocol
// options), and OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES name the service
// (default service.name "toolgate"). Its tracer is nil while it is off.
type tracing struct {
	tracer trace.Tracer
	tp     *sdktrace.TracerProvider
}

// Start sets up the export the environment asks for.
func (t *tracing) Start(ctx context.Context) error {
	exporter := strings.ToLower(os.Getenv("OTEL_TRACES_EXPORTER"))
	endpoint := os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") + os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") || exporter == "none" || (exporter != "otlp" && endpoint == "") {
		return nil
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return fmt.Errorf("otlp trace exporter: %w", err)
	}
	if os.Getenv("OTEL_SERVICE_NAME") == "" {
		os.Setenv("OTEL_SERVICE_NAME", "toolgate")
	}
	res, err := resource.New(ctx, resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		// The exporter is not handed to a provider: shut it down here.
		return errors.Join(fmt.Errorf("otel resource: %w", err), exp.Shutdown(ctx))
	}
	t.tp = sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	t.tracer = t.tp.Tracer("github.com/toolgate/toolgate/gateway")
	return nil
}

// Stop flushes the spans not yet exported, until ctx ends, and stops.
func (t *tracing) Stop(ctx context.Context) error {
	if t.tp == nil {
		return nil
	}
	return t.tp.Shutdown(ctx)
}
