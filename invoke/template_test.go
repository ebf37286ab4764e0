package invoke

import (
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"testing"
)

func TestExpand(t *testing.T) {
	t.Parallel()
	vars := Vars{
		Tenant:   "acme",
		ActionID: "key/with spaces",
		Args: map[string]any{
			"order_id": "ord_123",
			"amount":   float64(1250),
			"ratio":    0.5,
			"big":      json.Number("12345678901234567890"),
			"ok":       true,
			"empty":    "",
			"nothing":  nil,
			"list":     []any{"a"},
			"customer": map[string]any{"id": "cus/1", "tags": map[string]any{}},
			"q":        "a&b=c d",
		},
	}
	tests := []struct {
		name    string
		tmpl    string
		key     string
		want    string
		wantErr string
	}{
		{name: "no placeholders", tmpl: "http://h:9090/refunds", want: "http://h:9090/refunds"},
		{name: "tenant and action", tmpl: "http://h/t/{tenant}/a/{action_id}", want: "http://h/t/acme/a/key%2Fwith%20spaces"},
		{name: "downstream key", tmpl: "http://h/refunds/by-key/{downstream_key}", key: "acme:k1", want: "http://h/refunds/by-key/acme:k1"},
		{name: "string arg", tmpl: "http://h/orders/{args.order_id}", want: "http://h/orders/ord_123"},
		{name: "integer number", tmpl: "http://h/{args.amount}", want: "http://h/1250"},
		{name: "fraction", tmpl: "http://h/{args.ratio}", want: "http://h/0.5"},
		{name: "json number", tmpl: "http://h/{args.big}", want: "http://h/12345678901234567890"},
		{name: "bool", tmpl: "http://h/{args.ok}", want: "http://h/true"},
		{name: "nested", tmpl: "http://h/c/{args.customer.id}", want: "http://h/c/cus%2F1"},
		{name: "query escaped", tmpl: "http://h/s?q={args.q}&t={tenant}", want: "http://h/s?q=a%26b%3Dc+d&t=acme"},
		{name: "path then query", tmpl: "http://h/{args.q}?q={args.q}", want: "http://h/a&b=c%20d?q=a%26b%3Dc+d"},
		{name: "unknown placeholder", tmpl: "http://h/{user}", wantErr: "unknown placeholder {user}"},
		{name: "unclosed", tmpl: "http://h/{tenant", wantErr: "unclosed"},
		{name: "stray close", tmpl: "http://h/}", wantErr: "unmatched"},
		{name: "missing arg", tmpl: "http://h/{args.nope}", wantErr: "missing"},
		{name: "empty arg", tmpl: "http://h/{args.empty}", wantErr: "is empty"},
		{name: "null arg", tmpl: "http://h/{args.nothing}", wantErr: "is null"},
		{name: "array arg", tmpl: "http://h/{args.list}", wantErr: "not a scalar"},
		{name: "object arg", tmpl: "http://h/{args.customer.tags}", wantErr: "not a scalar"},
		{name: "through a scalar", tmpl: "http://h/{args.order_id.x}", wantErr: "not an object field"},
		{name: "bare args", tmpl: "http://h/{args.}", wantErr: "no field name"},
		{name: "empty downstream key", tmpl: "http://h/{downstream_key}", wantErr: "is empty"},
		{name: "empty braces", tmpl: "http://h/{}", wantErr: "unknown placeholder {}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Expand(tt.tmpl, vars, tt.key)
			if tt.wantErr != "" {
				if err == nil || !errors.Is(err, ErrTemplate) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Expand(%q) = %q, %v; want error containing %q", tt.tmpl, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Expand(%q) = %q, %v; want %q", tt.tmpl, got, err, tt.want)
			}
		})
	}
}

func TestDownstreamKey(t *testing.T) {
	t.Parallel()
	vars := Vars{Tenant: "acme", ActionID: "refund-7f3a", Args: map[string]any{"order_id": "ord/1"}}
	tests := []struct {
		name    string
		tmpl    string
		vars    Vars
		want    string
		wantErr bool
	}{
		{name: "default", tmpl: "", vars: vars, want: "acme:refund-7f3a"},
		{name: "custom, not escaped", tmpl: "{tenant}/{args.order_id}/{action_id}", vars: vars, want: "acme/ord/1/refund-7f3a"},
		{name: "no recursion", tmpl: "{downstream_key}", vars: vars, wantErr: true},
		{name: "empty tenant", tmpl: "", vars: Vars{ActionID: "k"}, wantErr: true},
		{name: "control character", tmpl: "{args.order_id}", vars: Vars{Args: map[string]any{"order_id": "a\nb"}}, wantErr: true},
		{name: "too long", tmpl: "{args.order_id}", vars: Vars{Args: map[string]any{"order_id": strings.Repeat("x", 1025)}}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := DownstreamKey(&Binding{DownstreamKey: tt.tmpl}, tt.vars)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Fatalf("DownstreamKey(%q) = %q, %v; want %q (error %v)", tt.tmpl, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

// FuzzExpand checks that Expand never panics, that any error wraps ErrTemplate,
// and that a value substituted into a path segment or a query parameter comes
// back unchanged when the URL is parsed.
func FuzzExpand(f *testing.F) {
	f.Add("http://h/refunds/{args.id}", "ord_1")
	f.Add("{tenant}:{action_id}", "a/b?c=d&e")
	f.Add("http://h/{downstream_key}?k={args.id}", "%2F {}")
	f.Add("{args.", "")
	f.Add("}{", "\x00\xff")
	f.Fuzz(func(t *testing.T, tmpl, value string) {
		v := Vars{Tenant: "t", ActionID: value, Args: map[string]any{"id": value}}
		if _, err := Expand(tmpl, v, value); err != nil && !errors.Is(err, ErrTemplate) {
			t.Fatalf("Expand(%q): error %v does not wrap ErrTemplate", tmpl, err)
		}
		if value == "" {
			return
		}
		out, err := Expand("http://h/x/{args.id}?q={downstream_key}", v, value)
		if err != nil {
			t.Fatalf("Expand with value %q: %v", value, err)
		}
		u, err := url.Parse(out)
		if err != nil {
			t.Fatalf("url.Parse(%q): %v", out, err)
		}
		if u.Path != "/x/"+value {
			t.Fatalf("path %q does not round-trip %q (url %q)", u.Path, value, out)
		}
		if got := u.Query().Get("q"); got != value {
			t.Fatalf("query %q does not round-trip %q (url %q)", got, value, out)
		}
	})
}

func TestPlaceholders(t *testing.T) {
	t.Parallel()
	got, err := Placeholders("http://h/{tenant}/x/{args.order_id}?k={downstream_key}")
	if err != nil || len(got) != 3 || got[0] != (Placeholder{"tenant", 9}) || got[1].Name != "args.order_id" || got[2].Name != "downstream_key" {
		t.Fatalf("got %v, %v", got, err)
	}
	for _, bad := range []string{"http://h/{tenant", "http://h/}x", "{a}{"} {
		if _, err := Placeholders(bad); !errors.Is(err, ErrTemplate) {
			t.Errorf("%q: err %v", bad, err)
		}
	}
	// Expand and Placeholders agree on the placeholders a template has
	for _, tmpl := range []string{"", "plain", "{tenant}:{action_id}", "http://h/{args.a.b}?q={args.c}", "{}"} {
		ps, err := Placeholders(tmpl)
		if err != nil {
			t.Fatalf("%q: %v", tmpl, err)
		}
		v := Vars{Tenant: "t", ActionID: "a", Args: map[string]any{"a": map[string]any{"b": "x"}, "c": "y"}}
		_, expErr := Expand(tmpl, v, "k")
		unknown := false
		for _, p := range ps {
			unknown = unknown || p.Name == ""
		}
		if (expErr != nil) != unknown {
			t.Errorf("%q: Expand error %v, placeholders %v", tmpl, expErr, ps)
		}
	}
}
