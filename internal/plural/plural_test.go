package plural

import "testing"

func TestN(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		n    int
		want string
	}{{0, "0 versions"}, {1, "1 version"}, {2, "2 versions"}, {-1, "-1 version"}, {11, "11 versions"}} {
		if got := S(tc.n, "version"); got != tc.want {
			t.Errorf("S(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
	if got := N(1, "property", "properties"); got != "1 property" {
		t.Errorf("N(1) = %q", got)
	}
	if got := N(3, "property", "properties"); got != "3 properties" {
		t.Errorf("N(3) = %q", got)
	}
}
