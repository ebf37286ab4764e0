package gateway

import (
	"strconv"
	"strings"
	"testing"
)

// FuzzStreamEventID: a Last-Event-ID header (any client's bytes) is read as
// STREAM_INDEX or refused; what is read formats back to the same id.
func FuzzStreamEventID(f *testing.F) {
	for _, s := range []string{"NKFHE6GKSHUO4FOIIT7VVKZJ5X_0", "abc_12", "_1", "a_", "a_-1", "a_b_1", "a_01", "", "x_99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, eid string) {
		sid, idx, ok := parseStreamEventID(eid)
		if !ok {
			return
		}
		if sid == "" || idx < 0 || strings.Contains(sid, "_") {
			t.Fatalf("%q read as %q, %d", eid, sid, idx)
		}
		if back := sid + "_" + strconv.Itoa(idx); back != eid {
			t.Fatalf("%q read as %q, %d, which formats as %q", eid, sid, idx, back)
		}
	})
}

// FuzzToolsCallID: any request body is either one tools/call request with an
// id, or passed on untouched; never a panic.
func FuzzToolsCallID(f *testing.F) {
	for _, s := range []string{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}`, `{"id":null,"method":"tools/call"}`,
		`[{"id":1,"method":"tools/call"}]`, `{"method":"tools/list","id":"x"}`, ``, `{`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		id, ok := toolsCallID(body)
		if ok && (len(id) == 0 || string(id) == "null") {
			t.Fatalf("%q: a tools/call with id %q", body, id)
		}
	})
}
