package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// TestBenchCommand runs a tiny bench (so the command cannot rot) and checks
// the table and the JSON report.
func TestBenchCommand(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		json bool
	}{
		{name: "table", args: []string{"bench", "--quick", "--duration", "100ms", "--ledger", "sqlite-normal", "--workloads", "new,replay"}},
		{name: "json", args: []string{"bench", "--quick", "--ledger", "sqlite-full", "--workloads", "invalid,join", "--json"}, json: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out, errb sandboxOutput
			code := run(context.Background(), env{Args: tc.args, Stdout: &out, Stderr: &errb})
			if code != exitOK {
				t.Fatalf("exit %d\n%s\n%s", code, out.String(), errb.String())
			}
			if !tc.json {
				for _, want := range []string{"bare-proxy", "gateway/sqlite-normal", "x proxy", "replay"} {
					if !strings.Contains(out.String(), want) {
						t.Errorf("table lacks %q:\n%s", want, out.String())
					}
				}
				return
			}
			var rep struct {
				Rows []struct {
					Target, Workload string
					Requests, Errors int
				} `json:"rows"`
			}
			if err := json.Unmarshal([]byte(out.String()), &rep); err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			// proxy c=1,8; invalid c=1,8; join c=8
			if len(rep.Rows) != 5 {
				t.Fatalf("%d rows, want 5: %+v", len(rep.Rows), rep.Rows)
			}
			for _, r := range rep.Rows {
				if r.Requests == 0 || r.Errors != 0 {
					t.Errorf("row %+v", r)
				}
			}
		})
	}
}

func TestBenchUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "bad concurrency", args: []string{"bench", "--concurrency", "1,x"}, want: "--concurrency"},
		{name: "unknown ledger", args: []string{"bench", "--ledger", "mysql"}, want: `ledger "mysql"`},
		{name: "argument", args: []string{"bench", "extra"}, want: "unexpected argument"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out, errb sandboxOutput
			if code := run(context.Background(), env{Args: tc.args, Stdout: &out, Stderr: &errb}); code != exitUsage {
				t.Fatalf("exit %d, want %d", code, exitUsage)
			}
			if !strings.Contains(errb.String(), tc.want) {
				t.Errorf("stderr lacks %q:\n%s", tc.want, errb.String())
			}
		})
	}
}
