package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/lockfile"
)

func init() {
	register(command{Name: "lock", Summary: "write toolgate.lock for released versions", Run: runLock})
}

const lockSynopsis = `[DIR] [--dir DIR] [--check] [--force]

Writes DIR/toolgate.lock with the SHA-256 digest of every released schema file (every
version whose file does not set "x-draft": true). Locking is additive: versions already
locked keep their entry, even when their file is gone. A locked version whose file changed
in place is refused (exit 1) unless --force. --check writes nothing and exits 1 when the
lock is missing, stale or violated. Exit 2 on usage or load errors.`

// lockNow is the clock of `toolgate lock`; tests replace it.
var lockNow = func() time.Time { return time.Now().UTC() }

func runLock(_ context.Context, e env) int {
	fs := newFlagSet(e, "lock", lockSynopsis)
	dir := fs.String("dir", "./agent-tools", "tools directory")
	check := fs.Bool("check", false, "write nothing; exit 1 when the lock is missing or out of date")
	force := fs.Bool("force", false, "re-digest locked versions that changed in place (breaks immutability)")
	args, code, ok := parseFlags(fs, e.Args)
	if !ok {
		return code
	}
	if len(args) > 1 {
		fs.Usage()
		return exitUsage
	}
	if len(args) == 1 {
		*dir = args[0]
	}
	reg, err := contract.Load(*dir)
	if err != nil {
		fmt.Fprintf(e.Stderr, "toolgate lock: load %s: %v\n", *dir, err)
		return exitUsage
	}
	prev, err := lockfile.Read(*dir)
	if err != nil {
		fmt.Fprintf(e.Stderr, "toolgate lock: %v\n", err)
		return exitUsage
	}
	next, err := lockfile.Build(reg, prev, lockfile.BuildOptions{Now: lockNow, Force: *force})
	var ce *lockfile.ChangedError
	if errors.As(err, &ce) {
		for _, v := range ce.Violations {
			fmt.Fprintf(e.Stderr, "toolgate lock: %s\n", v)
		}
		fmt.Fprintln(e.Stderr, "toolgate lock: released versions are immutable; release a new version (or pass --force)")
		return exitNegative
	}
	if err != nil {
		fmt.Fprintf(e.Stderr, "toolgate lock: %v\n", err)
		return exitUsage
	}
	path := filepath.Join(*dir, lockfile.FileName)
	data := next.Marshal()
	if *check {
		if prev == nil || !bytes.Equal(prev.Marshal(), data) {
			fmt.Fprintf(e.Stdout, "%s is missing or out of date: run toolgate lock %s\n", path, *dir)
			return exitNegative
		}
		fmt.Fprintf(e.Stdout, "%s is up to date (%d released versions)\n", path, len(next.Versions))
		return exitOK
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		fmt.Fprintf(e.Stderr, "toolgate lock: %v\n", err)
		return exitUsage
	}
	added := len(next.Versions)
	if prev != nil {
		added -= len(prev.Versions)
	}
	fmt.Fprintf(e.Stdout, "wrote %s: %d released versions (%d new)\n", path, len(next.Versions), added)
	return exitOK
}
