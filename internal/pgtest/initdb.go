package pgtest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// initdbArgs are the options every cluster of the package is made with.
var initdbArgs = []string{"-U", "postgres", "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync"}

// initData makes c.data(), a new cluster's data directory: a copy of a
// template that initdb made once (a second of CPU and several of wall time
// on a loaded machine, where a copy takes a fraction), kept for later runs
// under the temporary directory, one per PostgreSQL major version and
// user. Without a usable template it runs initdb itself. Every copy has the
// template's system identifier, which nothing here compares across
// clusters (a standby is a base backup of its primary either way).
func (c *Cluster) initData() error {
	if tpl, err := c.template(); err == nil {
		// As the server user, so the copy is the server's as initdb's is.
		cp := exec.Command("cp", "-a", tpl, c.data())
		cp.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred, Pdeathsig: syscall.SIGKILL}
		cp.Dir = c.dir
		if err := cp.Run(); err == nil {
			return nil
		}
		os.RemoveAll(c.data())
	}
	return c.run("initdb", append([]string{"-D", c.data()}, initdbArgs...)...)
}

// template returns the template data directory, making it when there is
// none yet. Its parent belongs to the user running the tests and nobody
// else may write to it; a template is only ever renamed into place whole.
func (c *Cluster) template() (string, error) {
	base := filepath.Join(os.TempDir(), fmt.Sprintf("toolgate-pgtest-initdb-%d", os.Geteuid()))
	os.Mkdir(base, 0o711) // traversable by the server user when the tests run as root
	fi, err := os.Lstat(base)
	if err != nil {
		return "", err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != os.Geteuid() || fi.Mode().Perm()&0o022 != 0 {
		return "", fmt.Errorf("pgtest: %s is not a directory only this user writes to", base)
	}
	tpl := filepath.Join(base, "pg"+filepath.Base(filepath.Dir(c.bin)))
	if _, err := os.Stat(filepath.Join(tpl, "PG_VERSION")); err == nil {
		return tpl, nil
	}
	tmp, err := os.MkdirTemp(base, "build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	if c.cred != nil {
		if err := os.Chown(tmp, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
			return "", err
		}
	}
	b := &Cluster{bin: c.bin, dir: tmp, cred: c.cred}
	if err := b.run("initdb", append([]string{"-D", b.data()}, initdbArgs...)...); err != nil {
		return "", err
	}
	if err := os.Rename(b.data(), tpl); err != nil {
		// Another test process made it meanwhile.
		if _, serr := os.Stat(filepath.Join(tpl, "PG_VERSION")); serr != nil {
			return "", errors.Join(err, serr)
		}
	}
	return tpl, nil
}
