package provider

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Call shapes a provider endpoint accepts.
const (
	ShapeChatCompletions = "chat_completions" // an OpenAI Chat Completions tool_calls[] item
	ShapeResponses       = "responses"        // an OpenAI Responses function_call item
	ShapeAnthropic       = "anthropic"        // an Anthropic tool_use content block
)

// Call is one tool call a model made, as a provider shaped it: which shape, the
// provider's own call id, the exported tool name and the arguments as a JSON
// object.
type Call struct {
	Shape string
	// Format is the export format whose names the call uses (FormatOpenAI,
	// FormatOpenAIResponses or FormatAnthropic).
	Format string
	// Provider is the name recorded as evidence: "openai" or "anthropic".
	Provider string
	CallID   string
	Name     string
	// Arguments is the JSON object the model sent. It is nil when the model's
	// arguments were not a JSON object; ArgumentsError then says why.
	Arguments      json.RawMessage
	ArgumentsError error
}

// ErrNotACall is returned (wrapped) when a body is not a tool call of the
// expected shape.
var ErrNotACall = errors.New("not a tool call")

type chatToolCall struct {
	ID       *string `json:"id"`
	Type     *string `json:"type"`
	Function *struct {
		Name      *string `json:"name"`
		Arguments *string `json:"arguments"`
	} `json:"function"`
	// Responses function_call fields.
	CallID    *string `json:"call_id"`
	Name      *string `json:"name"`
	Arguments *string `json:"arguments"`
}

// ParseOpenAICall reads an OpenAI tool call: a Chat Completions tool_calls[]
// item {"id","type":"function","function":{"name","arguments"}} or a Responses
// function_call item {"type":"function_call","call_id","name","arguments"}.
// The arguments are a JSON string in both; an empty string means {}. An error
// wrapping ErrNotACall means the body has neither shape; arguments that are
// not a JSON object are reported in Call.ArgumentsError instead, since they
// are the model's to fix.
func ParseOpenAICall(data []byte) (Call, error) {
	var raw chatToolCall
	if err := decodeOne(data, &raw); err != nil {
		return Call{}, err
	}
	typ := deref(raw.Type)
	var c Call
	var args *string
	switch {
	case typ == "function_call":
		c = Call{Shape: ShapeResponses, Format: FormatOpenAIResponses, Provider: "openai", CallID: deref(raw.CallID), Name: deref(raw.Name)}
		args = raw.Arguments
		if c.CallID == "" {
			return Call{}, fmt.Errorf("%w: a function_call item needs a \"call_id\"", ErrNotACall)
		}
	case raw.Function != nil && (typ == "function" || typ == ""):
		c = Call{Shape: ShapeChatCompletions, Format: FormatOpenAI, Provider: "openai", CallID: deref(raw.ID), Name: deref(raw.Function.Name)}
		args = raw.Function.Arguments
		if c.CallID == "" {
			return Call{}, fmt.Errorf("%w: a tool_calls item needs an \"id\"", ErrNotACall)
		}
	default:
		return Call{}, fmt.Errorf("%w: want a Chat Completions tool_calls item (type \"function\") or a Responses item of type \"function_call\", got type %q", ErrNotACall, typ)
	}
	if c.Name == "" {
		return Call{}, fmt.Errorf("%w: the call names no function", ErrNotACall)
	}
	if args == nil {
		return Call{}, fmt.Errorf("%w: the call has no \"arguments\" string", ErrNotACall)
	}
	c.Arguments, c.ArgumentsError = objectFromString(*args)
	return c, nil
}

// ParseAnthropicCall reads an Anthropic tool_use content block
// {"type":"tool_use","id","name","input"}.
func ParseAnthropicCall(data []byte) (Call, error) {
	var raw struct {
		Type  *string         `json:"type"`
		ID    *string         `json:"id"`
		Name  *string         `json:"name"`
		Input json.RawMessage `json:"input"`
	}
	if err := decodeOne(data, &raw); err != nil {
		return Call{}, err
	}
	if t := deref(raw.Type); t != "tool_use" {
		return Call{}, fmt.Errorf("%w: want a content block of type \"tool_use\", got type %q", ErrNotACall, t)
	}
	c := Call{Shape: ShapeAnthropic, Format: FormatAnthropic, Provider: "anthropic", CallID: deref(raw.ID), Name: deref(raw.Name)}
	if c.CallID == "" || c.Name == "" {
		return Call{}, fmt.Errorf("%w: a tool_use block needs an \"id\" and a \"name\"", ErrNotACall)
	}
	in := bytes.TrimSpace(raw.Input)
	switch {
	case len(in) == 0 || bytes.Equal(in, []byte("null")):
		c.Arguments = json.RawMessage("{}")
	case in[0] == '{':
		c.Arguments = in
	default:
		c.ArgumentsError = errors.New("the tool input must be a JSON object")
	}
	return c, nil
}

// decodeOne decodes exactly one JSON object.
func decodeOne(data []byte, v any) error {
	t := bytes.TrimSpace(data)
	if len(t) == 0 || t[0] != '{' {
		return fmt.Errorf("%w: the body must be one JSON object", ErrNotACall)
	}
	dec := json.NewDecoder(bytes.NewReader(t))
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %v", ErrNotACall, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: the body has data after its JSON object", ErrNotACall)
	}
	return nil
}

// objectFromString parses a model's arguments string, which must hold one
// JSON object (or nothing, meaning {}).
func objectFromString(s string) (json.RawMessage, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return json.RawMessage("{}"), nil
	}
	if t[0] != '{' {
		return nil, errors.New("the arguments must be a JSON object")
	}
	if !json.Valid([]byte(t)) {
		var v any
		err := json.Unmarshal([]byte(t), &v)
		return nil, fmt.Errorf("the arguments are not valid JSON: %v", err)
	}
	return json.RawMessage(t), nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// Result is what a tool call produced, ready to be shown to the model: the
// text of the content and whether it reports an error.
type Result struct {
	Content string
	IsError bool
}

// Answer formats a result in the shape that answers c: a Chat Completions
// tool message, a Responses function_call_output item or an Anthropic
// tool_result block (its content as one text block). OpenAI's shapes have no
// error flag; the content says what went wrong.
func Answer(c Call, r Result) ([]byte, error) {
	switch c.Shape {
	case ShapeChatCompletions:
		return json.Marshal(struct {
			Role       string `json:"role"`
			ToolCallID string `json:"tool_call_id"`
			Content    string `json:"content"`
		}{"tool", c.CallID, r.Content})
	case ShapeResponses:
		return json.Marshal(struct {
			Type   string `json:"type"`
			CallID string `json:"call_id"`
			Output string `json:"output"`
		}{"function_call_output", c.CallID, r.Content})
	case ShapeAnthropic:
		type text struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		return json.Marshal(struct {
			Type      string `json:"type"`
			ToolUseID string `json:"tool_use_id"`
			Content   []text `json:"content"`
			IsError   bool   `json:"is_error"`
		}{"tool_result", c.CallID, []text{{"text", r.Content}}, r.IsError})
	}
	return nil, fmt.Errorf("no answer shape for call shape %q", c.Shape)
}
