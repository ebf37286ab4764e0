package placeholder

import (
	"strings"
	"testing"
)

func TestScan(t *testing.T) {
	t.Parallel()
	got, err := Scan("http://h/{tenant}/x/{args.order_id}?k={downstream_key}")
	if err != nil || len(got) != 3 || got[0] != (Placeholder{"tenant", 9}) || got[1] != (Placeholder{"args.order_id", 20}) || got[2].Name != "downstream_key" {
		t.Fatalf("got %v, %v", got, err)
	}
	for bad, msg := range map[string]string{
		"http://h/{tenant": `unclosed "{" at byte 9`, "http://h/}x": `unmatched "}" at byte 9`, "{a}{": `unclosed "{" at byte 3`,
	} {
		if _, err := Scan(bad); err == nil || err.Error() != msg {
			t.Errorf("%q: err %v, want %s", bad, err, msg)
		}
	}
}

// FuzzScan: every placeholder Scan returns stands where it says, between
// its braces, in order, and holds no closing brace.
func FuzzScan(f *testing.F) {
	for _, s := range []string{"", "{}", "http://h/{tenant}/{args.a.b}?q={downstream_key}", "{a", "a}", "{{a}}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tmpl string) {
		ps, _ := Scan(tmpl)
		last := -1
		for _, p := range ps {
			if p.Offset <= last || !strings.HasPrefix(tmpl[p.Offset:], "{"+p.Name+"}") || strings.Contains(p.Name, "}") {
				t.Fatalf("%q: placeholder %+v", tmpl, p)
			}
			last = p.Offset
		}
	})
}
