package invoke_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/invoke"
	"github.com/toolgate/toolgate/ledger"
)

// TestErrorsNameTheTemplate: whatever goes wrong, an error of the invoker
// names the binding's URL template and never an argument value the template
// expanded (issue 16, finding 2) — the call, the lookup and the state probe,
// refused, timed out, answered an ambiguous or a not-started 5xx, or given a
// URL that does not parse.
func TestErrorsNameTheTemplate(t *testing.T) {
	t.Parallel()
	const secret = "acct-Secret-4417"
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/slow/"):
			time.Sleep(300 * time.Millisecond)
		case strings.HasPrefix(r.URL.Path, "/busy/"):
			w.WriteHeader(http.StatusServiceUnavailable)
		case strings.HasPrefix(r.URL.Path, "/broken/"):
			w.WriteHeader(http.StatusInternalServerError)
		case strings.HasPrefix(r.URL.Path, "/teapot/"):
			w.WriteHeader(http.StatusTeapot)
		}
	}))
	t.Cleanup(slow.Close)
	refused := strings.TrimSuffix(refusedURL(t), "/refunds")
	tests := []struct {
		name string
		url  string
	}{
		{"connection refused", refused + "/a/{args.account}?q={args.account}"},
		{"timeout", slow.URL + "/slow/{args.account}"},
		{"not started 503", slow.URL + "/busy/{args.account}"},
		{"ambiguous 500", slow.URL + "/broken/{args.account}"},
		{"lookup or probe status", slow.URL + "/teapot/{args.account}"},
		{"a URL that does not parse", "http://[::1/{args.account}"},
	}
	c := &invoke.Client{}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := &invoke.Binding{URL: tc.url, LookupURL: tc.url, StateURL: tc.url, Timeout: 100 * time.Millisecond,
				NotStartedStatuses: []int{503}, DownstreamKey: "{tenant}:{action_id}"}
			r := invoke.Request{Binding: b, Vars: invoke.Vars{Tenant: "acme", ActionID: "act-1", Args: map[string]any{"account": secret}}, Body: []byte(`{}`)}
			var errs []error
			res := c.Call(context.Background(), r)
			if res.Outcome == ledger.Answered && res.StatusCode < 500 {
				errs = append(errs, nil) // a 418 is an answer, not an error
			} else {
				errs = append(errs, res.Err)
			}
			errs = append(errs, c.Lookup(context.Background(), r).Err)
			_, err := c.State(context.Background(), r)
			errs = append(errs, err)
			for i, err := range errs {
				if err == nil {
					continue
				}
				msg := err.Error()
				if strings.Contains(msg, secret) || strings.Contains(msg, strings.ToLower(secret)) {
					t.Errorf("error %d shows the argument: %s", i, msg)
				}
				if !strings.Contains(msg, "{args.account}") {
					t.Errorf("error %d does not name the template: %s", i, msg)
				}
			}
			if tc.name == "timeout" && !errors.Is(res.Err, context.DeadlineExceeded) {
				t.Errorf("a timeout no longer unwraps to context.DeadlineExceeded: %v", res.Err)
			}
		})
	}
}
