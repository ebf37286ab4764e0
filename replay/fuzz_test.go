package replay_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/replay"
)

// FuzzFromLog: whatever a decision log holds, FromLog never panics, gives at
// most one call per non-blank line, and judges every call it cannot replay
// with a reason; a call left to Run names its tool and carries arguments.
func FuzzFromLog(f *testing.F) {
	f.Add(`{"record_version":1,"tenant":"t","action_id":"k-00001","tool_id":"a.b","outcome":"executed","status_code":201,"arguments":{"x":1},"result_hash":"sha256:00","masked":[],"erased":[]}`)
	f.Add(`{"tool_id":"a.b","outcome":"unknown","action_id":"k"}` + "\n" + `{"tool_id":"a.b","outcome":"executed","action_id":"k","arguments":{},"status_code":200,"result":{}}`)
	f.Add(`{"tool_id":"a.b","outcome":"executed","action_id":"k","masked":["/arguments/a/~1"],"erased":["/result"]}`)
	f.Add("not json\n\n{}\n[]\nnull")
	f.Fuzz(func(t *testing.T, log string) {
		calls, err := replay.FromLog(strings.NewReader(log), replay.Filter{})
		if err != nil {
			return // a line longer than MaxLineBytes
		}
		lines := 0
		for _, l := range strings.Split(log, "\n") {
			if len(bytes.TrimSpace([]byte(l))) > 0 {
				lines++
			}
		}
		if len(calls) > lines {
			t.Fatalf("%d calls from %d lines", len(calls), lines)
		}
		for _, c := range calls {
			switch c.Verdict {
			case replay.Skipped, replay.NotReplayable:
				if c.Reason == "" {
					t.Fatalf("%s judged %s without a reason", c.Source, c.Verdict)
				}
			case "":
				if c.ToolID == "" || len(c.Arguments) == 0 {
					t.Fatalf("%s left to Run without a tool or arguments: %+v", c.Source, c)
				}
			default:
				t.Fatalf("%s: verdict %q", c.Source, c.Verdict)
			}
		}
	})
}
