package provider

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestParseOpenAICall(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		body     string
		shape    string
		callID   string
		tool     string
		args     string // "" when the arguments are the model's error
		notACall bool
	}{
		{name: "chat completions item", body: `{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}`,
			shape: ShapeChatCompletions, callID: "call_1", tool: "f", args: `{"a":1}`},
		{name: "chat item without type", body: `{"id":"call_1","function":{"name":"f","arguments":"{}"}}`,
			shape: ShapeChatCompletions, callID: "call_1", tool: "f", args: `{}`},
		{name: "empty arguments string is {}", body: `{"id":"call_1","type":"function","function":{"name":"f","arguments":""}}`,
			shape: ShapeChatCompletions, callID: "call_1", tool: "f", args: `{}`},
		{name: "responses item", body: `{"type":"function_call","id":"fc_1","call_id":"call_2","name":"g","arguments":" {\"b\":[true]} ","status":"completed"}`,
			shape: ShapeResponses, callID: "call_2", tool: "g", args: `{"b":[true]}`},
		{name: "arguments not JSON", body: `{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\":"}}`,
			shape: ShapeChatCompletions, callID: "call_1", tool: "f"},
		{name: "arguments an array", body: `{"type":"function_call","call_id":"c","name":"g","arguments":"[1]"}`,
			shape: ShapeResponses, callID: "c", tool: "g"},
		{name: "custom tool call", body: `{"id":"call_1","type":"custom","custom":{"name":"f","input":"x"}}`, notACall: true},
		{name: "no call id", body: `{"type":"function","function":{"name":"f","arguments":"{}"}}`, notACall: true},
		{name: "no responses call id", body: `{"type":"function_call","name":"f","arguments":"{}"}`, notACall: true},
		{name: "no name", body: `{"id":"c","type":"function","function":{"arguments":"{}"}}`, notACall: true},
		{name: "arguments not a string", body: `{"id":"c","type":"function","function":{"name":"f","arguments":{}}}`, notACall: true},
		{name: "no arguments", body: `{"id":"c","type":"function","function":{"name":"f"}}`, notACall: true},
		{name: "array body", body: `[{"id":"c"}]`, notACall: true},
		{name: "trailing data", body: `{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}} {}`, notACall: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseOpenAICall([]byte(c.body))
			if c.notACall {
				if !errors.Is(err, ErrNotACall) {
					t.Fatalf("err = %v, want ErrNotACall", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Shape != c.shape || got.CallID != c.callID || got.Name != c.tool || got.Provider != "openai" {
				t.Fatalf("got %+v", got)
			}
			if c.args == "" {
				if got.ArgumentsError == nil || got.Arguments != nil {
					t.Fatalf("want an arguments error, got %s", got.Arguments)
				}
				return
			}
			if string(got.Arguments) != c.args || got.ArgumentsError != nil {
				t.Fatalf("arguments %s (%v), want %s", got.Arguments, got.ArgumentsError, c.args)
			}
		})
	}
}

func TestParseAnthropicCall(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		body     string
		args     string
		notACall bool
	}{
		{name: "tool_use block", body: `{"type":"tool_use","id":"toolu_1","name":"f","input":{"a":1}}`, args: `{"a":1}`},
		{name: "no input is {}", body: `{"type":"tool_use","id":"toolu_1","name":"f"}`, args: `{}`},
		{name: "input not an object", body: `{"type":"tool_use","id":"toolu_1","name":"f","input":"x"}`},
		{name: "text block", body: `{"type":"text","text":"hi"}`, notACall: true},
		{name: "no id", body: `{"type":"tool_use","name":"f","input":{}}`, notACall: true},
		{name: "not an object", body: `"tool_use"`, notACall: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseAnthropicCall([]byte(c.body))
			if c.notACall {
				if !errors.Is(err, ErrNotACall) {
					t.Fatalf("err = %v, want ErrNotACall", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Shape != ShapeAnthropic || got.Format != FormatAnthropic || got.CallID != "toolu_1" || got.Name != "f" {
				t.Fatalf("got %+v", got)
			}
			if c.args == "" {
				if got.ArgumentsError == nil {
					t.Fatal("want an arguments error")
				}
				return
			}
			if string(got.Arguments) != c.args {
				t.Fatalf("arguments %s, want %s", got.Arguments, c.args)
			}
		})
	}
}

func TestAnswer(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		call Call
		res  Result
		want string
	}{
		{name: "tool message", call: Call{Shape: ShapeChatCompletions, CallID: "call_1"}, res: Result{Content: `{"ok":true}`},
			want: `{"role":"tool","tool_call_id":"call_1","content":"{\"ok\":true}"}`},
		{name: "function_call_output", call: Call{Shape: ShapeResponses, CallID: "call_2"}, res: Result{Content: "x", IsError: true},
			want: `{"type":"function_call_output","call_id":"call_2","output":"x"}`},
		{name: "tool_result", call: Call{Shape: ShapeAnthropic, CallID: "toolu_1"}, res: Result{Content: "bad", IsError: true},
			want: `{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"bad"}],"is_error":true}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, err := Answer(c.call, c.res)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want {
				t.Fatalf("got  %s\nwant %s", got, c.want)
			}
			if !json.Valid(got) {
				t.Fatal("not JSON")
			}
		})
	}
	if _, err := Answer(Call{Shape: "smoke-signals"}, Result{}); err == nil {
		t.Fatal("an unknown shape was answered")
	}
}
