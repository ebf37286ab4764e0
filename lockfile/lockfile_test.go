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
