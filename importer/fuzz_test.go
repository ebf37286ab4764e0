package importer

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolgate/toolgate/contract"
)

var fuzzOpts = Options{Namespace: "fz", Now: func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }}

// checkLoads holds what an import made to the import's own promise (Write
// refuses to write a folder the strict loader refuses): every contract
// parses without a problem, and every pin has a digest.
func checkLoads(t *testing.T, src string, tools []Tool) {
	t.Helper()
	for _, tool := range tools {
		raw := marshal(tool.Schema)
		if _, problems := contract.ParseVersion(filepath.Join(tool.ID, "schemas", "v"+Version+".json"), raw, tool.ID, Version); len(problems) > 0 {
			t.Fatalf("%s imports as %s, which the loader refuses: %v", src, raw, problems)
		}
		if tool.Pin == nil || tool.Pin.Digest() == "" {
			t.Fatalf("%s: %s has no pin digest", src, tool.ID)
		}
	}
}

// FuzzFromMCP: any tools/list answer imports or is refused without
// panicking, and what imports loads.
func FuzzFromMCP(f *testing.F) {
	f.Add(`{"tools":[{"name":"create_ticket","description":"Open a ticket.","inputSchema":{"type":"object","properties":{"subject":{"type":"string"}},"required":["subject"]},"outputSchema":{"type":"object","properties":{"id":{"type":"string"}}},"annotations":{"readOnlyHint":false}}]}`)
	f.Add(`{"tools":[{"name":"find","inputSchema":{"type":"object","$defs":{"k":{"type":"string","format":"uuid"}},"properties":{"k":{"$ref":"#/$defs/k"}}},"annotations":{"readOnlyHint":true}},{"name":"find.2","inputSchema":{"type":"object"}}]}`)
	f.Add(`{"tools":[{"name":"x","inputSchema":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"a":{"type":["string","null"],"items":[{"type":"integer"}]}},"definitions":{"d":{}}}}]}`)
	f.Add(`{"tools":[{"name":"Über Tool!","title":"t","inputSchema":{"type":"object","properties":{"a b":{"enum":[1,"1",null]}}}}]}`)
	f.Fuzz(func(t *testing.T, list string) {
		var res mcp.ListToolsResult
		if json.Unmarshal([]byte(list), &res) != nil {
			return
		}
		tools, err := FromMCP("http://127.0.0.1:7070/mcp", "fuzz", res.Tools, nil, fuzzOpts)
		if err != nil {
			return
		}
		checkLoads(t, list, tools)
	})
}

// FuzzFromOpenAPI: any document imports or is refused without panicking,
// and what imports loads. kin-openapi's coverage is not deterministic (map
// order), so fuzz it with -fuzzminimizetime 0: otherwise the worker spends
// its time minimizing inputs that only look new.
func FuzzFromOpenAPI(f *testing.F) {
	f.Add(`openapi: 3.0.3
info: {title: Helpdesk, version: "1"}
servers: [{url: "http://127.0.0.1:9000/api"}]
paths:
  /tickets/{id}:
    parameters: [{name: id, in: path, required: true, schema: {$ref: "#/components/schemas/Id"}}]
    post:
      operationId: updateTicket
      requestBody:
        content:
          application/json:
            schema:
              oneOf: [{$ref: "#/components/schemas/A"}, {$ref: "#/components/schemas/B"}]
      responses:
        "200": {description: ok, content: {application/json: {schema: {$ref: "#/components/schemas/A"}}}}
        "404": {description: no such ticket}
components:
  schemas:
    Id: {type: string, pattern: "^T-[0-9]+$"}
    A: {type: object, properties: {subject: {type: string, nullable: true}, next: {$ref: "#/components/schemas/A"}}}
    B: {type: object, required: [phone], properties: {phone: {type: string, format: int64}}}
`)
	f.Add(`{"openapi":"3.1.0","info":{"title":"Inventory","version":"1"},"paths":{"/items":{"get":{"operationId":"listItems","parameters":[{"name":"limit","in":"query","required":true,"schema":{"type":"integer","exclusiveMinimum":0}}],"responses":{"200":{"description":"ok","content":{"application/json":{"schema":{"type":"array","items":{"type":["string","null"]}}}}}}}}}}`)
	f.Add(`{"openapi":"3.0.0","info":{"title":"t","version":"1"},"paths":{"/a":{"delete":{"responses":{"default":{"description":"x"}}}}}}`)
	f.Add(opDoc(`{"$ref":"#/components/schemas/L0"}`, `"L0":{"type":"object","properties":{"a":{"$ref":"#/components/schemas/L1"},"b":{"$ref":"#/components/schemas/L1"}}},"L1":{"type":"object","properties":{"a":{"$ref":"#/components/schemas/L2"},"b":{"$ref":"#/components/schemas/L2"}}},"L2":{"type":"string"}`))
	f.Add(opDoc(`{"$ref":"../../etc/passwd#/x"}`, ""))
	f.Add(opDoc(`{"$ref":"#/components/schemas/A"}`, `"A":{"$ref":"#/components/schemas/B"},"B":{"$ref":"#/components/schemas/A"}`))
	f.Add("openapi: 3.0.3\ninfo: {title: t, version: '1'}\npaths:\n  /a:\n    post:\n      requestBody: {content: {application/x-www-form-urlencoded: {schema: {type: object, properties: {m: {type: object}}}, encoding: {m: {style: deepObject}}}}}\n      responses: {'200': {description: ok}}\nx-a: &a [1, 2, 3]\nx-b: [*a, *a, *a]\n")
	f.Fuzz(func(t *testing.T, doc string) {
		if len(doc) > 64<<10 {
			return
		}
		start := time.Now()
		res, err := FromOpenAPI(context.Background(), []byte(doc), filepath.Join(t.TempDir(), "fuzz.yaml"), nil, "", fuzzOpts)
		// The bound a hostile document must stay within: a generous time
		// (the machine may be loaded; an expansion takes minutes) and a
		// contract no larger than a fixed multiple of the document.
		if took := time.Since(start); took > 20*time.Second {
			t.Fatalf("a %d-byte document took %v to import", len(doc), took)
		}
		if err != nil {
			return
		}
		for _, tool := range res.Tools {
			if n := len(marshal(tool.Schema)); n > 64*len(doc)+64<<10 {
				t.Fatalf("a %d-byte document made a %d-byte contract", len(doc), n)
			}
		}
		checkLoads(t, fmt.Sprintf("%.200q", doc), res.Tools)
	})
}

// An upstream definition that makes no valid contract is refused with what
// is wrong with it, and an object schema without a type is made an object.
func TestFromMCPChecksTheContract(t *testing.T) {
	t.Parallel()
	var res mcp.ListToolsResult
	if err := json.Unmarshal([]byte(`{"tools":[
	  {"name":"bad","inputSchema":{"type":"object"},"outputSchema":{"type":"object","properties":{"id":{"type":"strinG"}}}},
	  {"name":"untyped","inputSchema":{"properties":{"a":{"type":"string"}}}},
	  {"name":"scalar","inputSchema":{"type":"string"}}]}`), &res); err != nil {
		t.Fatal(err)
	}
	if _, err := FromMCP("http://x/mcp", "s", res.Tools, []string{"bad"}, fuzzOpts); err == nil || !strings.Contains(err.Error(), `tool "bad": its definition does not make a valid contract`) {
		t.Errorf("an invalid outputSchema: %v", err)
	}
	tools, err := FromMCP("http://x/mcp", "s", res.Tools, []string{"untyped"}, fuzzOpts)
	if err != nil || tools[0].Schema["parameters"].(map[string]any)["type"] != "object" || len(tools[0].Notes) == 0 {
		t.Errorf("an untyped object inputSchema: %v %+v", err, tools)
	}
	if _, err := FromMCP("http://x/mcp", "s", res.Tools, []string{"scalar"}, fuzzOpts); err == nil || !strings.Contains(err.Error(), "its inputSchema is not an object schema") {
		t.Errorf("a scalar inputSchema: %v", err)
	}
}
