package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/internal/secret"
)

// ConfigSecrets are the secret values a configuration holds: every
// mcp.headers value, the passwords and query values of the bindings' URLs
// and of the ledger's DSN, and the values of OTEL_EXPORTER_OTLP_HEADERS.
// The gateway scrubs them from its log and /readyz (and the upstream
// package from every error text about a server).
func ConfigSecrets(cfg *config.Config) *secret.Set {
	s := &secret.Set{}
	s.AddURL(cfg.Ledger)
	for _, b := range cfg.Bindings {
		for _, u := range []string{b.URL, b.Lookup.URL, b.State.URL} {
			s.AddURL(u)
		}
		if b.MCP != nil {
			s.AddURL(b.MCP.URL)
			for _, v := range b.MCP.Headers {
				s.Add(v)
			}
		}
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"} {
		for _, kv := range strings.Split(os.Getenv(name), ",") {
			if _, v, ok := strings.Cut(kv, "="); ok {
				s.Add(strings.TrimSpace(v))
			}
		}
	}
	return s
}

// ScrubLogger is logger with the secrets of s replaced in every record's
// message and attributes.
func ScrubLogger(logger *slog.Logger, s *secret.Set) *slog.Logger {
	if s.Empty() {
		return logger
	}
	return slog.New(&scrubHandler{h: logger.Handler(), s: s})
}

type scrubHandler struct {
	h slog.Handler
	s *secret.Set
}

func (h *scrubHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.h.Enabled(ctx, l) }

func (h *scrubHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, h.s.Scrub(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.h.Handle(ctx, out)
}

func (h *scrubHandler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.s.Scrub(v.String()))
	case slog.KindGroup:
		as := v.Group()
		out := make([]any, len(as))
		for i, g := range as {
			out[i] = h.attr(g)
		}
		return slog.Group(a.Key, out...)
	case slog.KindAny:
		return slog.String(a.Key, h.s.Scrub(fmt.Sprint(v.Any())))
	}
	return slog.Attr{Key: a.Key, Value: v}
}

func (h *scrubHandler) WithAttrs(as []slog.Attr) slog.Handler {
	out := make([]slog.Attr, len(as))
	for i, a := range as {
		out[i] = h.attr(a)
	}
	return &scrubHandler{h: h.h.WithAttrs(out), s: h.s}
}

func (h *scrubHandler) WithGroup(name string) slog.Handler {
	return &scrubHandler{h: h.h.WithGroup(name), s: h.s}
}
