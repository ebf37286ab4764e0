package lockfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/contract"
)

var clock = func() time.Time { return time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC) }

// setup copies the bundled examples and locks them.
func setup(t *testing.T) (string, *Lock) {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("../examples/agent-tools")); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, FileName))
	l, err := Build(load(t, dir), nil, BuildOptions{Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	return dir, l
}

func load(t *testing.T, dir string) *contract.Registry {
	t.Helper()
	reg, err := contract.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

func edit(t *testing.T, path, old, new string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(b), old) {
		t.Fatalf("edit %s: %v", path, err)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(b), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLock(t *testing.T) {
	t.Parallel()
	v22 := filepath.Join("refund.create_request", "schemas", "v2.2.0.json")
	tests := []struct {
		name   string
		change func(t *testing.T, dir string)
		check  []string // violation kinds
		build  string   // "" ok, "changed" ChangedError
	}{
		{name: "unchanged"},
		{name: "edited in place", change: func(t *testing.T, dir string) {
			edit(t, filepath.Join(dir, v22), `"phone"`, `"phone", "fax"`)
		}, check: []string{Changed}, build: "changed"},
		{name: "removed", change: func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, v22))
			// cases written for a version that is gone would not load: they go with it
			os.RemoveAll(filepath.Join(dir, "refund.create_request", "contracts"))
		}, check: []string{Removed}},
		{name: "whitespace counts", change: func(t *testing.T, dir string) {
			edit(t, filepath.Join(dir, v22), "{", "{ ")
		}, check: []string{Changed}, build: "changed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir, l := setup(t)
			if tt.change != nil {
				tt.change(t, dir)
			}
			var kinds []string
			for _, v := range Check(dir, l) {
				kinds = append(kinds, v.Kind)
			}
			if strings.Join(kinds, ",") != strings.Join(tt.check, ",") {
				t.Fatalf("Check kinds %v, want %v", kinds, tt.check)
			}
			next, err := Build(load(t, dir), l, BuildOptions{Now: func() time.Time { return clock().Add(time.Hour) }})
			var ce *ChangedError
			switch {
			case tt.build == "changed" && !errors.As(err, &ce):
				t.Fatalf("Build: %v, want a ChangedError", err)
			case tt.build == "" && err != nil:
				t.Fatal(err)
			case tt.build == "":
				if len(next.Versions) != len(l.Versions) || next.Find("refund.create_request", "2.2.0") == nil {
					t.Fatalf("re-lock lost entries: %+v", next.Versions)
				}
				if !next.Versions[0].LockedAt.Equal(clock()) {
					t.Fatalf("locked_at moved: %v", next.Versions[0].LockedAt)
				}
			}
			if tt.build == "changed" {
				if _, err := Build(load(t, dir), l, BuildOptions{Force: true}); err != nil {
					t.Fatalf("Force: %v", err)
				}
			}
		})
	}
}

func TestDraftAndDeprecated(t *testing.T) {
	t.Parallel()
	dir, _ := setup(t)
	edit(t, filepath.Join(dir, "refund.create_request", "schemas", "v2.2.0.json"), `"effect"`, `"x-draft": true, "effect"`)
	edit(t, filepath.Join(dir, "refund.create_request", "release-policy.yaml"), `deprecated_versions: ["1.x"]`, `deprecated_versions: ["2.1.x"]`)
	l, err := Build(load(t, dir), nil, BuildOptions{Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	if l.Find("refund.create_request", "2.2.0") != nil {
		t.Fatal("a draft version was locked")
	}
	e := l.Find("refund.create_request", "v2.1.0")
	if e == nil || e.DeprecatedAt == nil || !e.DeprecatedAt.Equal(clock()) {
		t.Fatalf("deprecated_at not stamped: %+v", e)
	}
	back, err := Parse(l.Marshal())
	if err != nil || string(back.Marshal()) != string(l.Marshal()) {
		t.Fatalf("round trip: %v", err)
	}
	if _, err := Parse([]byte(`{"lock_version":1,"versions":[{"tool":"a"}]}`)); err == nil {
		t.Fatal("incomplete entry accepted")
	}
	if _, err := Parse([]byte(`{"lock_version":1,"extra":1}`)); err == nil {
		t.Fatal("unknown field accepted")
	}
}

// Rule records are pinned too (docs/reference/files.md): a locked record edited in place is
// refused by Build (unless forced) and reported by CheckDecisions, one that
// was deleted is reported removed, and a new record is simply added.
func TestLockDecisions(t *testing.T) {
	t.Parallel()
	dir, l := setup(t)
	if len(l.Decisions) != 2 || l.FindDecision("refund-duplicate-charge-v1") == nil ||
		l.Decisions[0].File != "decisions/refund-duplicate-charge-v1.yaml" || !l.Decisions[0].LockedAt.Equal(clock()) {
		t.Fatalf("decisions locked: %+v", l.Decisions)
	}
	if v := CheckDecisions(dir, l); len(v) != 0 || len(Check(dir, l)) != 0 {
		t.Fatalf("fresh lock violated: %v", v)
	}
	back, err := Parse(l.Marshal())
	if err != nil || string(back.Marshal()) != string(l.Marshal()) {
		t.Fatalf("round trip: %v", err)
	}

	v1 := filepath.Join(dir, "decisions", "refund-duplicate-charge-v1.yaml")
	edit(t, v1, "wait for the customer to ask", "wait for the customer to call")
	v := CheckDecisions(dir, l)
	if len(v) != 1 || v[0].Kind != Changed || v[0].Record.ID != "refund-duplicate-charge-v1" || !strings.Contains(v[0].String(), "edited in place") {
		t.Fatalf("CheckDecisions = %v", v)
	}
	if len(Check(dir, l)) != 0 {
		t.Fatal("Check reports a record as a version")
	}
	_, err = Build(load(t, dir), l, BuildOptions{Now: clock})
	var ce *ChangedError
	if !errors.As(err, &ce) || len(ce.Violations) != 1 || ce.Violations[0].Record == nil {
		t.Fatalf("Build over an edited record: %v", err)
	}
	if _, err := Build(load(t, dir), l, BuildOptions{Now: clock, Force: true}); err != nil {
		t.Fatalf("Force: %v", err)
	}

	// A new record superseding v2 is added; deleting v1's file is reported.
	dir2, l2 := setup(t)
	b, _ := os.ReadFile(filepath.Join(dir2, "decisions", "refund-duplicate-charge-v2.yaml"))
	v3 := strings.NewReplacer("refund-duplicate-charge-v2", "refund-duplicate-charge-v3", "supersedes: refund-duplicate-charge-v1", "supersedes: refund-duplicate-charge-v2").Replace(string(b))
	if err := os.WriteFile(filepath.Join(dir2, "decisions", "refund-duplicate-charge-v3.yaml"), []byte(v3), 0o644); err != nil {
		t.Fatal(err)
	}
	next, err := Build(load(t, dir2), l2, BuildOptions{Now: func() time.Time { return clock().Add(time.Hour) }})
	if err != nil || len(next.Decisions) != 3 || !next.FindDecision("refund-duplicate-charge-v1").LockedAt.Equal(clock()) ||
		!next.FindDecision("refund-duplicate-charge-v3").LockedAt.Equal(clock().Add(time.Hour)) {
		t.Fatalf("adding a record: %v %+v", err, next)
	}
	os.Remove(filepath.Join(dir2, "decisions", "refund-duplicate-charge-v1.yaml"))
	if v := CheckDecisions(dir2, next); len(v) != 1 || v[0].Kind != Removed {
		t.Fatalf("a deleted record: %v", v)
	}

	if _, err := Parse([]byte(`{"lock_version":1,"versions":[],"decisions":[{"id":"a","file":"decisions/a.yaml","digest":"sha256:00"},{"id":"a","file":"decisions/a.yml","digest":"sha256:00"}]}`)); err == nil {
		t.Fatal("a record locked twice was accepted")
	}
	if _, err := Parse([]byte(`{"lock_version":1,"versions":[],"decisions":[{"id":"a"}]}`)); err == nil {
		t.Fatal("an incomplete record entry was accepted")
	}
}
