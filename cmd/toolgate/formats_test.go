package main

import (
	"encoding/json"
	"encoding/xml"
	"path/filepath"
	"strings"
	"testing"
)

// TestReportFormats renders lint, validate and lock in every --format a CI reads; JSON
// must decode and JUnit must be well-formed XML.
func TestReportFormats(t *testing.T) {
	t.Parallel()
	dir := fixtureDir(t)
	edit(t, dir, pay, `"description": "Support ticket documenting a service failure, e.g. TCK-1042."`, `"title": "ticket"`)
	writeFixtureFile(t, dir, "agent-tools/payments.issue_refund/contracts/golden/nothing.yaml", "case_id: nothing\ntool: {id: payments.issue_refund, version: 1.0.0}\n")
	locked := fixtureDir(t)
	if r := runCLI(t, "", "lock", filepath.Join(locked, "agent-tools")); r.code != exitOK {
		t.Fatalf("lock: %s", r)
	}
	edit(t, locked, pay, `"minimum": 1,`, `"minimum": 2,`)
	commands := map[string][]string{
		"lint":          {"lint", filepath.Join(dir, "agent-tools")},
		"validate":      {"validate", "--tool", "payments.issue_refund", "--dir", filepath.Join(dir, "agent-tools"), "-"},
		"lock_violated": {"lock", "--check", filepath.Join(locked, "agent-tools")},
		"lock_check":    {"lock", "--check", exampleTools},
	}
	for name, args := range commands {
		for _, format := range reportFormats {
			t.Run(name+"."+format, func(t *testing.T) {
				t.Parallel()
				r := runCLI(t, `{"order_id": "jane@example.com", "amount_minor": 9.99}`, append(args, "--format", format)...)
				if r.code == exitUsage {
					t.Fatalf("usage error: %s", r)
				}
				switch format {
				case "json":
					var v any
					if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
						t.Errorf("not JSON: %v\n%s", err, r.stdout)
					}
				case "junit":
					var s struct {
						XMLName xml.Name
						Tests   int `xml:"tests,attr"`
					}
					if err := xml.Unmarshal([]byte(r.stdout), &s); err != nil || s.XMLName.Local != "testsuite" || s.Tests == 0 {
						t.Errorf("not a JUnit suite (%v):\n%s", err, r.stdout)
					}
				}
				out := strings.ReplaceAll(strings.ReplaceAll(r.String(), dir, "$DIR"), locked, "$DIR")
				assertGoldenFile(t, filepath.Join("formats", name+"."+format+".golden"), out)
			})
		}
	}
}
