package provider

import (
	"encoding/json"
	"errors"
	"testing"
)

// FuzzParseCalls feeds arbitrary bodies to both call parsers: they never
// panic, every error is ErrNotACall, a parsed call has a call id and a name,
// its arguments are a JSON object unless ArgumentsError says why not, and its
// answer is valid JSON.
func FuzzParseCalls(f *testing.F) {
	for _, seed := range []string{
		`{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}`,
		`{"type":"function_call","call_id":"call_2","name":"g","arguments":""}`,
		`{"type":"function_call","call_id":"c","name":"g","arguments":"[1,"}`,
		`{"type":"tool_use","id":"toolu_1","name":"f","input":{"a":[1,{"b":null}]}}`,
		`{"type":"tool_use","id":"toolu_1","name":"f","input":"x"}`,
		`{"type":"text","text":"hi"}`,
		`[]`, `null`, ``, `{"id":"\u0000","function":{"name":"\ud800","arguments":"{}"}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, parse := range []func([]byte) (Call, error){ParseOpenAICall, ParseAnthropicCall} {
			c, err := parse(body)
			if err != nil {
				if !errors.Is(err, ErrNotACall) {
					t.Fatalf("error %v is not ErrNotACall", err)
				}
				continue
			}
			if c.CallID == "" || c.Name == "" {
				t.Fatalf("parsed a call without id or name: %+v", c)
			}
			if c.ArgumentsError == nil {
				var m map[string]any
				if err := json.Unmarshal(c.Arguments, &m); err != nil || m == nil {
					t.Fatalf("arguments %q are not an object: %v", c.Arguments, err)
				}
			}
			out, err := Answer(c, Result{Content: string(body), IsError: true})
			if err != nil || !json.Valid(out) {
				t.Fatalf("answer %q: %v", out, err)
			}
		}
	})
}
