// Package client is a Go client for the operator side of toolgate's HTTP API
// (docs/reference/http-api.md): list and read actions, reconcile them, resolve unknown ones by
// hand, and approve or deny those awaiting approval. Every refusal the gateway
// answers as problem+json comes back as a *Problem.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/toolgate/toolgate/api"
)

// maxResponseBytes caps what the client reads of one answer.
const maxResponseBytes = 32 << 20

// Client talks to one gateway with one API key. It is safe for concurrent use.
type Client struct {
	base string
	key  string
	hc   *http.Client
}

// New returns a client for the gateway at baseURL (such as
// "http://127.0.0.1:8080") that authenticates with key as a bearer token; an
// empty key sends no Authorization header. A nil hc means http.DefaultClient.
// A malformed baseURL is reported by the first request.
func New(baseURL, key string, hc *http.Client) *Client {
	if hc == nil {
		hc = http.DefaultClient
	}
	return &Client{base: strings.TrimRight(baseURL, "/"), key: key, hc: hc}
}

// Filter selects actions for ListActions. Zero fields do not filter; a zero
// Limit lets the gateway choose its page size.
type Filter struct {
	State  string // an action state such as "unknown"
	ToolID string
	// PolicyVersion and CorrelationID find the actions a rule's firing
	// caused (exact matches).
	PolicyVersion string
	CorrelationID string
	Limit         int    // page size, 1 to the gateway's maximum (500)
	Cursor        string // NextCursor of the previous page
}

// Page is one page of actions. NextCursor is empty on the last page.
type Page struct {
	Actions    []Action `json:"actions"`
	NextCursor string   `json:"next_cursor,omitempty"`
}

// ListActions reads one page of the tenant's actions.
func (c *Client) ListActions(ctx context.Context, f Filter) (*Page, error) {
	q := url.Values{}
	if f.State != "" {
		q.Set("state", f.State)
	}
	if f.ToolID != "" {
		q.Set("tool_id", f.ToolID)
	}
	if f.PolicyVersion != "" {
		q.Set("policy_version", f.PolicyVersion)
	}
	if f.CorrelationID != "" {
		q.Set("correlation_id", f.CorrelationID)
	}
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	if f.Cursor != "" {
		q.Set("cursor", f.Cursor)
	}
	path := "/v1/actions"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var p Page
	if err := c.do(ctx, http.MethodGet, path, nil, &p); err != nil {
		return nil, err
	}
	if p.Actions == nil {
		p.Actions = []Action{}
	}
	return &p, nil
}

// ListAllActions follows NextCursor from f.Cursor until the last page and
// returns every action; f.Limit is the page size.
func (c *Client) ListAllActions(ctx context.Context, f Filter) ([]Action, error) {
	all := []Action{}
	for {
		p, err := c.ListActions(ctx, f)
		if err != nil {
			return all, err
		}
		all = append(all, p.Actions...)
		if p.NextCursor == "" || p.NextCursor == f.Cursor {
			return all, nil
		}
		f.Cursor = p.NextCursor
	}
}

// GetAction reads one action.
func (c *Client) GetAction(ctx context.Context, id string) (*Action, error) {
	return c.action(ctx, http.MethodGet, id, "", nil)
}

// Reconcile asks the gateway to run the action's downstream lookup now and
// returns the action afterwards. An action that is not unknown is returned
// unchanged.
func (c *Client) Reconcile(ctx context.Context, id string) (*Action, error) {
	return c.action(ctx, http.MethodPost, id, "/reconcile", struct{}{})
}

// Outcomes an operator may resolve an action to.
const (
	OutcomeSucceeded  = api.ResolveSucceeded
	OutcomeRejected   = api.ResolveRejected
	OutcomeNotStarted = api.ResolveNotStarted // grants a fresh set of attempts
)

// ResultInput is the result an operator records when resolving an action; its
// retries replay it. Body must be JSON; an empty ContentType means
// application/json.
type ResultInput = api.ResultInput

// Resolve settles an unknown action (or a pending one whose attempts are used
// up) by hand. result may be nil; the gateway then replays a JSON record of
// the resolution.
func (c *Client) Resolve(ctx context.Context, id, outcome, note string, result *ResultInput) (*Action, error) {
	return c.action(ctx, http.MethodPost, id, "/resolve", api.ResolveRequest{Outcome: outcome, Note: note, Result: result})
}

// Approve releases an action awaiting approval; the gateway runs it at once
// and returns the action afterwards.
func (c *Client) Approve(ctx context.Context, id, note string) (*Action, error) {
	return c.action(ctx, http.MethodPost, id, "/approve", api.NoteRequest{Note: note})
}

// Deny makes an action awaiting approval terminal rejected; nothing is sent
// downstream.
func (c *Client) Deny(ctx context.Context, id, note string) (*Action, error) {
	return c.action(ctx, http.MethodPost, id, "/deny", api.NoteRequest{Note: note})
}

// AssignOptions is an assignment change: the assignee (Assign: "" means the
// key's name), a note, and TakeOver to take or release an action another
// assignee holds.
type AssignOptions struct {
	Assignee string
	Note     string
	TakeOver bool
}

// Assign records who works an unknown action or one awaiting approval. An
// action another assignee holds is refused with a 409 action_assigned
// *Problem unless o.TakeOver. Assignment never changes the action's state.
func (c *Client) Assign(ctx context.Context, id string, o AssignOptions) (*Action, error) {
	return c.action(ctx, http.MethodPost, id, "/assign", api.AssignRequest{Assignee: o.Assignee, Note: o.Note, TakeOver: o.TakeOver})
}

// Unassign releases an action's assignment (o.Assignee is ignored); another
// assignee's needs o.TakeOver.
func (c *Client) Unassign(ctx context.Context, id string, o AssignOptions) (*Action, error) {
	return c.action(ctx, http.MethodPost, id, "/unassign", api.UnassignRequest{Note: o.Note, TakeOver: o.TakeOver})
}

func (c *Client) action(ctx context.Context, method, id, suffix string, body any) (*Action, error) {
	if id == "" {
		return nil, errors.New("client: empty action id")
	}
	var a Action
	if err := c.do(ctx, method, "/v1/actions/"+url.PathEscape(id)+suffix, body, &a); err != nil {
		return nil, err
	}
	return &a, nil
}

// do sends one request and decodes a 2xx JSON answer into out. Any other
// answer is a *Problem.
func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	u, err := url.Parse(c.base + path)
	if err != nil {
		return fmt.Errorf("gateway URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("gateway URL %q: want an http:// or https:// URL", c.base)
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json, application/problem+json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return fmt.Errorf("%s %s: read answer: %w", method, u.Path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return parseProblem(resp, raw)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s %s: answer is not the expected JSON: %w", method, u.Path, err)
	}
	return nil
}
