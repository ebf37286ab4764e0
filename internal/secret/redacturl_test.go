package secret

import (
	"strings"
	"testing"
)

func TestRedactURL(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"postgres://u:hunter2@db/x", "postgres://u:xxxxx@db/x"},
		{"postgres://u:hunter2@db/%zz", "postgres://u:xxxxx@db/%zz"}, // does not parse as a URL
		{"postgres://u:hun@ter2@db:5432", "postgres://u:xxxxx@db:5432"},
		{"postgres://u@db/x", "postgres://u@db/x"},
		{"postgres://db/x?sslmode=disable", "postgres://db/x?sslmode=disable"},
		{"sqlite://ledger.db", "sqlite://ledger.db"},
		{"", ""},
	} {
		if got := RedactURL(c.in); got != c.want {
			t.Errorf("RedactURL(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func FuzzRedactURL(f *testing.F) {
	f.Add("postgres://u:hunter2@db/%zz")
	f.Add("postgresql://a:b@c@d/e")
	f.Fuzz(func(t *testing.T, user string) {
		const pw = "Pw9Marker"
		in := "postgres://" + user + ":" + pw + "@db/%zz"
		if strings.ContainsAny(user, "@/:") {
			return // the password is no longer the authority's
		}
		if strings.Contains(RedactURL(in), pw) {
			t.Fatalf("RedactURL(%q) keeps the password", in)
		}
	})
}
