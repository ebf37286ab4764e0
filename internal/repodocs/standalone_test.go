package repodocs

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// forbidden are the names of documents outside the repository that no
// tracked file may point a reader at. They are assembled here so that this
// file does not name them itself (it is still the one file left out).
var forbidden = []string{
	"spec" + ".md",
	"/work/" + "shared",
	"the shared " + "folder",
}

// TestNoFileReferencesOutsideDocuments fails when any file tracked by git
// mentions a document a user of the repository does not have (matched without
// regard to case). Only this file is left out.
func TestNoFileReferencesOutsideDocuments(t *testing.T) {
	t.Parallel()
	root, files := trackedFiles(t)
	self, err := filepath.Abs("standalone_test.go")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 100 {
		t.Fatalf("git lists %d tracked files under %s; expected the whole repository", len(files), root)
	}
	for _, f := range files {
		path := filepath.Join(root, f)
		if path == self {
			continue
		}
		b, err := os.ReadFile(path)
		if os.IsNotExist(err) {
			continue // deleted in the working tree, not yet committed
		}
		if err != nil {
			t.Fatal(err)
		}
		lower := bytes.ToLower(b)
		for _, name := range forbidden {
			if i := bytes.Index(lower, []byte(name)); i >= 0 {
				line := 1 + bytes.Count(b[:i], []byte("\n"))
				t.Errorf("%s:%d mentions %q: the repository's docs must stand alone (write it in docs/ instead)", f, line, name)
			}
		}
	}
}

// trackedFiles returns the repository root and the files git tracks there.
// Without git (a source archive) the test is skipped, except under CI=true.
func trackedFiles(t *testing.T) (string, []string) {
	t.Helper()
	skip := func(why string) {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s, and CI=true requires this check", why)
		}
		t.Skip(why)
	}
	if _, err := exec.LookPath("git"); err != nil {
		skip("git is not installed")
	}
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		skip("not in a git work tree")
	}
	root := strings.TrimSpace(string(out))
	cmd := exec.Command("git", "ls-files", "-z")
	cmd.Dir = root
	out, err = cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	var files []string
	for _, f := range strings.Split(string(out), "\x00") {
		if f != "" {
			files = append(files, f)
		}
	}
	return root, files
}
