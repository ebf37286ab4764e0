package invoke

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// LookupResult is the answer of a binding's lookup (docs/configuration.md: 200 means the
// effect was found, 404 that it was not). Exactly one of Found, NotFound and
// Err != nil holds.
type LookupResult struct {
	Found       bool   // 200: the effect exists; StatusCode, ContentType and Body are its answer
	NotFound    bool   // 404: no effect with this downstream key (yet)
	StatusCode  int    // the lookup's status, 0 if it did not answer
	ContentType string // the lookup's Content-Type
	Body        []byte // the lookup's body (at most MaxBodyBytes)
	Err         error  // no lookup configured, no answer, another status, or a cut-off body
}

// Lookup asks the binding's lookup URL (a GET, with the idempotency header,
// traceparent and r.Header) whether the action's effect exists. A Found
// answer's body is replayed by the gateway, so a body over the cap is an error.
func (c *Client) Lookup(ctx context.Context, r Request) LookupResult {
	if r.Binding == nil {
		return LookupResult{Err: errNoBinding}
	}
	if r.Binding.MCP != nil {
		return LookupResult{Err: ErrMCPBinding}
	}
	b := r.Binding.effective()
	if b.LookupURL == "" {
		return LookupResult{Err: ErrNoLookup}
	}
	resp, body, err := c.get(ctx, b, b.LookupURL, r)
	if err != nil {
		return LookupResult{Err: fmt.Errorf("lookup: %w", err)}
	}
	res := LookupResult{StatusCode: resp.StatusCode, ContentType: resp.Header.Get("Content-Type"), Body: body}
	switch resp.StatusCode {
	case http.StatusOK:
		res.Found = true
	case http.StatusNotFound:
		res.NotFound = true
	default:
		res.Err = fmt.Errorf("lookup: GET %s: downstream answered %d", shownURL(b, b.LookupURL, r.Vars), resp.StatusCode)
	}
	return res
}

// State fetches the binding's state probe (a GET on StateURL) and returns its
// JSON body. A binding without a StateURL returns nil, nil. Any answer other
// than 2xx with a valid JSON body, at most MaxBodyBytes long and within the
// binding's timeout, is an error.
func (c *Client) State(ctx context.Context, r Request) (json.RawMessage, error) {
	if r.Binding == nil {
		return nil, errNoBinding
	}
	if r.Binding.MCP != nil {
		return nil, ErrMCPBinding
	}
	b := r.Binding.effective()
	if b.StateURL == "" {
		return nil, nil
	}
	resp, body, err := c.get(ctx, b, b.StateURL, r)
	if err != nil {
		return nil, fmt.Errorf("state probe: %w", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, fmt.Errorf("state probe: GET %s: downstream answered %d", shownURL(b, b.StateURL, r.Vars), resp.StatusCode)
	}
	if !json.Valid(body) {
		return nil, fmt.Errorf("state probe: GET %s: answer is not JSON", shownURL(b, b.StateURL, r.Vars))
	}
	return json.RawMessage(body), nil
}

// get sends a bounded GET to the expanded template and reads the capped body.
// A read-only GET may be retried by the transport; that is harmless. Its
// errors name the URL with its key expanded and its arguments not (describeURL, withoutURL).
func (c *Client) get(ctx context.Context, b *Binding, tmpl string, r Request) (*http.Response, []byte, error) {
	key, err := DownstreamKey(b, r.Vars)
	if err != nil {
		return nil, nil, err
	}
	u, err := Expand(tmpl, r.Vars, key)
	if err != nil {
		return nil, nil, err
	}
	shown := describeURL(tmpl, r.Vars, key)
	ctx, cancel := context.WithTimeout(ctx, b.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("GET %s: build request: %w", shown, withoutURL(err))
	}
	setHeaders(req, r, b.IdempotencyHeader, key)
	resp, err := c.client().Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("GET %s: %w", shown, withoutURL(err))
	}
	defer resp.Body.Close()
	body, err := readCapped(resp.Body, c.maxBody())
	if err != nil {
		return nil, nil, fmt.Errorf("GET %s: %w", shown, err)
	}
	return resp, body, nil
}

// describeURL is a lookup or state URL as errors and the action's history show
// it: {downstream_key}, {tenant} and {action_id} expanded, so on-call can
// search the downstream by the key, and each {args.FIELD} left as written (an
// argument may be sensitive; errors reach logs and the action read).
// shownURL is describeURL with the binding's downstream key.
func shownURL(b *Binding, tmpl string, v Vars) string {
	key, err := DownstreamKey(b, v)
	if err != nil {
		return tmpl
	}
	return describeURL(tmpl, v, key)
}

func describeURL(tmpl string, v Vars, key string) string {
	return strings.NewReplacer("{downstream_key}", key, "{tenant}", v.Tenant, "{action_id}", v.ActionID).Replace(tmpl)
}
