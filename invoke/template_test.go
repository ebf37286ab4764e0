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
			"dot":      ".",
			"dots":     "..",
			"three":    "...",
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
		{name: "dot segment", tmpl: "http://h/a/{args.dots}/b", wantErr: "{args.dots} is a dot segment"},
		{name: "dot segment at the end", tmpl: "http://h/a/{args.dot}", wantErr: "dot segment"},
		{name: "dot segment before the query", tmpl: "http://h/a/{args.dots}?x=1", wantErr: "dot segment"},
		{name: "dot segment of two values", tmpl: "http://h/a/{args.dot}{args.dot}/b", wantErr: "{args.dot}{args.dot} is a dot segment"},
		{name: "dot segment with a literal %2e", tmpl: "http://h/a/%2E{args.dot}", wantErr: "dot segment"},
		{name: "dots inside a segment", tmpl: "http://h/a/x{args.dots}/{args.dots}y", want: "http://h/a/x../..y"},
		{name: "three dots", tmpl: "http://h/a/{args.three}", want: "http://h/a/..."},
		{name: "dots in the query", tmpl: "http://h/a?x={args.dots}", want: "http://h/a?x=.."},
		{name: "dots in the downstream key's path", tmpl: "http://h/by-key/{downstream_key}", key: "..", wantErr: "{downstream_key} is a dot segment"},
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
// back unchanged when the URL is parsed (a dot segment is refused instead).
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
		var de *DotSegmentError
		if value == "." || value == ".." {
			if !errors.As(err, &de) {
				t.Fatalf("Expand with value %q: %q, %v; want a dot segment error", value, out, err)
			}
			return
		}
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

// fuzzTemplates are binding URL templates of the kinds a configuration
// allows: placeholders in the path and the query, never in the scheme or host.
var fuzzTemplates = []string{
	"http://h.example:8080/a/{args.x}/b?q={args.y}#f",
	"http://h.example:8080/{args.x}{args.y}",
	"http://h.example:8080/a/%2e{args.x}/{args.y}%2E",
	"https://h.example/t/{tenant}/{action_id}/{downstream_key}",
	"http://h.example:8080/a.{args.x}/{args.y}.json?z={args.x}&w={downstream_key}",
}

// FuzzExpand holds the URL template expander to its promises for any values:
// it never panics and every error wraps ErrTemplate; the expanded URL keeps
// the template's scheme and host, has no dot segment, and carries no raw
// control character, space or non-ASCII byte (so no CR/LF); and a value in a
// path segment or a query parameter comes back unchanged when the URL is
// parsed. Any template at all is tried too, for the first promise.
func FuzzExpandURL(f *testing.F) {
	f.Add(uint8(0), "ord_1", "x")
	f.Add(uint8(1), ".", ".")
	f.Add(uint8(2), "..", "%2e")
	f.Add(uint8(3), "a/b?c=d&e", "\r\nHost: evil")
	f.Add(uint8(4), "@evil.example", "#frag")
	f.Add(uint8(0), "ünï😀", "%00\x00\xff")
	f.Fuzz(func(t *testing.T, which uint8, x, y string) {
		v := Vars{Tenant: "t", ActionID: x, Args: map[string]any{"x": x, "y": y}}
		if _, err := Expand(x, v, y); err != nil && !errors.Is(err, ErrTemplate) {
			t.Fatalf("Expand(%q): error %v does not wrap ErrTemplate", x, err)
		}
		tmpl := fuzzTemplates[int(which)%len(fuzzTemplates)]
		out, err := Expand(tmpl, v, y)
		if err != nil {
			if !errors.Is(err, ErrTemplate) {
				t.Fatalf("%q: %v does not wrap ErrTemplate", tmpl, err)
			}
			return
		}
		want, _ := url.Parse(strings.NewReplacer("{", "", "}", "").Replace(tmpl))
		u, err := url.Parse(out)
		if err != nil {
			t.Fatalf("url.Parse(%q): %v", out, err)
		}
		if u.Scheme != want.Scheme || u.Host != want.Host || u.User != nil {
			t.Fatalf("%q with %q, %q: scheme or host changed: %q", tmpl, x, y, out)
		}
		for i := 0; i < len(out); i++ {
			if c := out[i]; c <= ' ' || c >= 0x7f {
				t.Fatalf("%q: raw byte %#x at %d", out, c, i)
			}
		}
		path, _, _ := strings.Cut(out[len(want.Scheme)+3+len(want.Host):], "?")
		path, _, _ = strings.Cut(path, "#")
		for _, seg := range strings.Split(path, "/") {
			if isDotSegment(seg) {
				t.Fatalf("%q: dot segment %q", out, seg)
			}
		}
		if which%uint8(len(fuzzTemplates)) == 0 {
			if u.Path != "/a/"+x+"/b" || u.Query().Get("q") != y {
				t.Fatalf("%q: values do not round-trip: path %q, q %q", out, u.Path, u.Query().Get("q"))
			}
		}
	})
}

func TestPlaceholders(t *testing.T) {
	t.Parallel()
	got, err := Placeholders("http://h/{tenant}/x/{args.order_id}?k={downstream_key}")
	if err != nil || len(got) != 3 || got[0] != (Placeholder{Name: "tenant", Offset: 9}) || got[1].Name != "args.order_id" || got[2].Name != "downstream_key" {
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
