package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/toolcall"
)

// GET /v1/openapi.json serves the document without a key, and a
// well-kept OpenAPI library (kin-openapi) loads and validates it as OpenAPI
// 3.1.
func TestOpenAPIDocumentValidates(t *testing.T) {
	t.Parallel()
	g := newRig(t, withKeys)
	r := g.do("GET", "/v1/openapi.json", "")
	if r.status != 200 || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /v1/openapi.json: %d %s", r.status, r.header.Get("Content-Type"))
	}
	want, err := gateway.OpenAPIJSON()
	if err != nil {
		t.Fatal(err)
	}
	want = bytes.Replace(want, []byte(`"url": "/"`), []byte(`"url": "`+g.url+`"`), 1)
	if !bytes.Equal(r.body, want) {
		t.Error("the served document differs from api/openapi.yaml (its server being the gateway's address)")
	}
	doc, err := openapi3.NewLoader().LoadFromData(r.body)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if !doc.IsOpenAPI31OrLater() {
		t.Errorf("openapi %q, want 3.1", doc.OpenAPI)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("the document is not valid OpenAPI: %v", err)
	}
	// The JSON keeps the YAML's order: a reader meets openapi and info first.
	if !bytes.HasPrefix(r.body, []byte("{\n  \"openapi\": \"3.1.0\",\n  \"info\"")) {
		t.Errorf("the document does not start with openapi and info: %.60s", r.body)
	}
	g.do("POST", "/v1/openapi.json", "").wantProblem(t, 405, "method_not_allowed")
}

func openapiDoc(t *testing.T) *contractDoc {
	t.Helper()
	c, err := loadContract()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Every code of toolcall's problem table is in the document's ProblemCode,
// with its status first in its title, and the document has no other code: a
// code added to the table and not to the document fails here.
func TestOpenAPIHasEveryProblemCode(t *testing.T) {
	t.Parallel()
	schema := openapiDoc(t).doc.Components.Schemas["ProblemCode"].Value
	documented := map[string]string{}
	for _, alt := range schema.OneOf {
		c, ok := alt.Value.Const.(string)
		if !ok {
			t.Fatalf("a ProblemCode alternative is not a const string: %+v", alt.Value)
		}
		documented[c] = alt.Value.Title
	}
	for _, code := range toolcall.Codes() {
		title, ok := documented[string(code)]
		if !ok {
			t.Errorf("problem code %s (toolcall/problems.go) is missing from api/openapi.yaml's ProblemCode", code)
			continue
		}
		info, _ := code.Info()
		if !strings.HasPrefix(title, strconv.Itoa(info.Status)+" ") {
			t.Errorf("api/openapi.yaml: %s is titled %q; the table answers it %d", code, title, info.Status)
		}
		delete(documented, string(code))
	}
	for code := range documented {
		t.Errorf("api/openapi.yaml documents problem code %s, which the table does not have", code)
	}
}

// The document's ActionState is the ledger's list of states.
func TestOpenAPIHasEveryActionState(t *testing.T) {
	t.Parallel()
	var want []string
	for _, s := range ledger.States {
		want = append(want, string(s))
	}
	var got []string
	for _, v := range openapiDoc(t).doc.Components.Schemas["ActionState"].Value.Enum {
		got = append(got, v.(string))
	}
	if !slices.Equal(got, want) {
		t.Errorf("ActionState %v, ledger.States %v", got, want)
	}
}

// routePattern is a ServeMux pattern with a method: "GET /v1/actions/{action_id}".
var routePattern = regexp.MustCompile(`^(GET|HEAD|POST|PUT|PATCH|DELETE) (/[^ ]*)$`)

// gatewayRoutes reads every route the gateway registers: each string literal
// of its (non-test) source that is a ServeMux pattern with a method.
func gatewayRoutes(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	routes := map[string]string{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			if m := routePattern.FindStringSubmatch(s); m != nil {
				// {rest...} is {rest} in OpenAPI.
				path := strings.ReplaceAll(m[2], "...}", "}")
				routes[m[1]+" "+path] = fset.Position(lit.Pos()).String()
			}
			return true
		})
	}
	return routes
}

// Every route the gateway serves, but the dashboard's and MCP's, is an
// operation of the document, and every operation of the document is a route:
// an endpoint added to the gateway and not to the document fails here.
func TestOpenAPIHasEveryRoute(t *testing.T) {
	t.Parallel()
	routes := gatewayRoutes(t)
	if len(routes) < 10 {
		t.Fatalf("found only %d routes in the gateway's source: %v", len(routes), routes)
	}
	documented := map[string]bool{}
	for path, item := range openapiDoc(t).doc.Paths.Map() {
		for method := range item.Operations() {
			documented[method+" "+path] = true
		}
	}
	var missing []string
	for route, where := range routes {
		_, path, _ := strings.Cut(route, " ")
		if documented[route] && path == "/mcp" {
			delete(documented, route) // the MCP notification stream: documented, its answers not checked
			continue
		}
		if outsideContract(strings.TrimSuffix(path, "{file}")) || strings.HasPrefix(path, "/ui/") {
			continue
		}
		if !documented[route] {
			missing = append(missing, route+" ("+where+")")
		}
		delete(documented, route)
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("the gateway serves %s, which api/openapi.yaml does not document", m)
	}
	for op := range documented {
		t.Errorf("api/openapi.yaml documents %s, which the gateway does not serve", op)
	}
}

// The check that newRig puts in front of every gateway fails an answer with
// an undocumented field, status or header, and passes the documented one.
func TestContractCheckCatchesTheUndocumented(t *testing.T) {
	t.Parallel()
	g := newRig(t)
	g.refund("contract-chk-01", okArgs)
	good := g.do("GET", "/v1/actions/contract-chk-01", "")
	if good.status != 200 {
		t.Fatalf("GET action: %d %s", good.status, good.body)
	}
	var rec map[string]any
	if err := json.Unmarshal(good.body, &rec); err != nil {
		t.Fatal(err)
	}
	rec["internal_note"] = "a field the document does not have"
	withField, _ := json.Marshal(rec)
	problemBody := `{"type":"/problems/not_found","title":"Not found","status":404,"code":"not_found","detail":"x"}`
	jsonHeader := http.Header{"Content-Type": {"application/json"}}
	problemHeader := http.Header{"Content-Type": {"application/problem+json"}}
	c := openapiDoc(t)
	for _, tc := range []struct {
		name         string
		method, path string
		status       int
		header       http.Header
		body         string
		fails        bool
	}{
		{"the gateway's own answer", "GET", "/v1/actions/contract-chk-01", 200, jsonHeader, string(good.body), false},
		{"an undocumented field", "GET", "/v1/actions/contract-chk-01", 200, jsonHeader, string(withField), true},
		{"a missing required field", "GET", "/v1/actions/contract-chk-01", 200, jsonHeader, `{"action_id":"contract-chk-01"}`, true},
		{"an undocumented status", "GET", "/v1/actions/contract-chk-01", 418, problemHeader, strings.ReplaceAll(problemBody, "404", "418"), true},
		{"an undocumented header", "GET", "/v1/actions/contract-chk-01", 200,
			http.Header{"Content-Type": {"application/json"}, "X-Debug-Tenant": {"acme"}}, string(good.body), true},
		{"an undocumented problem code", "GET", "/v1/actions/contract-chk-01", 404, problemHeader,
			strings.ReplaceAll(problemBody, `"code":"not_found"`, `"code":"no_such_code"`), true},
		{"a problem with an undocumented field", "GET", "/v1/actions/contract-chk-01", 404, problemHeader,
			strings.Replace(problemBody, `}`, `,"stack":"..."}`, 1), true},
		{"a documented problem", "GET", "/v1/actions/contract-chk-01", 404, problemHeader, problemBody, false},
		{"a downstream's own answer to a call", "POST", "/v1/tools/payments.issue_refund/calls", 404, jsonHeader, `{"code":"ORDER_NOT_FOUND"}`, false},
		{"a gateway problem on a call with a field too many", "POST", "/v1/tools/payments.issue_refund/calls", 409, problemHeader,
			`{"type":"/problems/idempotency_key_reused","title":"t","status":409,"code":"idempotency_key_reused","extra":1}`, true},
		{"a gateway problem under a status only a range covers", "POST", "/v1/tools/payments.issue_refund/calls", 418, problemHeader,
			strings.ReplaceAll(problemBody, "404", "418"), true},
		{"a provider answer with an undocumented field", "POST", "/v1/calls/anthropic", 200, jsonHeader,
			`{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"ok"}],"is_error":false,"cost":1}`, true},
		{"a path nobody serves answers a problem", "GET", "/v2/nothing", 404, problemHeader, problemBody, false},
		{"a path nobody serves answers something else", "GET", "/v2/nothing", 200, jsonHeader, `{}`, true},
	} {
		req := httptest.NewRequest(tc.method, "http://127.0.0.1"+tc.path, nil)
		err := c.check(req, tc.status, tc.header, []byte(tc.body))
		if (err != nil) != tc.fails {
			t.Errorf("%s: check gave %v, want a failure: %v", tc.name, err, tc.fails)
		}
	}

	// Through the middleware, a mismatch is a test failure of the test that
	// caused it.
	fake := &recordingTB{TB: t}
	h := contractChecked(fake, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(withField)
	}))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/v1/actions/contract-chk-01", nil))
	if len(fake.errors) != 1 || !strings.Contains(fake.errors[0], "internal_note") {
		t.Errorf("the middleware reported %q for an undocumented field", fake.errors)
	}
}

// recordingTB keeps what a test would report.
type recordingTB struct {
	testing.TB
	errors []string
}

func (r *recordingTB) Errorf(format string, args ...any) {
	r.errors = append(r.errors, strings.TrimSpace(fmt.Sprintf(format, args...)))
}
