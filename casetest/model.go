package casetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/toolgate/toolgate/contract"
)

// Model is an OpenAI-compatible chat completions endpoint that plays the agent.
type Model struct {
	// URL is the endpoint; ".../chat/completions" is appended unless the URL ends with it.
	URL string
	// Name is the request's "model". Defaults to "toolgate-test".
	Name string
	// APIKey, when set, is sent as a bearer token.
	APIKey string
	// Tools are the Chat Completions tool definitions sent with every request
	// (provider.Export(reg, "openai").Tools).
	Tools []json.RawMessage
	// Names maps an exported function name to its tool id.
	Names map[string]string
	// Versions maps a tool id to the version its entry in Tools describes. When the
	// replay's target is another version, that tool's entry is replaced by a plain
	// (non-strict) definition of the target version, so the model sees what it is tested on.
	Versions map[string]string
	// Client defaults to an http.Client with a 60s timeout.
	Client *http.Client
	// MaxRetries bounds retries of a 429 or 503 answer. Defaults to 4.
	MaxRetries int
	// Backoff is the first retry's delay, doubled on each retry (at most 30s) unless the
	// server sends Retry-After. Defaults to 500ms.
	Backoff time.Duration
	// Sleep waits between retries; tests replace it. Defaults to a timer that honours ctx.
	Sleep func(ctx context.Context, d time.Duration) error
}

type chatMessage struct {
	Role       string          `json:"role"`
	Content    *string         `json:"content"`
	ToolCalls  []chatToolCall  `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
	Extra      json.RawMessage `json:"-"`
}

type chatToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type chatRequest struct {
	Model    string            `json:"model"`
	Messages []chatMessage     `json:"messages"`
	Tools    []json.RawMessage `json:"tools,omitempty"`
}

type chatResponse struct {
	Choices []struct {
		Message chatMessage `json:"message"`
	} `json:"choices"`
}

func text(s string) *string { return &s }

// modelTurn plays one case through the model: the agent's prompt and the case's intent go
// in, the model's tool call is checked and answered with the mock result, and the final
// text comes back.
func (r *runner) modelTurn(ctx context.Context, c *contract.Case, expected, mock any, res *CaseResult, fail func(string, string, string)) string {
	m := r.cfg.Model
	var msgs []chatMessage
	if p, ok := r.cfg.Agents[c.Agent]; ok && p != "" {
		msgs = append(msgs, chatMessage{Role: "system", Content: text(p)})
	} else if c.Agent != "" {
		res.Notes = append(res.Notes, "agent "+c.Agent+" has no prompt in agents/: no system message sent")
	}
	msgs = append(msgs, chatMessage{Role: "user", Content: text(c.UserIntent)})
	if expectedValidation(c) == "invalid" && expected != nil && !hasMatcher(expected) {
		r.checkArguments(c, expected, res.CrossVersion, fail)
	}
	first, err := m.complete(ctx, msgs, r.tools)
	if err != nil {
		fail("model", "Model call failed", err.Error())
		return ""
	}
	var call *chatToolCall
	for i, tc := range first.ToolCalls {
		if id := m.Names[tc.Function.Name]; id == c.ToolID || tc.Function.Name == c.ToolID {
			call = &first.ToolCalls[i]
			break
		}
	}
	if call == nil {
		if expected != nil {
			fail("tool_call", "Model made no "+c.ToolID+" call", "")
		}
		return deref(first.Content)
	}
	args, err := contract.DecodeJSON([]byte(call.Function.Arguments))
	if err != nil {
		fail("tool_call", "Model's arguments are not JSON", err.Error())
		args = nil
	}
	var answer []byte
	if args != nil {
		// A case that expects valid arguments holds the model's call to them; a case that
		// expects invalid ones records a bad call (a past incident), which the static check
		// keeps refusing, while the model's own call is only answered as the gateway would.
		if expectedValidation(c) == "ok" {
			r.checkArguments(c, args, res.CrossVersion, fail)
			if expected != nil {
				if diffs := matchArgs(expected, args, ""); len(diffs) > 0 {
					fail("tool_call", "Model's arguments differ from expected_tool_arguments", strings.Join(diffs, "; "))
				}
			}
		}
		if v := r.target.Validate(args); !v.Valid() {
			answer, _ = json.Marshal(map[string]any{"error": "invalid_arguments", "errors": v.Errors})
		}
	}
	if answer == nil {
		answer = []byte("{}")
		if mock != nil {
			answer, _ = json.Marshal(mock)
		}
	}
	// Send back only the call being answered: other calls would need answers too.
	assistant := chatMessage{Role: "assistant", Content: first.Content, ToolCalls: []chatToolCall{*call}}
	msgs = append(msgs, assistant, chatMessage{Role: "tool", ToolCallID: call.ID, Content: text(string(answer))})
	second, err := m.complete(ctx, msgs, r.tools)
	if err != nil {
		fail("model", "Model call failed", err.Error())
		return ""
	}
	return deref(second.Content)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// complete sends one chat completions request, retrying 429 and 503 with backoff.
func (m *Model) complete(ctx context.Context, msgs []chatMessage, tools []json.RawMessage) (chatMessage, error) {
	name := m.Name
	if name == "" {
		name = "toolgate-test"
	}
	body, err := json.Marshal(chatRequest{Model: name, Messages: msgs, Tools: tools})
	if err != nil {
		return chatMessage{}, err
	}
	url := strings.TrimRight(m.URL, "/")
	if !strings.HasSuffix(url, "/chat/completions") {
		url += "/chat/completions"
	}
	client := m.Client
	if client == nil {
		client = &http.Client{Timeout: 60 * time.Second}
	}
	retries, delay := m.MaxRetries, m.Backoff
	if retries <= 0 {
		retries = 4
	}
	if delay <= 0 {
		delay = 500 * time.Millisecond
	}
	sleep := m.Sleep
	if sleep == nil {
		sleep = sleepCtx
	}
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return chatMessage{}, err
		}
		req.Header.Set("Content-Type", "application/json")
		if m.APIKey != "" {
			req.Header.Set("Authorization", "Bearer "+m.APIKey)
		}
		resp, err := client.Do(req)
		if err != nil {
			return chatMessage{}, err
		}
		data, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
		resp.Body.Close()
		if err != nil {
			return chatMessage{}, err
		}
		if (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) && attempt < retries {
			wait := delay << attempt
			if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s >= 0 {
				wait = time.Duration(s) * time.Second
			}
			if err := sleep(ctx, min(wait, 30*time.Second)); err != nil {
				return chatMessage{}, err
			}
			continue
		}
		if resp.StatusCode/100 != 2 {
			return chatMessage{}, fmt.Errorf("model endpoint answered %s: %s", resp.Status, firstLine(data))
		}
		var cr chatResponse
		if err := json.Unmarshal(data, &cr); err != nil {
			return chatMessage{}, fmt.Errorf("model endpoint: %w", err)
		}
		if len(cr.Choices) == 0 {
			return chatMessage{}, errors.New("model endpoint answered no choices")
		}
		return cr.Choices[0].Message, nil
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func firstLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}

// live sends a case's arguments to the live tool and checks the answer.
func (r *runner) live(ctx context.Context, c *contract.Case, args any, fail func(string, string, string)) {
	client := r.cfg.Live.Client
	if client == nil {
		client = http.DefaultClient
	}
	body, _ := json.Marshal(args)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.cfg.Live.URL, bytes.NewReader(body))
	if err != nil {
		fail("target", "Target request failed", err.Error())
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "toolgate-test-"+c.ID)
	resp, err := client.Do(req)
	if err != nil {
		fail("target", "Target unreachable", err.Error())
		return
	}
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		fail("target", fmt.Sprintf("Target answered %d", resp.StatusCode), firstLine(data))
		return
	}
	result, err := contract.DecodeJSON(data)
	if err != nil {
		fail("target", "Target answered no JSON", err.Error())
		return
	}
	for _, e := range r.target.ValidateResult(result) {
		fail("target", fmt.Sprintf("Target result violates the v%s result schema: %s at %s", r.target.Version, e.Code, ptr(e.Pointer)), e.Detail)
	}
	checkStatus(c, result, "target", fail)
}

// toolsFor returns the model's tool definitions with the target tool's entry describing
// the target version.
func (m *Model) toolsFor(target *contract.Version) []json.RawMessage {
	if v, ok := m.Versions[target.ToolID]; !ok || v == target.Version {
		return m.Tools
	}
	out := make([]json.RawMessage, len(m.Tools))
	copy(out, m.Tools)
	for i, def := range out {
		var probe struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		if json.Unmarshal(def, &probe) != nil || m.Names[probe.Function.Name] != target.ToolID {
			continue
		}
		params, err := contract.DecodeJSON(target.Parameters)
		if err != nil {
			continue
		}
		plain, err := json.Marshal(map[string]any{"type": "function", "function": map[string]any{
			"name": probe.Function.Name, "description": target.Description, "parameters": stripExtensions(params)}})
		if err == nil {
			out[i] = plain
		}
	}
	return out
}

// stripExtensions copies a schema without toolgate's x-* annotations.
func stripExtensions(s any) any {
	switch x := s.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, v := range x {
			if !strings.HasPrefix(k, "x-") {
				out[k] = stripExtensions(v)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, v := range x {
			out[i] = stripExtensions(v)
		}
		return out
	}
	return s
}
