package upstream

import (
	"bytes"
	"context"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync/atomic"
	"time"
)

// attempt follows the one HTTP request that carries a tools/call: whether it
// was (possibly partly) written, when, and the status it was answered with.
// It travels in the call's context; only the first POST under that context
// is the call (the SDK's later notifications/cancelled reuses the context).
type attempt struct {
	claimed atomic.Bool
	written atomic.Bool
	wroteAt atomic.Int64 // unix nanoseconds
	status  atomic.Int32 // the HTTP status of the answer; 0 when none came
	now     func() time.Time
}

type attemptKey struct{}

func withAttempt(ctx context.Context, a *attempt) context.Context {
	return context.WithValue(ctx, attemptKey{}, a)
}

func (a *attempt) trace() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) {
			// Even a failed write may have put bytes on the wire.
			a.wroteAt.Store(a.now().UnixNano())
			a.written.Store(true)
		},
	}
}

func (a *attempt) sentAt() time.Time {
	if n := a.wroteAt.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

// onceBody is a request body the transport cannot rewind: with it and a nil
// GetBody, net/http never sends the request a second time on another
// connection (a second tools/call no ledger would see).
type onceBody struct{ r io.ReadCloser }

func (b *onceBody) Read(p []byte) (int, error) { return b.r.Read(p) }
func (b *onceBody) Close() error               { return b.r.Close() }

// roundTripper adds a server's configured headers to every request, makes
// the request of a tools/call impossible to re-send and records what became
// of it, and caps what an answer may make the SDK read.
type roundTripper struct {
	base    http.RoundTripper
	headers map[string]string
	maxBody int64
	// refused is the status of the last answer of 400 or more: what is kept
	// of a refused connection (the SDK's error quotes the answer's body).
	refused atomic.Int32
}

func (t *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context()) // a RoundTripper must not change its caller's request
	for k, v := range t.headers {
		req.Header.Set(k, v)
	}
	raw, _ := req.Context().Value(rawKey{}).(*rawResult)
	if raw != nil && req.Method == http.MethodPost && req.Body != nil && req.Body != http.NoBody {
		// The SDK's request body is its own JSON-RPC message: small, and
		// read here only to learn the call's id.
		body, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		raw.request(body)
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.ContentLength = int64(len(body))
	}
	a, _ := req.Context().Value(attemptKey{}).(*attempt)
	if a != nil && (req.Method != http.MethodPost || !a.claimed.CompareAndSwap(false, true)) {
		a = nil
	}
	if a != nil {
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), a.trace()))
		if req.Body != nil {
			req.Body = &onceBody{r: req.Body}
		}
		req.GetBody = nil
	}
	resp, err := t.base.RoundTrip(req)
	if resp != nil {
		if resp.StatusCode >= 400 && req.Method == http.MethodPost {
			t.refused.Store(int32(resp.StatusCode))
		}
		if a != nil {
			// An answer proves the request arrived, even one that overtook
			// the WroteRequest hook.
			if !a.written.Load() {
				a.wroteAt.Store(a.now().UnixNano())
				a.written.Store(true)
			}
			a.status.Store(int32(resp.StatusCode))
		}
		mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
		if mt != "text/event-stream" {
			// A JSON answer is read whole by the SDK; an event stream is
			// bounded per event (StreamableClientTransport.MaxEventSize).
			resp.Body = &cappedBody{r: resp.Body, left: t.maxBody}
		}
		if raw != nil {
			resp.Body = raw.tee(resp.Body, mt == "text/event-stream")
		}
	}
	return resp, err
}

// ErrResponseTooLarge is the read error of an upstream answer longer than
// Config.MaxResponseBytes: the answer is cut off, so a call it answered is
// unknown.
var ErrResponseTooLarge = errors.New("upstream: answer larger than the cap")

type cappedBody struct {
	r    io.ReadCloser
	left int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a body of exactly the cap from a longer one.
		var one [1]byte
		n, err := b.r.Read(one[:])
		if n > 0 {
			return 0, ErrResponseTooLarge
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *cappedBody) Close() error { return b.r.Close() }

// newHTTPClient is the client the SDK's transport uses for one server: no
// redirects (a redirect is a second request), bounded connections and
// headers, and the tracking round tripper.
func newHTTPClient(base http.RoundTripper, headers map[string]string, maxBody int64) *http.Client {
	return &http.Client{
		Transport:     &roundTripper{base: base, headers: headers, maxBody: maxBody},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// defaultTransport is the base transport of a Pool without one: keep-alives,
// at most DefaultMaxConnsPerServer connections per host, bounded headers.
func defaultTransport() http.RoundTripper {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxConnsPerHost = DefaultMaxConnsPerServer
	t.MaxIdleConnsPerHost = DefaultMaxConnsPerServer
	t.IdleConnTimeout = 30 * time.Second
	t.MaxResponseHeaderBytes = 64 << 10
	return t
}

// redactURL drops what may be a credential from a URL before it reaches a
// message, /readyz or a report: the userinfo, and the query (where many MCP
// servers take an API key), shown as "?…".
func redactURL(u string) string {
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		if u[i] == '?' {
			u = u[:i] + "?…"
		} else {
			u = u[:i]
		}
	}
	scheme, rest, ok := strings.Cut(u, "://")
	if !ok {
		return u
	}
	host := rest
	if end := strings.IndexAny(rest, "/?"); end >= 0 {
		host = rest[:end]
	}
	if at := strings.LastIndexByte(host, '@'); at >= 0 {
		return scheme + "://" + rest[at+1:]
	}
	return u
}
