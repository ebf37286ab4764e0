package repodocs

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/toolcall"
)

// TestProblemReferenceComplete: docs/reference/problems.md lists every
// problem code the gateway answers, with its status and title, and no other.
func TestProblemReferenceComplete(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "reference", "problems.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\| (\\d{3}) \\| ([^|]+) \\|")
	documented := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(string(b), -1) {
		documented[m[1]] = m[2] + " " + strings.TrimSpace(m[3])
	}
	for _, c := range toolcall.Codes() {
		info, _ := c.Info()
		want := fmt.Sprintf("%d %s", info.Status, info.Title)
		if got, ok := documented[string(c)]; !ok {
			t.Errorf("docs/reference/problems.md does not list %s (%s)", c, want)
		} else if got != want {
			t.Errorf("docs/reference/problems.md: %s is %q, the gateway answers %q", c, got, want)
		}
		delete(documented, string(c))
	}
	for c := range documented {
		t.Errorf("docs/reference/problems.md lists %s, which the gateway does not answer", c)
	}
}
