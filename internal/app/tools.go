package app

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"syscall"
	"time"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/gate"
	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/lockfile"
	"github.com/toolgate/toolgate/rollout"
	"github.com/toolgate/toolgate/toolcall"
)

// Reloading the tools directory without a restart (docs/release-gate.md):
// on SIGHUP, and whenever the poll (tools_reload_interval, default 10s) sees
// the directory's digest change, serve loads the directory again with the
// checks it runs at start-up. A directory that loads serves from then on; one
// that does not leaves the registry that was serving in place and is reported
// (the log, toolgate_tools_reload_failing, a /readyz line). Every replica
// polls its own directory, so a deploy that updates the files reaches every
// replica within one interval. Upstream pins and bindings are read at start.

// LoadTools loads the tools directory (tools, when not nil, instead of
// cfg.ToolsDir) with what toolgate.lock says of its versions.
func LoadTools(cfg *config.Config, tools fs.FS) (toolcall.Tools, error) {
	var reg *contract.Registry
	var err error
	name := cfg.ToolsDir
	if tools != nil {
		name = "the bundled examples"
		reg, err = contract.LoadFS(tools)
	} else {
		reg, err = contract.Load(cfg.ToolsDir)
	}
	if err != nil {
		return toolcall.Tools{}, fmt.Errorf("load tools from %s: %w", name, err)
	}
	fsys := tools
	if fsys == nil {
		fsys = os.DirFS(cfg.ToolsDir)
	}
	deps, _, err := LockSources(fsys)
	if err != nil {
		return toolcall.Tools{}, fmt.Errorf("tools %s: %w", name, err)
	}
	return toolcall.Tools{Registry: reg, DeprecatedAt: deps.Locked, Released: deps.Released, Release: deps.Release}, nil
}

// LockSources reads toolgate.lock the one way the gateway, `toolgate
// export` and `toolgate lock` share (rollout.FromLock: deprecated_at, the
// versions that may be the released default, holds and what each release
// replaced), and a reader of approvals/*.yaml (read at each promotion, so an
// approval deployed later counts).
func LockSources(fsys fs.FS) (rollout.Deprecations, func() ([]gate.Approval, error), error) {
	var lock *lockfile.Lock
	data, err := fs.ReadFile(fsys, lockfile.FileName)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return rollout.Deprecations{}, nil, fmt.Errorf("read %s: %w", lockfile.FileName, err)
	default:
		if lock, err = lockfile.Parse(data); err != nil {
			return rollout.Deprecations{}, nil, fmt.Errorf("read %s: %w", lockfile.FileName, err)
		}
	}
	deps := rollout.FromLock(lock)
	if deps.Locked == nil {
		deps.Locked = func(string, string) (time.Time, bool) { return time.Time{}, false }
	}
	return deps, func() ([]gate.Approval, error) { return ReadApprovals(fsys) }, nil
}

// ReadApprovals reads approvals/*.yaml of a tools directory.
func ReadApprovals(fsys fs.FS) ([]gate.Approval, error) {
	entries, err := fs.ReadDir(fsys, "approvals")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []gate.Approval
	for _, en := range entries {
		if ext := path.Ext(en.Name()); en.IsDir() || (ext != ".yaml" && ext != ".yml") {
			continue
		}
		name := path.Join("approvals", en.Name())
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		a, err := gate.ParseApproval(data, name)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// reloadTools loads cfg.ToolsDir again with serve's start-up checks (check,
// when set) and hands it to srv; a directory that fails is reported to srv
// instead.
func reloadTools(cfg *config.Config, check func(*config.Config) error, srv *gateway.Server) error {
	if check != nil {
		if err := check(cfg); err != nil {
			srv.ReloadFailed(err)
			return err
		}
	}
	t, err := LoadTools(cfg, nil)
	if err != nil {
		srv.ReloadFailed(err)
		return err
	}
	return srv.Reload(t)
}

// toolsDigest sums the names, sizes, modes and modification times of every
// file under dir: a change to any of them changes it.
func toolsDigest(dir string) (string, error) {
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fmt.Fprintf(h, "%s\x00%d\x00%d\x00%d\n", rel, info.Size(), info.Mode(), info.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%x", h.Sum(nil)), nil
}

// watchTools reloads the tools directory on SIGHUP and when the poll sees
// it change, until ctx ends.
func watchTools(ctx context.Context, cfg *config.Config, check func(*config.Config) error, srv *gateway.Server) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	last, _ := toolsDigest(cfg.ToolsDir)
	every := cfg.ToolsReloadInterval
	if every <= 0 {
		every = config.DefaultToolsReload
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
		case <-tick.C:
			d, err := toolsDigest(cfg.ToolsDir)
			if err != nil {
				if !errors.Is(err, fs.ErrNotExist) || d != last {
					srv.ReloadFailed(fmt.Errorf("read the tools directory %s: %w", cfg.ToolsDir, err))
				}
				last = ""
				continue
			}
			if d == last {
				continue
			}
		}
		last, _ = toolsDigest(cfg.ToolsDir)
		reloadTools(cfg, check, srv) // reported by srv
	}
}
