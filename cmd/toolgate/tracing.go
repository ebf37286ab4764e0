package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// tracingFromEnv sets up OTLP/HTTP trace export when the standard OTEL_*
// environment asks for it: OTEL_TRACES_EXPORTER=otlp, or an
// OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT. It is off by default, and
// OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none turn it off. The
// exporter itself reads the rest (endpoint, headers, timeout, protocol
// options), and OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES name the service
// (default service.name "toolgate").
func tracingFromEnv(ctx context.Context) (trace.Tracer, func(context.Context) error, error) {
	off := func(context.Context) error { return nil }
	exporter := strings.ToLower(os.Getenv("OTEL_TRACES_EXPORTER"))
	endpoint := os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") + os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") || exporter == "none" || (exporter != "otlp" && endpoint == "") {
		return nil, off, nil
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, off, fmt.Errorf("otlp trace exporter: %w", err)
	}
	if os.Getenv("OTEL_SERVICE_NAME") == "" {
		os.Setenv("OTEL_SERVICE_NAME", "toolgate")
	}
	res, err := resource.New(ctx, resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		return nil, off, fmt.Errorf("otel resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return tp.Tracer("github.com/toolgate/toolgate/gateway"), tp.Shutdown, nil
}
