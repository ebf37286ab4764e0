package lockfile_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/lockfile"
)

func TestDefinitionDigestIgnoresFormatting(t *testing.T) {
	t.Parallel()
	a, err1 := lockfile.DefinitionDigest([]byte(`{"name":"x","inputSchema":{"type":"object"}}`))
	b, err2 := lockfile.DefinitionDigest([]byte("{\n  \"inputSchema\": {\"type\": \"object\"},\n  \"name\": \"x\"\n}"))
	c, _ := lockfile.DefinitionDigest([]byte(`{"name":"y","inputSchema":{"type":"object"}}`))
	if err1 != nil || err2 != nil || a != b || a == c {
		t.Fatalf("%s %s %s %v %v", a, b, c, err1, err2)
	}
}

// A pin is written with its lock entry; a hand edit of its definition is
// refused by CheckPin and by toolgate lock (Build), which keeps the pins.
func TestPinLifecycle(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src, _ := filepath.Abs("../examples/agent-tools/orders.get_order")
	copyDir(t, src, filepath.Join(dir, "orders.get_order"))
	lock := &lockfile.Lock{LockVersion: lockfile.FormatVersion}
	pin := &lockfile.Pin{PinVersion: 1, ToolID: "orders.get_order", Source: lockfile.Source{Kind: lockfile.SourceMCP, URL: "http://u/mcp", Tool: "get_order"},
		Definition: []byte(`{"name":"get_order","inputSchema":{"type":"object"}}`), Todo: []string{lockfile.TodoRules}}
	now := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	if err := lockfile.WritePin(dir, lock, pin, "toolgate import", now); err != nil {
		t.Fatal(err)
	}
	if err := lockfile.WriteLock(dir, lock); err != nil {
		t.Fatal(err)
	}
	if p, err := lockfile.CheckPin(dir, "orders.get_order", lock); err != nil || p == nil || p.Todo[0] != "rules" {
		t.Fatalf("fresh pin: %v %+v", err, p)
	}
	reg, err := contract.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	built, err := lockfile.Build(reg, lock, lockfile.BuildOptions{Now: func() time.Time { return now }})
	if err != nil || built.FindPin("orders.get_order") == nil || len(built.Versions) != 1 {
		t.Fatalf("lock keeps the pin and adds the version: %v %+v", err, built)
	}
	parsed, err := lockfile.Parse(built.Marshal())
	if err != nil || parsed.FindPin("orders.get_order").Digest != pin.Digest() {
		t.Fatalf("round trip: %v", err)
	}
	// A hand edit of the definition.
	path := filepath.Join(dir, "orders.get_order", lockfile.PinFileName)
	data, _ := os.ReadFile(path)
	os.WriteFile(path, []byte(strings.Replace(string(data), `"object"`, `"array"`, 1)), 0o644)
	if _, err := lockfile.CheckPin(dir, "orders.get_order", lock); err == nil || !strings.Contains(err.Error(), "upstream accept") {
		t.Fatalf("edited pin: %v", err)
	}
	if _, err := lockfile.Build(reg, lock, lockfile.BuildOptions{}); err == nil || !strings.Contains(err.Error(), "edited in place") {
		t.Fatalf("lock over an edited pin: %v", err)
	}
	forced, err := lockfile.Build(reg, lock, lockfile.BuildOptions{Force: true})
	if err != nil || forced.FindPin("orders.get_order").PinnedBy != "toolgate lock --force" || forced.FindPin("orders.get_order").Previous != pin.Digest() {
		t.Fatalf("forced: %v %+v", err, forced.FindPin("orders.get_order"))
	}
	// The todo may change freely: it is not part of the digest.
	os.WriteFile(path, data, 0o644)
	p2, _ := lockfile.ReadPin(dir, "orders.get_order")
	p2.Todo = nil
	os.WriteFile(path, p2.Marshal(), 0o644)
	if _, err := lockfile.CheckPin(dir, "orders.get_order", lock); err != nil {
		t.Fatalf("todo edited: %v", err)
	}
}

func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if fi.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
}
