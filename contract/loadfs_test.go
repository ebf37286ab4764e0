package contract_test

import (
	"errors"
	"os"
	"testing"
	"testing/fstest"

	"github.com/toolgate/toolgate/contract"
)

// LoadFS reads a tools directory that is a file system exactly as Load reads
// it from disk, and names problems by their paths inside it.
func TestLoadFSMatchesLoad(t *testing.T) {
	t.Parallel()
	disk, err := contract.Load("../examples/agent-tools")
	if err != nil {
		t.Fatal(err)
	}
	fsReg, err := contract.LoadFS(os.DirFS("../examples/agent-tools"))
	if err != nil {
		t.Fatal(err)
	}
	if fsReg.Dir != "." {
		t.Errorf("Dir %q, want .", fsReg.Dir)
	}
	if len(disk.Tools()) != len(fsReg.Tools()) || len(disk.Tools()) == 0 {
		t.Fatalf("%d tools from disk, %d from the file system", len(disk.Tools()), len(fsReg.Tools()))
	}
	for _, want := range disk.Tools() {
		got := fsReg.Tool(want.ID)
		if got == nil || len(got.Versions) != len(want.Versions) || len(got.Cases) != len(want.Cases) || got.Changelog != want.Changelog || got.Owner.Owner != want.Owner.Owner {
			t.Fatalf("%s differs: %+v vs %+v", want.ID, got, want)
		}
		for i, v := range want.Versions {
			if string(got.Versions[i].Raw) != string(v.Raw) {
				t.Errorf("%s %s: schema bytes differ", want.ID, v.Version)
			}
		}
	}
}

func TestLoadFSNamesProblemsInsideTheFileSystem(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{"shop.order/schemas/v1.0.json": {Data: []byte(`{}`)}}
	_, err := contract.LoadFS(fsys)
	var le *contract.LoadError
	if !errors.As(err, &le) || len(le.Problems) == 0 {
		t.Fatalf("got %v, want a *LoadError", err)
	}
	found := false
	for _, p := range le.Problems {
		if p.File == "shop.order/schemas/v1.0.json" {
			found = true
		}
	}
	if !found {
		t.Fatalf("no problem names shop.order/schemas/v1.0.json: %v", le)
	}
}
