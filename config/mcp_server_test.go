package config

import (
	"strings"
	"testing"
	"time"
)

func TestMCPServerSettings(t *testing.T) {
	t.Parallel()
	c, err := Parse([]byte("mcp: {key_argument: \"off\", task_after: 250ms}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.MCP.KeyArgument != MCPKeyArgumentOff || c.MCP.TaskAfter != 250*time.Millisecond {
		t.Fatalf("parsed %+v", c.MCP)
	}
	c, err = Parse([]byte("listen: 127.0.0.1:8080\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.MCP.KeyArgument != MCPKeyArgumentAuto || c.MCP.TaskAfter != time.Second {
		t.Fatalf("defaults %+v", c.MCP)
	}
	for _, bad := range []struct{ doc, want string }{
		{"mcp: {key_argument: sometimes}\n", "mcp.key_argument"},
		{"mcp: {task_after: -1s}\n", "mcp.task_after"},
		{"mcp: {task_after: 1h}\n", "mcp.task_after"},
		{"mcp: {tasks: on}\n", "unknown field"},
	} {
		if _, err := Parse([]byte(bad.doc)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: %v, want a problem naming %s", bad.doc, err, bad.want)
		}
	}
}
