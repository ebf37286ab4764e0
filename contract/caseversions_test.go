package contract

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestVersionSpec(t *testing.T) {
	t.Parallel()
	tests := []struct {
		spec    string
		in, out []string
		err     string
	}{
		{spec: "2.x", in: []string{"2.0.0", "2.9.1"}, out: []string{"1.9.9", "3.0.0"}},
		{spec: "2.1.x", in: []string{"2.1.0", "2.1.7"}, out: []string{"2.2.0"}},
		{spec: "1.0.0", in: []string{"1.0.0"}, out: []string{"1.0.1"}},
		{spec: ">=1.0.0 <3.0.0", in: []string{"1.0.0", "2.9.9"}, out: []string{"0.9.0", "3.0.0"}},
		{spec: ">1.0.0 <=2.0.0", in: []string{"1.0.1", "2.0.0"}, out: []string{"1.0.0", "2.0.1"}},
		{spec: "=2.0.0", in: []string{"2.0.0"}, out: []string{"2.0.1"}},
		{spec: ">=v2.0.0", in: []string{"2.0.0", "10.0.0"}, out: []string{"1.99.0"}},
		{spec: "2.y", err: "is not a version"},
		{spec: "", err: "empty"},
		{spec: ">=1.0", err: "is not a version"},
		{spec: ">=1.0.0 3.0.0", err: "has no operator"},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			t.Parallel()
			s, err := ParseVersionSpec(tt.spec)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("ParseVersionSpec(%q) = %v, want an error with %q", tt.spec, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range tt.in {
				if !s.Matches(v) {
					t.Errorf("%q does not match %s", tt.spec, v)
				}
			}
			for _, v := range tt.out {
				if s.Matches(v) {
					t.Errorf("%q matches %s", tt.spec, v)
				}
			}
		})
	}
}

// TestCaseVersionsLoad: tool.versions is a known field; a case covers its own version and
// what it declares; an entry that does not parse is a load error with its path.
func TestCaseVersionsLoad(t *testing.T) {
	t.Parallel()
	load := func(t *testing.T, toolLine string) (*Registry, error) {
		dir := t.TempDir()
		if err := os.CopyFS(dir, os.DirFS("../cmd/toolgate/testdata/gate/uncovered")); err != nil {
			t.Fatal(err)
		}
		f := filepath.Join(dir, "shop.place_order", "contracts", "golden", "place_order.yaml")
		b, _ := os.ReadFile(f)
		b = []byte(strings.Replace(string(b), "tool: {id: shop.place_order, version: 1.0.0}", toolLine, 1))
		if err := os.WriteFile(f, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return Load(dir)
	}
	reg, err := load(t, `tool: {id: shop.place_order, version: 1.0.0, versions: ["2.x", ">=1.1.0 <1.2.0"]}`)
	if err != nil {
		t.Fatal(err)
	}
	c := reg.Tool("shop.place_order").Cases[0]
	for v, want := range map[string]bool{"1.0.0": true, "1.1.0": true, "2.0.0": true, "v2.0.0": true, "1.2.0": false, "3.0.0": false} {
		if c.Covers(v) != want {
			t.Errorf("Covers(%s) = %v, want %v", v, !want, want)
		}
	}
	if _, err := load(t, `tool: {id: shop.place_order, version: 1.0.0, versions: ["2.y"]}`); err == nil || !strings.Contains(err.Error(), `tool.versions[0]: "2.y" is not a version`) {
		t.Fatalf("a bad entry loads: %v", err)
	}
	if _, err := load(t, `tool: {id: shop.place_order, version: 1.0.0, version_range: "2.x"}`); err == nil || !strings.Contains(err.Error(), "version_range") {
		t.Fatalf("an unknown field loads: %v", err)
	}
}

// FuzzVersionSpec: any tool.versions entry parses or is refused with an error, never a
// panic; a parsed entry matches an exact version it names, and a range's verdict on a
// version agrees with each of its comparators.
func FuzzVersionSpec(f *testing.F) {
	for _, s := range []string{"2.x", "2.1.x", "1.0.0", ">=1.0.0 <3.0.0", "=2.0.0", ">v1.2.3", "<=0.0.0", " >= 1.0.0", "2.*", "x", ">=1.0.0  <1.0.0"} {
		f.Add(s, "2.0.0")
	}
	f.Fuzz(func(t *testing.T, spec, version string) {
		s, err := ParseVersionSpec(spec)
		if err != nil {
			return
		}
		m := s.Matches(version)
		if _, ok := ParseSemver(strings.TrimPrefix(version, "v")); !ok && len(s.cmps) > 0 && m {
			t.Fatalf("range %q matches %q, which is not a version", spec, version)
		}
		for _, c := range s.cmps {
			if m && !(VersionSpec{cmps: []comparator{c}}).Matches(version) {
				t.Fatalf("range %q matches %q but its comparator %s%s does not", spec, version, c.op, c.v)
			}
		}
		if p := strings.TrimPrefix(strings.TrimSpace(spec), "v"); s.pattern != "" && !strings.ContainsAny(p, "xX*") && !s.Matches(p) {
			t.Fatalf("exact pattern %q does not match itself", spec)
		}
	})
}
