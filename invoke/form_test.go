package invoke

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/ledger"
)

func decodeJSON(t testing.TB, s string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestEncodeForm(t *testing.T) {
	t.Parallel()
	f, tr := false, true
	cases := []struct {
		name, args string
		enc        map[string]FormField
		want       string
	}{
		{"scalars in name order, numbers as sent", `{"b":true,"a":"x y&z","n":12345678901234567891,"f":0.1,"z":null}`, nil,
			"a=x+y%26z&b=true&f=0.1&n=12345678901234567891&z="},
		{"array of scalars: form, explode", `{"tags":["a","b"]}`, nil, "tags=a&tags=b"},
		{"array of scalars: explode false", `{"tags":["a","b"]}`, map[string]FormField{"tags": {Explode: &f}}, "tags=a%2Cb"},
		{"array: pipeDelimited", `{"tags":["a","b"]}`, map[string]FormField{"tags": {Style: StylePipeDelimited}}, "tags=a%7Cb"},
		{"array: spaceDelimited", `{"tags":["a","b"]}`, map[string]FormField{"tags": {Style: StyleSpaceDelimited}}, "tags=a+b"},
		{"array: deepObject is indexed brackets", `{"tags":["a","b"]}`, map[string]FormField{"tags": {Style: StyleDeepObject}}, "tags[0]=a&tags[1]=b"},
		{"object: brackets by default (Stripe)", `{"metadata":{"order_id":"o_1","n":2}}`, nil, "metadata[n]=2&metadata[order_id]=o_1"},
		{"array of objects: indexed brackets", `{"items":[{"price":"p_1","quantity":2},{"price":"p_2"}]}`, nil,
			"items[0][price]=p_1&items[0][quantity]=2&items[1][price]=p_2"},
		{"nested", `{"a":{"b":{"c":[1,{"d":"e"}]}}}`, nil, "a[b][c][0]=1&a[b][c][1][d]=e"},
		{"object: style form, explode", `{"point":{"x":1,"y":2}}`, map[string]FormField{"point": {Style: StyleForm, Explode: &tr}}, "x=1&y=2"},
		{"object: style form, no explode", `{"point":{"x":1,"y":2}}`, map[string]FormField{"point": {Style: StyleForm, Explode: &f}}, "point=x%2C1%2Cy%2C2"},
		{"contentType json", `{"doc":{"a":[1,"<"]}}`, map[string]FormField{"doc": {ContentType: "application/json"}}, "doc=%7B%22a%22%3A%5B1%2C%22%3C%22%5D%7D"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := EncodeForm(decodeJSON(t, tc.args), tc.enc)
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	for _, bad := range []string{`{"a[b]":"x"}`, `{"a":{"b]":"x"}}`, `{"a":[],"c":"x"}`, `{"b":{}}`, `{"a":[{}]}`, `{"data":{"":"x"}}`, `{"":"x"}`} {
		if _, err := EncodeForm(decodeJSON(t, bad), nil); !errors.Is(err, ErrForm) {
			t.Errorf("%s: %v, want ErrForm", bad, err)
		}
	}
}

// stringify is what a form carries of a JSON value: text, and no empty
// containers.
func stringify(v any) (any, bool) {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if s, ok := stringify(e); ok {
				out[k] = s
			}
		}
		return out, len(out) > 0
	case []any:
		var out []any
		for _, e := range x {
			s, ok := stringify(e)
			if !ok {
				return nil, false // a hole would renumber the rest
			}
			out = append(out, s)
		}
		return out, len(out) > 0
	}
	return scalar(v), true
}

// roundTrips: a JSON object's form decodes (DecodeForm, over
// url.ParseQuery) to the same object, up to the values' types.
func roundTrips(t *testing.T, src string) {
	dec := json.NewDecoder(strings.NewReader(src))
	dec.UseNumber()
	var args map[string]any
	if dec.Decode(&args) != nil || args == nil {
		return
	}
	body, err := EncodeForm(args, nil)
	if err != nil {
		if !errors.Is(err, ErrForm) {
			t.Fatalf("%s: %v is not ErrForm", src, err)
		}
		return
	}
	want, _ := stringify(args)
	wm := want.(map[string]any)
	for k, v := range wm {
		wm[k] = arraysOf(v) // an object with members 0..n-1 is written as an array is
	}
	arrays := map[string]bool{}
	for k, v := range wm {
		if l, ok := v.([]any); ok && allScalars(l) {
			arrays[k] = true
		}
		// An array whose members are all empty containers writes nothing.
	}
	got, err := DecodeForm(body, arrays)
	if err != nil {
		t.Fatalf("%s: its form %q does not decode: %v", src, body, err)
	}
	if !reflect.DeepEqual(got, wm) {
		gj, _ := json.Marshal(got)
		wj, _ := json.Marshal(wm)
		t.Fatalf("%s: form %q decodes to %s, want %s", src, body, gj, wj)
	}
}

func hasEmptyMember(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			if hasEmptyMember(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			switch c := e.(type) {
			case map[string]any:
				if _, ok := stringify(c); !ok {
					return true
				}
			case []any:
				if _, ok := stringify(c); !ok {
					return true
				}
			}
			if hasEmptyMember(e) {
				return true
			}
		}
	}
	return false
}

// FuzzEncodeForm: any JSON object the encoder takes round-trips through the
// form decoder.
func FuzzEncodeForm(f *testing.F) {
	for _, s := range []string{
		`{"amount":12345678901234567891,"currency":"eur","metadata":{"order_id":"o 1&2"}}`,
		`{"items":[{"price":"p_1","quantity":2},{"price":"p_2"}],"expand":["a","b"]}`,
		`{"a":{"b":{"c":[1,{"d":"e"}]}},"x":null,"y":true}`,
		`{"k=v":"a+b%c","ü":"é"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		var probe map[string]any
		if json.Unmarshal([]byte(src), &probe) != nil || hasEmptyMember(probe) {
			return
		}
		roundTrips(t, src)
	})
}

// A form binding sends the validated arguments form-encoded, the body_omit
// arguments left out, numbers exactly as the canonical JSON has them.
func TestCallFormBody(t *testing.T) {
	t.Parallel()
	type got struct {
		ctype, body, key string
	}
	ch := make(chan got, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		ch <- got{r.Header.Get("Content-Type"), string(b), r.Header.Get("Idempotency-Key")}
		w.WriteHeader(201)
	}))
	defer srv.Close()
	args := []byte(`{"account":"acct_1","amount":12345678901234567891,"metadata":{"order_id":"o_1"}}`)
	for _, tc := range []struct {
		name      string
		b         Binding
		ctype     string
		wantBody  string
		wantEmpty bool
	}{
		{"form", Binding{URL: srv.URL + "/v1/{args.account}/refunds", Body: BodyForm, BodyOmit: []string{"account"}},
			"application/x-www-form-urlencoded", "amount=12345678901234567891&metadata[order_id]=o_1", false},
		{"json, omitted", Binding{URL: srv.URL + "/v1/{args.account}/refunds", BodyOmit: []string{"account"}},
			"application/json", `{"amount":12345678901234567891,"metadata":{"order_id":"o_1"}}`, false},
		{"json, body_arg", Binding{URL: srv.URL + "/x", BodyArg: "metadata"}, "application/json", `{"order_id":"o_1"}`, false},
		{"none", Binding{URL: srv.URL + "/x", Body: BodyNone}, "", "", true},
	} {
		res := (&Client{}).Call(context.Background(), Request{Binding: &tc.b, Vars: Vars{Tenant: "t", ActionID: "a1",
			Args: map[string]any{"account": "acct_1"}}, Body: args})
		if res.Outcome != ledger.Answered || res.StatusCode != 201 {
			t.Fatalf("%s: %+v", tc.name, res)
		}
		g := <-ch
		if g.key != "t:a1" || g.body != tc.wantBody || !tc.wantEmpty && g.ctype != tc.ctype {
			t.Errorf("%s: sent %q as %q (key %q), want %q as %q", tc.name, g.body, g.ctype, g.key, tc.wantBody, tc.ctype)
		}
	}
	// Arguments a form cannot carry are not sent at all.
	b := Binding{URL: srv.URL + "/x", Body: BodyForm}
	res := (&Client{}).Call(context.Background(), Request{Binding: &b, Vars: Vars{Tenant: "t", ActionID: "a2"}, Body: []byte(`{"a[0]":"x"}`)})
	if res.Outcome != ledger.NotStarted || !errors.Is(res.Err, ErrForm) || res.Written {
		t.Fatalf("a bracket in a name: %+v", res)
	}
	if !bytes.Equal(args, []byte(`{"account":"acct_1","amount":12345678901234567891,"metadata":{"order_id":"o_1"}}`)) {
		t.Fatal("the arguments were changed")
	}
}
