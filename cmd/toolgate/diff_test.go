package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestDiffCommand runs `toolgate diff` through the command dispatcher, as a user would,
// and compares what it prints with golden files under testdata/diff/.
func TestDiffCommand(t *testing.T) {
	t.Parallel()
	td := filepath.Join("testdata", "diff")
	tools := filepath.Join(td, "tools")
	schemas := filepath.Join(tools, "refund.create_request", "schemas")
	v210, v220, v230 := filepath.Join(schemas, "v2.1.0.json"), filepath.Join(schemas, "v2.2.0.json"), filepath.Join(schemas, "v2.3.0.json")
	oldS, newS := filepath.Join(td, "old.schema.json"), filepath.Join(td, "new.schema.json")
	old07, new07 := filepath.Join(td, "draft07.old.json"), filepath.Join(td, "draft07.new.json")
	oldPat, newPat := filepath.Join(td, "pattern.old.json"), filepath.Join(td, "pattern.new.json")
	tests := []struct {
		name     string
		args     []string
		code     int
		golden   string // compared with stdout when set
		inStderr string
	}{
		{name: "tool versions text", args: []string{"refund.create_request@2.1.0", "refund.create_request@2.2.0", "--dir", tools}, code: exitNegative, golden: "tool_versions.text"},
		{name: "tool versions json", args: []string{"refund.create_request@2.1.0", "refund.create_request@2.2.0", "--dir", tools, "--format", "json"}, code: exitNegative, golden: "tool_versions.json"},
		{name: "tool versions markdown", args: []string{"refund.create_request@2.1.0", "refund.create_request@2.2.0", "--dir", tools, "--format", "markdown"}, code: exitNegative, golden: "tool_versions.markdown"},
		{name: "tool versions junit", args: []string{"refund.create_request@2.1.0", "refund.create_request@2.2.0", "--dir", tools, "--format", "junit"}, code: exitNegative, golden: "tool_versions.junit"},
		{name: "compatible versions", args: []string{"refund.create_request@2.2.0", "refund.create_request@v2.3.0", "--dir", tools}, code: exitOK, golden: "compatible_versions.text"},
		{name: "contract files read owner.yaml", args: []string{v210, v220, "--format", "json"}, code: exitNegative, golden: "tool_versions.json"},
		{name: "contract files with consumers override", args: []string{"--consumers", "0", v210, v220}, code: exitNegative, golden: "contract_files_no_consumers.text"},
		{name: "compatible contract files", args: []string{v220, v230}, code: exitOK, golden: "compatible_versions.text"},
		{name: "plain schemas as input", args: []string{oldS, newS, "--direction", "input"}, code: exitNegative, golden: "schemas_input.text"},
		{name: "plain schemas as output", args: []string{oldS, newS, "--direction", "output", "--format", "junit"}, code: exitNegative, golden: "schemas_output.junit"},
		{name: "same schema", args: []string{oldS, oldS, "--direction", "output", "--format", "json"}, code: exitOK, golden: "same_schema.json"},
		{name: "draft-07 schemas as input", args: []string{old07, new07, "--direction", "input"}, code: exitNegative, golden: "draft07_input.text"},
		{name: "draft-07 schemas as output", args: []string{old07, new07, "--direction", "output", "--format", "json"}, code: exitNegative, golden: "draft07_output.json"},
		{name: "undecided pattern", args: []string{oldPat, newPat, "--direction", "input", "--format", "markdown"}, code: exitNegative, golden: "pattern_undecided.markdown"},
		{name: "help", args: []string{"--help"}, code: exitOK, golden: "help"},
		{name: "no arguments", args: nil, code: exitUsage, inStderr: "need OLD and NEW"},
		{name: "plain schemas need a direction", args: []string{oldS, newS}, code: exitUsage, inStderr: "--direction"},
		{name: "bad direction", args: []string{oldS, newS, "--direction", "sideways"}, code: exitUsage, inStderr: "--direction"},
		{name: "bad format", args: []string{v210, v220, "--format", "yaml"}, code: exitUsage, inStderr: "unknown --format"},
		{name: "contract against plain schema", args: []string{v210, oldS}, code: exitUsage, inStderr: "cannot compare"},
		{name: "direction with contracts", args: []string{v210, v220, "--direction", "input"}, code: exitUsage, inStderr: "--direction"},
		{name: "missing file", args: []string{filepath.Join(td, "nope.json"), v220}, code: exitUsage, inStderr: "nope.json"},
		{name: "unknown tool", args: []string{"nope@1.0.0", "nope@1.1.0", "--dir", tools}, code: exitUsage, inStderr: `no tool "nope"`},
		{name: "unknown version", args: []string{"refund.create_request@1.0.0", "refund.create_request@2.2.0", "--dir", tools}, code: exitUsage, inStderr: "no version"},
		{name: "missing tools directory", args: []string{"a@1.0.0", "a@1.1.0", "--dir", filepath.Join(td, "missing")}, code: exitUsage, inStderr: "load"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), env{Args: append([]string{"diff"}, tt.args...), Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr})
			if code != tt.code {
				t.Fatalf("exit code = %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, stdout.String(), stderr.String())
			}
			if tt.inStderr != "" && !strings.Contains(stderr.String(), tt.inStderr) {
				t.Errorf("stderr %q does not mention %q", stderr.String(), tt.inStderr)
			}
			if tt.golden == "" {
				return
			}
			assertGoldenFile(t, filepath.Join("diff", tt.golden+".golden"), stdout.String())
		})
	}
}
