package gateway_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/api"
)

// TestRolloutRequestsAreBounded (issue 30, item 11): a canary naming more
// principals than the limit, a note past its size and a body past the cap
// are refused with 413 and leave the rollout as it was; an explicit
// halt_margin of 0 is kept by a later canary change that omits it.
func TestRolloutRequestsAreBounded(t *testing.T) {
	t.Parallel()
	g := newRig(t)
	const path = "/v1/rollouts/refund.create_request/"
	many := make([]string, 101)
	for i := range many {
		many[i] = fmt.Sprintf("agent-%03d", i)
	}
	huge := make([]string, 80000)
	for i := range huge {
		huge[i] = fmt.Sprintf("p%05d", i)
	}
	for _, tc := range []struct{ name, action, body string }{
		{"101 principals", "canary", `{"version":"2.1.0","principals":` + js(many) + `}`},
		{"80,000 principals", "canary", `{"version":"2.1.0","principals":` + js(huge) + `}`},
		{"a long principal", "canary", `{"version":"2.1.0","principals":["` + strings.Repeat("p", 129) + `"]}`},
		{"a 2 KiB note", "shadow", `{"version":"2.1.0","note":"` + strings.Repeat("n", 2048) + `"}`},
		{"a 1 MB note", "halt", `{"note":"` + strings.Repeat("n", 1<<20) + `"}`},
		{"a long approver", "promote", `{"version":"2.1.0","approver":"` + strings.Repeat("a", 200) + `"}`},
	} {
		g.do("POST", path+tc.action, tc.body).wantProblem(t, 413, "request_too_large")
	}
	var st api.Rollout
	json.Unmarshal(g.do("GET", path[:len(path)-1], "").body, &st)
	if st.Revision != 0 {
		t.Fatalf("a refused request changed the rollout: %+v", st)
	}
	if r := g.do("POST", path+"canary", `{"version":"2.1.0","percent":10,"halt_margin":0}`); r.status != 200 {
		t.Fatalf("canary: %d %s", r.status, r.body)
	}
	r := g.do("POST", path+"canary", `{"percent":30}`)
	json.Unmarshal(r.body, &st)
	if r.status != 200 || st.Canary == nil || st.Canary.HaltMargin != 0 || st.Canary.Percent != 30 {
		t.Fatalf("halt_margin 0 was not kept: %d %s", r.status, r.body)
	}
}
