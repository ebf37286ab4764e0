package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolgate/toolgate/gateway"
)

// An MCP tools/call answered by a deprecated version carries the deprecation
// in _meta, with the values of the one-shot answer's Deprecation and Sunset
// headers; one served by a current version carries neither.
func TestMCPResultNamesADeprecatedVersion(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 1, fleetOption{noTicks: true})
	const tool = "notes.create"
	if err := f.servers[0].Calls().RolloutTick(t.Context()); err != nil {
		t.Fatal(err)
	}
	old := f.call(0, fleetCS, tool, "mcp-old-action-1", `{"version":"0.9.0","arguments":{"ticket":"T-9"}}`)
	if old.status != 201 || old.header.Get("Deprecation") == "" {
		t.Fatalf("a call on the deprecated 0.9.0: %d, Deprecation %q", old.status, old.header.Get("Deprecation"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "toolgate-go-test", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: f.urls[0] + "/mcp", HTTPClient: &http.Client{Transport: bearerTransport{fleetCS}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func(key, args string) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(args), Meta: mcp.Meta{gateway.MCPKeyMeta: key}})
		if err != nil {
			t.Fatalf("tools/call: %v", err)
		}
		return res
	}
	// The same action through MCP: replayed, served by 0.9.0.
	res := call("mcp-old-action-1", `{"ticket":"T-9"}`)
	if res.IsError || res.Meta["toolgate/replayed"] != true {
		t.Fatalf("the replay through MCP: %+v", res)
	}
	for k, want := range map[string]string{
		gateway.MCPMetaDeprecation:       old.header.Get("Deprecation"),
		gateway.MCPMetaSunset:            old.header.Get("Sunset"),
		gateway.MCPMetaDeprecatedVersion: "0.9.0",
	} {
		if got := fmt.Sprint(res.Meta[k]); got != want {
			t.Errorf("_meta %s = %q, want %q", k, got, want)
		}
	}
	// A new action is served by the default version: no deprecation.
	res = call("mcp-new-action-1", `{"ticket":"T-1","text":"x"}`)
	if res.IsError {
		t.Fatalf("a new action through MCP: %+v", res)
	}
	if _, ok := res.Meta[gateway.MCPMetaDeprecation]; ok {
		t.Errorf("a current version's result is marked deprecated: %+v", res.Meta)
	}
}
