package upstream_test

import (
	"context"
	"testing"
	"time"

	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/upstream"
	"github.com/toolgate/toolgate/upstream/upstreamtest"
)

// An answer is the server's own bytes: a big integer is not rounded, keys
// keep their order, '<' and '&' and escapes stay as written — whether the
// answer came as one JSON body or in an event stream, for a call and for a
// lookup.
func TestAnswerIsTheUpstreamsBytes(t *testing.T) {
	t.Parallel()
	const structured = `{"z":12345678901234567891,"a":"<b>&\u00e9","n":1.0e2, "list":[3,2,1]}`
	cases := []struct {
		name, result, want, contentType string
	}{
		{"structuredContent", `{"content":[{"type":"text","text":"ignored"}],"structuredContent":` + structured + `}`, structured, "application/json"},
		{"structured array", `{"content":[],"structuredContent":[12345678901234567891,"<"]}`, `[12345678901234567891,"<"]`, "application/json"},
		{"text that is JSON", `{"content":[{"type":"text","text":"{\"z\":12345678901234567891,\"a\":\"<\"}"}]}`, `{"z":12345678901234567891,"a":"<"}`, "application/json"},
		{"content blocks", `{"content":[{"type":"text","text":"<one>"},{"type":"text","text":"two","_meta":{"z":12345678901234567891,"a":1}}]}`,
			`{"content":[{"type":"text","text":"<one>"},{"type":"text","text":"two","_meta":{"z":12345678901234567891,"a":1}}]}`, "application/json"},
	}
	for _, tc := range cases {
		for _, sse := range []bool{false, true} {
			name := tc.name + map[bool]string{false: " (json)", true: " (event stream)"}[sse]
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				srv := upstreamtest.Start(t, true, false)
				pool := upstream.NewPool(upstream.Config{})
				t.Cleanup(pool.Close)
				inv := upstream.NewInvoker(pool)
				b := binding(srv.URL, 5*time.Second)
				srv.RawAnswer(tc.result, sse)
				res := inv.Call(context.Background(), request(b, "key-raw-1", ticketArgs))
				if res.Outcome != ledger.Answered || res.StatusCode != 200 {
					t.Fatalf("%+v", res)
				}
				if string(res.Body) != tc.want || res.ContentType != tc.contentType {
					t.Fatalf("body %s (%s)\nwant %s (%s)", res.Body, res.ContentType, tc.want, tc.contentType)
				}
				srv.RawAnswer(tc.result, sse)
				lr := inv.Lookup(context.Background(), request(b, "key-raw-1", ""))
				if !lr.Found || string(lr.Body) != tc.want {
					t.Fatalf("lookup %+v: %s, want %s", lr, lr.Body, tc.want)
				}
			})
		}
	}
}
