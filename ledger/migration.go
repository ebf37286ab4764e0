package ledger

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// Migration is one numbered schema change of a store, read from a file named
// NNN_name.up.sql. A released migration is never edited; a change is a new file.
type Migration struct {
	Version int
	Name    string // the file name without .up.sql
	SQL     string
}

// LoadMigrations reads the *.up.sql files in dir of fsys (a store's embedded
// migration folder) in version order, refusing unnumbered files and
// duplicate numbers. Every store applies its own with its own locking.
func LoadMigrations(fsys fs.FS, dir string) ([]Migration, error) {
	entries, err := fs.Glob(fsys, path.Join(dir, "*.up.sql"))
	if err != nil {
		return nil, err
	}
	var ms []Migration
	seen := map[int]string{}
	for _, p := range entries {
		base := path.Base(p)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must start with a positive number and _", base)
		}
		if prev, dup := seen[v]; dup {
			return nil, fmt.Errorf("migration %s: version %d already used by %s", base, v, prev)
		}
		seen[v] = base
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return nil, err
		}
		ms = append(ms, Migration{Version: v, Name: strings.TrimSuffix(base, ".up.sql"), SQL: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	return ms, nil
}
