package gateway_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/gateway/gatewaytest"
	"github.com/toolgate/toolgate/invoke"
)

// A form binding (body: form) sends the downstream exactly the arguments
// the contract validated, or nothing: arguments a form cannot carry as
// they are, and arguments whose form would be too large, are a 422 before
// the key is consumed and before anything is sent.

const mailTool = "mail.send"

var formTools = fstest.MapFS{
	mailTool + "/schemas/v1.0.0.json": {Data: []byte(`{"tool_id":"mail.send","version":"1.0.0","name":"send",
  "description":"Send a message.","effect":"mutating",
  "parameters":{"type":"object","properties":{
    "to":{"type":"array","maxItems":1,"items":{"type":"string"},"description":"The one recipient."},
    "data":{"type":"object","description":"Anything."}},
  "required":["to"]},
  "result":{"type":"object"}}`)},
}

func withFormTool(t testing.TB, rec *recorder) option {
	reg, err := contract.LoadFS(formTools)
	if err != nil {
		t.Fatal(err)
	}
	no := false
	return func(c *gatewaytest.Config) {
		c.Registry = reg
		c.Bindings = map[string]invoke.Binding{
			mailTool: {URL: rec.url + "/send", LookupURL: rec.url + "/by-key/{downstream_key}", Timeout: 2 * time.Second,
				Body: invoke.BodyForm, FormEncoding: map[string]invoke.FormField{"to": {Explode: &no}}},
		}
	}
}

func (g *rig) send(key, args string) reply {
	g.t.Helper()
	return g.do("POST", "/v1/tools/"+mailTool+"/calls", `{"arguments":`+args+`}`, "Idempotency-Key", key)
}

// deepData is the fourth review's attack: member names of n bytes nested
// depth deep over many leaves; its form repeats the whole path per leaf.
func deepData(n, depth, leaves int) string {
	var b strings.Builder
	for i := range depth {
		fmt.Fprintf(&b, `{"%s":`, strings.Repeat(string(rune('a'+i%26)), n))
	}
	b.WriteString("{")
	for i := range leaves {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"%d":"x"`, i)
	}
	b.WriteString("}" + strings.Repeat("}", depth))
	return b.String()
}

func TestFormArgumentsTheFormCannotCarryAreRefused(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t)
	g := newRig(t, withFormTool(t, rec))
	for i, tc := range []struct {
		name, args, ptr, code string
	}{
		{"one item holding the delimiter", `{"to":["a@x,b@y"]}`, "/to/0", "form_ambiguous"},
		{"an empty member name (an array append)", `{"to":["a@x"],"data":{"":"x"}}`, "/data/", "form_name"},
		{"a bracket in a member name", `{"to":["a@x"],"data":{"a]":"x"}}`, "/data/a]", "form_name"},
		{"an empty object", `{"to":["a@x"],"data":{"k":{}}}`, "/data/k", "form_ambiguous"},
		{"the quadratic form", `{"to":["a@x"],"data":` + deepData(300, 300, 1000) + `}`, "/data", "form_too_large"},
	} {
		key := fmt.Sprintf("form-key-%04d", i)
		p := g.send(key, tc.args).wantProblem(t, 422, "invalid_arguments")
		e := p["errors"].([]any)[0].(map[string]any)
		if e["pointer"] != tc.ptr || e["code"] != tc.code {
			t.Errorf("%s: errors[0] is %v, want %s at %q", tc.name, e, tc.code, tc.ptr)
		}
		// The key was not consumed.
		if r := g.send(key, `{"to":["a@x"],"data":{"k":"v"}}`); r.status != 200 {
			t.Fatalf("%s: after the refusal: %d %s", tc.name, r.status, r.body)
		}
	}
	calls := rec.calls()
	if len(calls) != 5 {
		t.Fatalf("%d calls reached the downstream, want the 5 valid ones", len(calls))
	}
	for _, c := range calls {
		if string(c.Body) != "data[k]=v&to=a%40x" {
			t.Fatalf("the downstream got %q", c.Body)
		}
	}
}

// Refusing the quadratic form costs memory in proportion to the call, not
// to the body it would have made (90 MB for this 100 KB call): measured
// against the same call refused by the contract (two recipients), which
// decodes and checks the same arguments but never reaches the form.
func TestFormTooLargeCostsMemoryOfTheCall(t *testing.T) {
	rec := newRecorder(t)
	g := newRig(t, withFormTool(t, rec))
	data := deepData(300, 300, 1000)
	allocated := func(key, args string) uint64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		r := g.send(key, args)
		runtime.ReadMemStats(&after)
		r.wantProblem(t, 422, "invalid_arguments")
		return after.TotalAlloc - before.TotalAlloc
	}
	g.send("form-mem-warm", `{"to":["a@x","b@y"]}`) // warm the rig's first-call costs
	invalid := allocated("form-mem-0001", `{"to":["a@x","b@y"],"data":`+data+`}`)
	tooLarge := allocated("form-mem-0002", `{"to":["a@x"],"data":`+data+`}`)
	form := int64(tooLarge) - int64(invalid)
	t.Logf("a %d-byte call: %d bytes allocated refused by the contract, %d refused as too large a form (%d for the form)",
		len(data), invalid, tooLarge, form)
	if form > int64(16*len(data)) {
		t.Fatalf("refusing a %d-byte call's form allocated %d bytes, more than 16 times its size", len(data), form)
	}
	if n := len(rec.requests()); n != 0 {
		t.Fatalf("the downstream got %d requests", n)
	}
}
