package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"strconv"
	"strings"
)

// newLogger is the gateway's log in format: "text" (newTextLogger) or "json"
// (one JSON object per line: time, level, msg, then the record's
// attributes — action_id, tool_id, tenant, trace_id where they apply).
func newLogger(w io.Writer, format string) (*slog.Logger, error) {
	switch format {
	case "text":
		return newTextLogger(w), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo})), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}

// logLines logs each non-empty line of text as a record of its own.
func logLines(logger *slog.Logger, level slog.Level, text string) {
	for _, line := range strings.Split(text, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			logger.Log(context.Background(), level, line)
		}
	}
}

// newTextLogger is the gateway's log in text mode: one line per record,
// "2006/01/02 15:04:05 toolgate: MESSAGE key=value ...", as the gateway has
// always written its start-up lines; WARN and ERROR records say so after the
// prefix.
func newTextLogger(w io.Writer) *slog.Logger {
	return slog.New(&lineHandler{out: log.New(w, "toolgate: ", log.LstdFlags|log.Lmsgprefix)})
}

// lineHandler is a slog.Handler writing through a log.Logger (which adds the
// time and the prefix and serializes writes).
type lineHandler struct {
	out    *log.Logger
	attrs  string // pre-formatted attributes of WithAttrs
	prefix string // group prefix of WithGroup ("a.b.")
}

func (h *lineHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }

func (h *lineHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	if r.Level >= slog.LevelWarn {
		b.WriteString(r.Level.String())
		b.WriteByte(' ')
	}
	b.WriteString(r.Message)
	b.WriteString(h.attrs)
	r.Attrs(func(a slog.Attr) bool {
		writeAttr(&b, h.prefix, a)
		return true
	})
	return h.out.Output(2, b.String())
}

func (h *lineHandler) WithAttrs(as []slog.Attr) slog.Handler {
	var b strings.Builder
	b.WriteString(h.attrs)
	for _, a := range as {
		writeAttr(&b, h.prefix, a)
	}
	c := *h
	c.attrs = b.String()
	return &c
}

func (h *lineHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.prefix += name + "."
	return &c
}

// writeAttr appends " key=value", quoting a value that holds spaces, quotes
// or control characters; a group's members get the group's name as prefix.
func writeAttr(b *strings.Builder, prefix string, a slog.Attr) {
	v := a.Value.Resolve()
	if v.Kind() == slog.KindGroup {
		for _, m := range v.Group() {
			writeAttr(b, prefix+a.Key+".", m)
		}
		return
	}
	if a.Key == "" {
		return
	}
	s := v.String()
	if s == "" || strings.ContainsAny(s, " \"=\\") || strconv.Quote(s) != `"`+s+`"` {
		s = strconv.Quote(s)
	}
	b.WriteString(" " + prefix + a.Key + "=" + s)
}
