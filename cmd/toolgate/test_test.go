package main

import (
	"encoding/json"
	"encoding/xml"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/casetest"
)

// TestTestCommand runs toolgate test on the bundled examples in every format.
func TestTestCommand(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		args   []string
		code   int
		golden string
	}{
		{name: "cross-version text", args: []string{"test", exampleTools, "--tool", "refund.create_request", "--from", "2.1.0", "--to", "2.2.0"}, code: exitNegative, golden: "refund_2.1_2.2.text.golden"},
		{name: "cross-version json", args: []string{"test", exampleTools, "--tool", "refund.create_request", "--from", "2.1.0", "--to", "2.2.0", "--format", "json"}, code: exitNegative, golden: "refund_2.1_2.2.json.golden"},
		{name: "cross-version junit", args: []string{"test", exampleTools, "--tool", "refund.create_request", "--from", "2.1.0", "--to", "2.2.0", "--format", "junit"}, code: exitNegative, golden: "refund_2.1_2.2.junit.golden"},
		{name: "cross-version markdown", args: []string{"test", exampleTools, "--tool", "refund.create_request", "--from", "2.1.0", "--to", "2.2.0", "--format", "markdown"}, code: exitNegative, golden: "refund_2.1_2.2.markdown.golden"},
		{name: "every tool", args: []string{"test", "--dir", exampleTools}, code: exitNegative, golden: "all.text.golden"},
		{name: "one version", args: []string{"test", exampleTools, "--tool", "refund.create_request", "--version", "2.1.0"}, code: exitOK, golden: "refund_2.1.text.golden"},
		{name: "compatible fixture", args: []string{"test", "testdata/gate/compatible", "--tool", "refund.create_request", "--from", "2.1.0", "--to", "2.2.0"}, code: exitOK, golden: "compatible.text.golden"},
		{name: "unknown format", args: []string{"test", exampleTools, "--format", "xml"}, code: exitUsage, golden: "unknown_format.golden"},
		{name: "from without tool", args: []string{"test", exampleTools, "--from", "2.1.0"}, code: exitUsage, golden: "from_without_tool.golden"},
		{name: "unknown version", args: []string{"test", exampleTools, "--tool", "refund.create_request", "--to", "9.9.9"}, code: exitUsage, golden: "unknown_version.golden"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := runCLI(t, "", tt.args...)
			if got.code != tt.code {
				t.Fatalf("exit %d, want %d\n%s", got.code, tt.code, got)
			}
			out := got.stdout
			if tt.code == exitUsage {
				out = got.String()
			}
			assertGoldenFile(t, filepath.Join("test", tt.golden), out)
		})
	}
}

// TestTestJUnitParses reads the JUnit report back the way a CI system does.
func TestTestJUnitParses(t *testing.T) {
	t.Parallel()
	got := runCLI(t, "", "test", exampleTools, "--tool", "refund.create_request", "--from", "2.1.0", "--to", "2.2.0", "--format", "junit")
	// A plain JUnit schema, independent of the writer's types.
	var doc struct {
		XMLName  xml.Name `xml:"testsuites"`
		Tests    int      `xml:"tests,attr"`
		Failures int      `xml:"failures,attr"`
		Suites   []struct {
			Name     string `xml:"name,attr"`
			Tests    int    `xml:"tests,attr"`
			Failures int    `xml:"failures,attr"`
			Cases    []struct {
				Name      string `xml:"name,attr"`
				Classname string `xml:"classname,attr"`
				Failure   []struct {
					Message string `xml:"message,attr"`
					Type    string `xml:"type,attr"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal([]byte(got.stdout), &doc); err != nil {
		t.Fatalf("JUnit does not parse: %v\n%s", err, got.stdout)
	}
	if doc.Tests != 5 || doc.Failures != 1 || len(doc.Suites) != 3 {
		t.Fatalf("tests %d failures %d suites %d", doc.Tests, doc.Failures, len(doc.Suites))
	}
	cases, failures := 0, 0
	for _, s := range doc.Suites {
		cases += len(s.Cases)
		for _, c := range s.Cases {
			if c.Name == "" || c.Classname == "" {
				t.Fatalf("testcase without name or classname: %+v", c)
			}
			for _, f := range c.Failure {
				failures++
				if f.Message != "Missing approval_channel in old prompt path" || f.Type != "arguments" {
					t.Fatalf("failure %+v", f)
				}
			}
		}
	}
	if cases != doc.Tests || failures != doc.Failures {
		t.Fatalf("counts disagree: %d cases, %d failures", cases, failures)
	}
	var typed casetest.JUnitSuites
	if err := xml.Unmarshal([]byte(got.stdout), &typed); err != nil || typed.Tests != 5 {
		t.Fatalf("typed parse: %v", err)
	}
}

// TestTestWithModel runs toolgate test against a scripted OpenAI-compatible server that
// claims success on a pending_review result.
func TestTestWithModel(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
			Tools []struct {
				Function struct{ Name string } `json:"function"`
			} `json:"tools"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		name := ""
		for _, tl := range req.Tools {
			if strings.HasPrefix(tl.Function.Name, "refund") {
				name = tl.Function.Name
			}
		}
		msg := map[string]any{"role": "assistant", "content": "Refund successful."}
		if req.Messages[len(req.Messages)-1].Role == "user" {
			msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
				"id": "c1", "type": "function", "function": map[string]any{"name": name,
					"arguments": `{"order_id":"ord_123","reason_code":"customer_request","approval_channel":"chat"}`}}}}
		}
		json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": msg}}})
	}))
	defer srv.Close()
	got := runCLI(t, "", "test", exampleTools, "--tool", "refund.create_request", "--from", "2.1.0", "--model-url", srv.URL+"/v1", "--format", "json")
	if got.code != exitNegative {
		t.Fatalf("exit %d\n%s", got.code, got)
	}
	var out struct {
		Reports []casetest.Report `json:"reports"`
	}
	if err := json.Unmarshal([]byte(got.stdout), &out); err != nil {
		t.Fatal(err)
	}
	var causes []string
	for _, c := range out.Reports[0].Cases {
		if c.ID == "refund_pending_review_not_success" {
			for _, f := range c.Failures {
				causes = append(causes, f.Check+": "+f.Cause)
			}
		}
	}
	want := `must_not_include: Agent text says "Refund successful."`
	if !strings.Contains(strings.Join(causes, "\n"), want) {
		t.Fatalf("causes %q lack %q", causes, want)
	}
}
