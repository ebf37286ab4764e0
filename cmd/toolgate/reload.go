package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/gateway"
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

// loadTools loads the tools directory (tools, when not nil, instead of
// cfg.ToolsDir) with what toolgate.lock says of its versions.
func loadTools(cfg *config.Config, tools fs.FS) (toolcall.Tools, error) {
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
	deps, _, err := lockSources(fsys)
	if err != nil {
		return toolcall.Tools{}, fmt.Errorf("tools %s: %w", name, err)
	}
	return toolcall.Tools{Registry: reg, DeprecatedAt: deps.Locked, Released: deps.Released, Release: deps.Release}, nil
}

// reloadTools loads cfg.ToolsDir again with serve's start-up checks and
// hands it to srv; a directory that fails is reported to srv instead.
func reloadTools(cfg *config.Config, srv *gateway.Server) error {
	var buf bytes.Buffer
	if n := writeFindingLines(&buf, toolsFindingsIn(cfg, nil)); n > 0 {
		err := fmt.Errorf("%s in %s: %s", nounCount(n, "error", "errors"), cfg.ToolsDir, firstLine(buf.String()))
		srv.ReloadFailed(err)
		return err
	}
	t, err := loadTools(cfg, nil)
	if err != nil {
		srv.ReloadFailed(err)
		return err
	}
	return srv.Reload(t)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
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
func watchTools(ctx context.Context, cfg *config.Config, srv *gateway.Server) {
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
		reloadTools(cfg, srv) // reported by srv
	}
}
