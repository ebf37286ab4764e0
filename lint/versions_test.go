package lint

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/lockfile"
)

// TestDroppedVersions: a locked version whose schema file is gone is an
// error until the policy deprecates it and its window is over (then a
// warning), and with a ledger an error while live actions are bound to it.
func TestDroppedVersions(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	lock := func(deprecated string) string {
		dep := ""
		if deprecated != "" {
			dep = fmt.Sprintf(`,"deprecated_at":%q`, deprecated)
		}
		return fmt.Sprintf(`{"lock_version":1,"versions":[
			{"tool":"acme.send_note","version":"0.9.0","file":"acme.send_note/schemas/v0.9.0.json","digest":"sha256:00","locked_at":"2026-01-01T00:00:00Z"%s},
			{"tool":"acme.send_note","version":"1.0.0","file":"acme.send_note/schemas/v1.0.0.json","digest":%q,"locked_at":"2026-01-01T00:00:00Z"}]}`,
			dep, lockfile.Digest([]byte(goodSchema)))
	}
	policy := "compatible_with: [\"1.x\"]\ndeprecated_versions: [\"0.x\"]\ndeprecation_window_days: 30\n"
	for _, tc := range []struct {
		name       string
		policy     string
		deprecated string
		uses       []ledger.VersionUse
		want       map[string]string // finding id -> a fragment of its message
	}{
		{"not deprecated", "", "", nil, map[string]string{"version-removed-early": "does not list it in deprecated_versions"}},
		{"deprecated without a date", policy, "", nil, map[string]string{"version-removed-early": "no deprecated_at"}},
		{"window open", policy, "2026-11-21T00:00:00Z", nil, map[string]string{"version-removed-early": "dropped 10 days after its deprecation; the window is 30 days"}},
		{"window over", policy, "2026-10-01T00:00:00Z", nil, map[string]string{"locked-version-removed": "deprecation window"}},
		{"window over, live actions", policy, "2026-10-01T00:00:00Z", []ledger.VersionUse{{Version: "0.9.0", Live: 3, Total: 9}, {Version: "1.0.0", Live: 5}},
			map[string]string{"locked-version-removed": "", "version-in-use": "3 live action(s) of acme.send_note bound to v0.9.0"}},
		{"window over, only finished actions", policy, "2026-10-01T00:00:00Z", []ledger.VersionUse{{Version: "0.9.0", Live: 0, Total: 9}}, map[string]string{"locked-version-removed": ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			files := map[string]string{}
			if tc.policy != "" {
				files["release-policy.yaml"] = tc.policy + "gate: {golden_min_pass: 1.0, regression_min_pass: 1.0, shadow_min_pass: 0.95, high_risk_requires_approval: false}\n"
			}
			dir := writeLintTool(t, files)
			if err := os.WriteFile(filepath.Join(dir, lockfile.FileName), []byte(lock(tc.deprecated)), 0o644); err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, f := range RunWith(dir, Options{Now: func() time.Time { return now }, Uses: map[string][]ledger.VersionUse{"acme.send_note": tc.uses}}) {
				got[f.ID] = f.Message
				if f.Severity != severityOf[f.ID] {
					t.Errorf("%s has severity %s", f.ID, f.Severity)
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("findings %v, want %v", got, tc.want)
			}
			for id, frag := range tc.want {
				if msg, ok := got[id]; !ok || !strings.Contains(msg, frag) {
					t.Fatalf("finding %s = %q, want one mentioning %q (all: %v)", id, msg, frag, got)
				}
			}
		})
	}
}

// TestCaseVersionsUnmatched: a tool.versions entry that matches no version of the tool is
// a warning naming the entry; one that matches is not.
func TestCaseVersionsUnmatched(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		versions string
		warn     bool
	}{{`["2.x"]`, false}, {`[">=1.0.0 <3.0.0"]`, false}, {`["3.x"]`, true}, {`["2.x", ">=4.0.0"]`, true}} {
		t.Run(tt.versions, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if err := os.CopyFS(dir, os.DirFS("../cmd/toolgate/testdata/gate/uncovered")); err != nil {
				t.Fatal(err)
			}
			f := filepath.Join(dir, "shop.place_order", "contracts", "golden", "place_order.yaml")
			b, _ := os.ReadFile(f)
			if err := os.WriteFile(f, []byte(strings.Replace(string(b), "version: 1.0.0}", "version: 1.0.0, versions: "+tt.versions+"}", 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			var got []Finding
			for _, fd := range Run(dir) {
				if fd.ID == "case-versions-unmatched" {
					got = append(got, fd)
				}
			}
			if tt.warn != (len(got) == 1) || (tt.warn && (got[0].Severity != Warning || !strings.Contains(got[0].Message, "matches no version of shop.place_order"))) {
				t.Fatalf("findings %+v, want a warning: %v", got, tt.warn)
			}
		})
	}
}
