package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/testrig"
)

// TestServeWithoutConfigServesTheBundledExamples runs `toolgate serve` in an
// empty working directory: no toolgate.yaml and no ./agent-tools, so it reads
// the examples embedded in the binary (nothing is extracted to disk) and binds
// them to the built-in sandbox.
func TestServeWithoutConfigServesTheBundledExamples(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb testrig.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, env{Args: []string{"serve", "--listen", "127.0.0.1:0"}, Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb})
	}()
	addr := regexp.MustCompile(`listening on (http://\S+) \(tools the bundled examples`)
	var base string
	for deadline := time.Now().Add(10 * time.Second); base == ""; time.Sleep(5 * time.Millisecond) {
		if m := addr.FindStringSubmatch(errb.String()); m != nil {
			base = m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("no listening line naming the bundled examples; stderr %q", errb.String())
		}
	}
	resp, err := http.Get(base + "/v1/export?format=mcp")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var x struct {
		Names map[string]string `json:"names"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(body, &x) != nil || x.Names["payments.issue_refund"] == "" {
		t.Fatalf("export: %d %s", resp.StatusCode, body)
	}
	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Fatalf("exit %d; stderr %s", code, errb.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			t.Errorf("serve wrote a directory %s into the working directory", e.Name())
		}
	}
}
