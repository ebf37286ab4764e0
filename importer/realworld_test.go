package importer

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

func TestProfileGitHub(t *testing.T) {
	if os.Getenv("I29_PROFILE") == "" {
		t.Skip()
	}
	file := filepath.Join("testdata", "realworld", "node_modules", "@octokit", "openapi", "generated", "api.github.com.json")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	res, err := FromOpenAPI(context.Background(), data, file, nil, "", fuzzOpts)
	if err != nil {
		t.Fatal(err)
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	t.Logf("FromOpenAPI %v, %d tools, heap sys %d MB", time.Since(start), len(res.Tools), ms.HeapSys>>20)
	dir := t.TempDir()
	start = time.Now()
	if err := Write(dir, res.Tools, time.Now()); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&ms)
	t.Logf("Write %v heap sys %d MB", time.Since(start), ms.HeapSys>>20)
}

func TestProfileGitHubFew(t *testing.T) {
	if os.Getenv("I29_PROFILE") == "" {
		t.Skip()
	}
	file := filepath.Join("testdata", "realworld", "node_modules", "@octokit", "openapi", "generated", "api.github.com.json")
	data, _ := os.ReadFile(file)
	start := time.Now()
	v, err := parseDoc(data)
	t.Logf("parse %v %v", time.Since(start), err)
	_ = v
	start = time.Now()
	res, err := FromOpenAPI(context.Background(), data, file, []string{"issues/create", "pulls/create", "repos/get"}, "", fuzzOpts)
	t.Logf("FromOpenAPI %v %v", time.Since(start), err)
	start = time.Now()
	Write(t.TempDir(), res.Tools, time.Now())
	t.Logf("Write %v", time.Since(start))
}
