package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// A form-encoded operation imported from an OpenAPI document and served by
// the real binary: the downstream gets the validated arguments as a form
// (brackets for the nested object, the number as the agent sent it, the
// URL's argument left out), with the Idempotency-Key, exactly once.
func TestImportedFormOperationEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	t.Parallel()
	type seen struct{ path, ctype, key, body string }
	var mu sync.Mutex
	var got []seen
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, seen{r.URL.Path, r.Header.Get("Content-Type"), r.Header.Get("Idempotency-Key"), string(b)})
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(200)
		fmt.Fprint(w, `{"id":"re_1","status":"succeeded"}`)
	}))
	defer down.Close()

	dir := t.TempDir()
	doc := filepath.Join(dir, "payments.yaml")
	os.WriteFile(doc, []byte(`openapi: 3.0.3
info: {title: Payments, version: "1"}
paths:
  /v1/charges/{charge}/refunds:
    post:
      operationId: refundCharge
      summary: Refund a charge.
      parameters:
        - {name: charge, in: path, required: true, description: The charge., schema: {type: string}}
      requestBody:
        required: true
        content:
          application/x-www-form-urlencoded:
            schema:
              type: object
              required: [amount, currency]
              properties:
                amount: {type: integer, description: Minor units.}
                currency: {type: string, description: ISO code.}
                metadata: {type: object, description: Your pairs., additionalProperties: {type: string}}
            encoding:
              metadata: {style: deepObject, explode: true}
      responses:
        "200":
          description: The refund.
          content:
            application/json:
              schema:
                type: object
                properties:
                  id: {type: string, description: The refund.}
                  status: {type: string, description: Its status.}
`), 0o644)
	tools := filepath.Join(dir, "tools")
	r := runCLI(t, "", "import", "openapi", doc, "--dir", tools, "--base-url", down.URL, "--owner", "payments", "--risk", "high")
	if r.code != 0 {
		t.Fatal(r)
	}
	_, snippet, _ := strings.Cut(r.stdout, "Add to toolgate.yaml:\n\n")
	snippet, _, _ = strings.Cut(snippet, "\nStill to do")
	lines := strings.Split(snippet, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, "  ")
	}
	addr := freeAddr(t)
	cfg := fmt.Sprintf("listen: %s\ntools_dir: %s\nledger: sqlite://%s\n%s", addr, tools, filepath.Join(dir, "ledger.db"), strings.Join(lines, "\n"))
	cfgPath := filepath.Join(dir, "toolgate.yaml")
	os.WriteFile(cfgPath, []byte(cfg), 0o600)
	logf, _ := os.Create(filepath.Join(dir, "serve.log"))
	defer func() {
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, "serve.log"))
			t.Logf("config:\n%s\ngateway log:\n%s", cfg, b)
		}
	}()
	startServe(t, buildBinary(t), cfgPath, addr, logf)
	call := func() (int, string) {
		body := `{"arguments":{"charge":"ch_1","amount":12345678901234,"currency":"eur","metadata":{"order_id":"o 1"}}}`
		req, _ := http.NewRequest("POST", "http://"+addr+"/v1/tools/payments.refund_charge/calls", strings.NewReader(body))
		req.Header.Set("Idempotency-Key", "form-e2e-0001")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for i := range 2 {
		if code, body := call(); code != 200 || !strings.Contains(body, "re_1") {
			t.Fatalf("call %d: %d %s", i+1, code, body)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	want := seen{"/v1/charges/ch_1/refunds", "application/x-www-form-urlencoded", "(any)", "amount=12345678901234&currency=eur&metadata[order_id]=o+1"}
	if len(got) != 1 || got[0].path != want.path || got[0].ctype != want.ctype || got[0].body != want.body || got[0].key == "" {
		t.Fatalf("the downstream saw %+v, want one %+v", got, want)
	}
}
