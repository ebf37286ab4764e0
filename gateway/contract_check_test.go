package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/toolcall"
)

// The gateway's black-box tests hold every answer to the API's own contract
// (api/openapi.yaml, served at /v1/openapi.json): newRig serves its gateway
// through contractChecked, so every request a test sends — through rig.do,
// http.DefaultClient, the MCP and TypeScript clients, the browser — has its
// answer validated, and an undocumented status, header or body field fails
// the test that caused it.
//
// Checked: every path of the document (the /v1 API, /healthz, /readyz,
// /metrics, /problems/{code}); any other path but /ui and /mcp must answer a
// problem of the document's Problem schema. /ui (the dashboard's own pages
// and data) and /mcp (JSON-RPC, whose contract is MCP's) are not part of the
// document.

// transportHeaders are set by net/http or by every HTTP server, not by the
// API: a response may carry them without documenting them.
var transportHeaders = map[string]bool{
	"Content-Type": true, "Content-Length": true, "Date": true, "Transfer-Encoding": true,
	"Connection": true, "Keep-Alive": true, "Vary": true, "X-Content-Type-Options": true, "Content-Encoding": true,
}

type contractDoc struct {
	doc    *openapi3.T
	router routers.Router
}

var loadContract = sync.OnceValues(func() (*contractDoc, error) {
	raw, err := gateway.OpenAPIJSON()
	if err != nil {
		return nil, err
	}
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(raw)
	if err != nil {
		return nil, fmt.Errorf("load the OpenAPI document: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("the OpenAPI document is invalid: %w", err)
	}
	// Tests serve on random loopback ports: match paths, not servers.
	doc.Servers = nil
	router, err := legacy.NewRouter(doc)
	if err != nil {
		return nil, err
	}
	return &contractDoc{doc: doc, router: router}, nil
})

// contractChecked serves h and validates each answer against the document,
// reporting every mismatch with t.Errorf. Benchmarks are served unchecked,
// so that the check does not weigh on what they measure.
func contractChecked(t testing.TB, h http.Handler) http.Handler {
	if _, bench := t.(*testing.B); bench {
		return h
	}
	c, err := loadContract()
	if err != nil {
		t.Fatal(err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if outsideContract(r.URL.Path) {
			h.ServeHTTP(w, r)
			return
		}
		rec := &recordingWriter{ResponseWriter: w}
		h.ServeHTTP(rec, r)
		if r.Context().Err() != nil && rec.body.Len() == 0 {
			return // the client went away, and was answered nothing: no answer to check
		}
		if err := c.check(r, rec.status(), rec.header, rec.body.Bytes()); err != nil {
			t.Errorf("%s %s answered %d, which api/openapi.yaml does not document: %v\nbody: %.600s",
				r.Method, r.URL.Path, rec.status(), err, rec.body.Bytes())
		}
	})
}

func outsideContract(path string) bool {
	return path == "/ui" || strings.HasPrefix(path, "/ui/") || path == "/mcp" || strings.HasPrefix(path, "/mcp/")
}

// check validates one answer: its status, headers and body.
func (c *contractDoc) check(r *http.Request, status int, header http.Header, body []byte) error {
	req := r.Clone(context.Background())
	req.Body = http.NoBody
	route, params, err := c.router.FindRoute(req)
	var unrouted *routers.RouteError
	if errors.As(err, &unrouted) {
		return c.checkUnrouted(status, header, body)
	}
	if err != nil {
		return err
	}
	input := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 status,
		Header:                 header,
		Body:                   io.NopCloser(bytes.NewReader(body)),
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	var errs []error
	if err := openapi3filter.ValidateResponse(context.Background(), input); err != nil {
		errs = append(errs, err)
	}
	// A range (2XX, 4XX, 5XX) stands for a downstream's own answers: a
	// problem of the gateway itself must be listed under its exact status.
	if gatewayProblem(header, body) {
		if route.Operation.Responses.Value(strconv.Itoa(status)) == nil {
			errs = append(errs, fmt.Errorf("a gateway problem with status %d, which the operation does not list", status))
		}
		if err := c.validateSchema("Problem", body); err != nil {
			errs = append(errs, err)
		}
		// One code, one status: the one its page (/problems/{code}) and
		// docs/reference/problems.md give.
		var p struct {
			Code string `json:"code"`
		}
		if json.Unmarshal(body, &p) == nil {
			if info, ok := toolcall.Code(p.Code).Info(); ok && info.Status != status {
				errs = append(errs, fmt.Errorf("problem %s answered with status %d; its code's status is %d", p.Code, status, info.Status))
			}
		}
	}
	if ref := route.Operation.Responses.Status(status); ref != nil && ref.Value != nil {
		if undocumented := undocumentedHeaders(header, ref.Value.Headers); len(undocumented) > 0 {
			errs = append(errs, fmt.Errorf("undocumented response header(s) %s", strings.Join(undocumented, ", ")))
		}
	}
	return errors.Join(errs...)
}

// gatewayProblem reports whether an answer is a problem of the gateway's own
// (type /problems/{code}), not a downstream's answer passed through.
func gatewayProblem(header http.Header, body []byte) bool {
	if !strings.HasPrefix(header.Get("Content-Type"), "application/problem+json") {
		return false
	}
	var p struct {
		Type string `json:"type"`
	}
	return json.Unmarshal(body, &p) == nil && strings.HasPrefix(p.Type, "/problems/")
}

// checkUnrouted validates the answer to a path or method the document does
// not have: a 404 or 405 problem.
func (c *contractDoc) checkUnrouted(status int, header http.Header, body []byte) error {
	if status != http.StatusNotFound && status != http.StatusMethodNotAllowed && status != http.StatusForbidden {
		return fmt.Errorf("a path or method the document does not have answered %d, not a 403, 404 or 405 problem", status)
	}
	if ct := header.Get("Content-Type"); ct != "application/problem+json" {
		return fmt.Errorf("Content-Type %q, want application/problem+json", ct)
	}
	if undocumented := undocumentedHeaders(header, c.doc.Components.Responses["Problem"].Value.Headers); len(undocumented) > 0 {
		return fmt.Errorf("undocumented response header(s) %s", strings.Join(undocumented, ", "))
	}
	return c.validateSchema("Problem", body)
}

// validateSchema validates a JSON body against a schema of the document's
// components.
func (c *contractDoc) validateSchema(name string, body []byte) error {
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("body is not JSON: %w", err)
	}
	ref := c.doc.Components.Schemas[name]
	if ref == nil {
		return fmt.Errorf("no schema %s", name)
	}
	return ref.Value.VisitJSON(v, openapi3.EnableJSONSchema2020(), openapi3.MultiErrors())
}

func undocumentedHeaders(header http.Header, documented openapi3.Headers) []string {
	var out []string
	for name := range header {
		if transportHeaders[http.CanonicalHeaderKey(name)] {
			continue
		}
		found := false
		for d := range documented {
			if strings.EqualFold(d, name) {
				found = true
			}
		}
		if !found {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// recordingWriter passes an answer through and keeps a copy of its status,
// headers and body.
type recordingWriter struct {
	http.ResponseWriter
	code   int
	header http.Header
	body   bytes.Buffer
}

func (w *recordingWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code, w.header = code, w.ResponseWriter.Header().Clone()
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recordingWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.body.Len() < 8<<20 {
		w.body.Write(b)
	}
	return w.ResponseWriter.Write(b)
}

func (w *recordingWriter) status() int {
	if w.code == 0 {
		w.code, w.header = http.StatusOK, w.ResponseWriter.Header().Clone()
	}
	return w.code
}

func (w *recordingWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *recordingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
