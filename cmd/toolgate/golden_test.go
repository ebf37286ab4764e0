package main

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

// update makes the golden-file tests of every subcommand rewrite their files:
// go test ./cmd/toolgate -update.
var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// assertGoldenFile compares got with testdata/<path>, rewriting it under -update.
func assertGoldenFile(t *testing.T, path, got string) {
	t.Helper()
	path = filepath.Join("testdata", path)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (go test -update rewrites it)\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}
