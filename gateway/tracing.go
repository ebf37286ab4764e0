package gateway

import (
	"net/http"

	"github.com/toolgate/toolgate/internal/tracectx"
)

// cleanTraceHeaders keeps a caller's trace context only when it is valid W3C
// Trace Context, for every front end at once (ServeHTTP): a valid
// traceparent is rewritten in the form toolgate forwards (version 00, known
// flags); an invalid one, or more than one, is removed with its tracestate,
// so the call starts a new trace and nothing of the header is stored,
// logged or forwarded.
func cleanTraceHeaders(h http.Header) {
	vs := h["Traceparent"]
	if len(vs) == 0 {
		return
	}
	if p, ok := tracectx.Parse(vs[0]); ok && len(vs) == 1 {
		vs[0] = p.String()
		return
	}
	delete(h, "Traceparent")
	delete(h, "Tracestate")
}
