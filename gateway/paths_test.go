package gateway_test

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
)

// An argument in a URL path segment is escaped for its segment and is never
// a dot segment ("." or ".."), which a downstream resolving dot segments
// would read as another path: such a call is refused (422 dot_segment) before
// its key is consumed or anything is sent.

func TestDotSegmentArgumentsAreRefused(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t)
	g := newRig(t, withLimitTools(t, rec))
	for i, v := range []string{"..", "."} {
		key := "dot-key-000" + string(rune('1'+i))
		r := g.transfer(key, `{"account":"`+v+`","amount":1}`)
		p := r.wantProblem(t, 422, "invalid_arguments")
		e := p["errors"].([]any)[0].(map[string]any)
		if e["pointer"] != "/account" || e["code"] != "dot_segment" {
			t.Fatalf("%q: %s", v, r.body)
		}
		// The key was not consumed.
		if r := g.transfer(key, `{"account":"acc-1","amount":1}`); r.status != 200 {
			t.Fatalf("after the refusal: %d %s", r.status, r.body)
		}
		r = g.do("POST", "/v1/tools/"+balanceTool+"/calls", `{"arguments":{"account":"`+v+`"}}`)
		r.wantProblem(t, 422, "invalid_arguments")
	}
	for _, r := range rec.requests() {
		if strings.Contains(r.RequestURI, "/./") || strings.Contains(r.RequestURI, "/../") || strings.HasSuffix(r.RequestURI, "/..") || strings.HasSuffix(r.RequestURI, "/.") {
			t.Fatalf("the downstream saw %s %s", r.Method, r.RequestURI)
		}
	}
	if n := len(rec.calls()); n != 2 {
		t.Fatalf("%d calls reached the downstream, want the 2 valid ones", n)
	}
}

// Held: every character a value may carry stays inside its path segment.
func TestPathArgumentsStayInTheirSegment(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t)
	g := newRig(t, withLimitTools(t, rec))
	values := []string{"a/b", "a?b=c", "a#frag", "100%", "50%2F", "%2e%2e", "user@evil.example", "x\r\nHost: evil.example",
		"ünïcødé 😀", "...", "a b", "..%2f", "\\..\\", ".a"}
	for i, v := range values {
		arg, _ := json.Marshal(v)
		key := "path-key-" + strings.Repeat("0", 4) + string(rune('a'+i))
		if r := g.transfer(key, `{"account":`+string(arg)+`}`); r.status != 200 {
			t.Fatalf("%q: %d %s", v, r.status, r.body)
		}
	}
	calls := rec.calls()
	if len(calls) != len(values) {
		t.Fatalf("%d calls for %d values", len(calls), len(values))
	}
	for i, c := range calls {
		if c.Header.Get("Host") != "" && !strings.HasPrefix(rec.url, "http://"+c.Header.Get("Host")) {
			t.Errorf("%q: Host %q", values[i], c.Header.Get("Host"))
		}
		rest, ok := strings.CutPrefix(c.RequestURI, "/accounts/")
		seg, ok2 := strings.CutSuffix(rest, "/transfers")
		if !ok || !ok2 || strings.ContainsAny(seg, "/?#\r\n ") {
			t.Errorf("%q reached the downstream as %q", values[i], c.RequestURI)
			continue
		}
		if got, err := url.PathUnescape(seg); err != nil || got != values[i] {
			t.Errorf("%q arrived as segment %q (%q, %v)", values[i], seg, got, err)
		}
	}
}
