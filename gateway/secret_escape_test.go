package gateway_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/gateway/gatewaytest"
	"github.com/toolgate/toolgate/invoke"
)

// A downstream's error answer repeats the call's sensitive argument escaped
// — as a JSON \u escape, nested in a JSON string, percent-encoded — in a
// text body and in a JSON body. The action read shows nothing a reader
// would decode to the value: not the plain form, not the escaped ones.
func TestActionReadScrubsEscapedSensitiveValues(t *testing.T) {
	t.Parallel()
	const account = "acct-5ecret-4711"
	bodies := map[string]struct{ ct, body string }{
		"text": {"text/plain; charset=utf-8", `refused: account \u0061cct-5ecret-4711 (also %61cct%2D5ecret-4711 and ` + account + `)`},
		"json": {"application/json", `{"error":"{\"account\":\"\\u0061cct-5ecret-4711\"}","hint":"account=%61cct-5ecret-4711"}`},
	}
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := bodies[r.URL.Query().Get("kind")]
		w.Header().Set("Content-Type", b.ct)
		w.WriteHeader(http.StatusUnprocessableEntity)
		fmt.Fprint(w, b.body)
	}))
	t.Cleanup(down.Close)
	// A tool with a sensitive argument and no sensitive result value: its
	// text results are shown (scrubbed), not erased.
	reg, _ := writeTools(t, map[string]string{"vault.plain/schemas/v1.0.0.json": schemaFile("vault.plain", "1.0.0", "mutating",
		`{"type":"object","required":["account","note"],"properties":{"account":{"type":"string","x-sensitive":true},"amount":{"type":"integer"},"note":{"type":"string"}}}`, "")})
	g := newRig(t, func(c *gatewaytest.Config) {
		c.Registry, c.Keys = reg, secKeys()
		c.Bindings = map[string]invoke.Binding{"vault.plain": {URL: down.URL + "/plain?kind={args.note}", Timeout: 2 * time.Second, SettleAfter: time.Hour}}
	})
	for kind := range bodies {
		key := "esc-scrub-" + kind
		r := g.do("POST", "/v1/tools/vault.plain/calls", `{"arguments":{"account":"`+account+`","amount":5,"note":"`+kind+`"}}`,
			"Authorization", "Bearer "+secAgentAll, "Idempotency-Key", key)
		if r.status != 422 {
			t.Fatalf("%s: the call: %d %s", kind, r.status, r.body)
		}
		read := g.do("GET", "/v1/actions/"+key, "", "Authorization", "Bearer "+secOncallAll)
		if read.status != 200 {
			t.Fatalf("%s: read: %d %s", kind, read.status, read.body)
		}
		for _, reading := range decodeReadings(string(read.body)) {
			if strings.Contains(reading, account) {
				t.Errorf("%s: the action read decodes to the sensitive value:\n%s", kind, read.body)
				break
			}
		}
	}
}

// decodeReadings are what a reader decodes from a JSON document s: its
// strings, and each with up to three layers of escapes undone (a JSON or
// Go string's escapes, then the valid percent escapes).
func decodeReadings(s string) []string {
	out := []string{s}
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return out
	}
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			for range 4 {
				out = append(out, x)
				if u, err := strconv.Unquote(`"` + x + `"`); err == nil {
					x = u
				} else if u, err := strconv.Unquote(`"` + strings.ReplaceAll(x, `"`, `\"`) + `"`); err == nil {
					x = u
				}
				x = pctValid.ReplaceAllStringFunc(x, func(m string) string { u, _ := url.PathUnescape(m); return u })
			}
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return out
}

var pctValid = regexp.MustCompile(`%[0-9A-Fa-f]{2}`)
