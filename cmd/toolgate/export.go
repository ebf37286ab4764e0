package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/configcheck"
	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/lockfile"
	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/rollout"
)

func init() {
	register(command{Name: "export", Summary: "provider tool definitions (openai, openai-responses, anthropic, mcp)", Run: runExport})
}

const exportSynopsis = `--format openai|openai-responses|anthropic|mcp [DIR] [--dir DIR] [--config toolgate.yaml] [--gateway URL] [--key KEY]

Prints {"format", "tools", "names", "versions", "warnings"} as JSON: "tools" is the list to
hand to the provider, "names" maps exported names back to tool ids, "versions" says which
version of each tool is described. What the export had to change for the provider
(keywords strict mode lacks, names it forbids) is printed on standard error.

Which version: the gateway's, one source of truth. With --gateway URL, or --config FILE
whose listen a gateway answers on, the export is that gateway's GET /v1/export for the key
(--key, default $TOOLGATE_KEY): exactly what it hands that key, rollout and canary
included. With --config and no gateway answering, each tool's default as the gateway
would compute it at start: its rollout record in the configuration's ledger, else the
newest version toolgate.lock releases (and does not hold) that the policy does not
deprecate; tools the configuration binds to nothing are left out. With neither, the
lock's released defaults, and standard error says that a gateway's rollout may serve
another. Exit 0; 1 the gateway refused; 2 usage, load errors or a gateway failure.`

// exportTimeout bounds the request to a gateway.
const exportTimeout = 30 * time.Second

func runExport(ctx context.Context, e env) int {
	fs := newFlagSet(e, "export", exportSynopsis)
	dir := fs.String("dir", "", "tools directory (default: tools_dir of the configuration, else ./agent-tools)")
	format := fs.String("format", "", "provider format: "+strings.Join(provider.Formats, "|"))
	cfgPath := fs.String("config", "", "gateway configuration `file`: ask the gateway at its listen, else read its ledger and export only the tools it binds (default ./toolgate.yaml when it exists and no DIR or --dir is given)")
	gw := fs.String("gateway", "", "ask the gateway at this base `URL` (GET /v1/export) what it hands the key")
	key := fs.String("key", "", "the API `key` of the agent the export is for, with --gateway or --config (default $"+envGatewayKey+"); never printed")
	args, code, ok := parseFlags(fs, e.Args)
	if !ok {
		return code
	}
	if len(args) > 1 {
		fs.Usage()
		fmt.Fprintln(e.Stderr, "toolgate export: at most one DIR")
		return exitUsage
	}
	if len(args) == 1 {
		*dir = args[0]
	}
	if *format == "" {
		fs.Usage()
		fmt.Fprintln(e.Stderr, "toolgate export: --format is required")
		return exitUsage
	}
	if *key == "" {
		*key = os.Getenv(envGatewayKey)
	}
	if strings.TrimSpace(*gw) != "" {
		base, err := gatewayBase(*gw, "")
		if err != nil {
			fmt.Fprintf(e.Stderr, "toolgate export: --gateway: %v\n", err)
			return exitUsage
		}
		code, _ := exportFromGateway(ctx, e, base, "--gateway", *format, *key, false)
		return code
	}
	if !isFlagSet(fs, "config") && len(args) == 0 && !isFlagSet(fs, "dir") {
		if _, err := os.Stat(defaultConfigFile); err == nil {
			*cfgPath = defaultConfigFile
		}
	}
	var cfg *config.Config
	if *cfgPath != "" {
		data, err := os.ReadFile(*cfgPath)
		if err != nil {
			fmt.Fprintf(e.Stderr, "toolgate export: cannot read the configuration: %v\n", unwrapPathError(err))
			return exitUsage
		}
		if cfg, err = config.ParseFile(*cfgPath, data); err != nil {
			fmt.Fprintf(e.Stderr, "toolgate export: %s does not load:\n%v\n", *cfgPath, err)
			return exitUsage
		}
		if len(args) == 0 && !isFlagSet(fs, "dir") {
			*dir = cfg.ToolsDir
		}
		if base, err := listenURL(cfg.Listen); err == nil && !strings.HasSuffix(base, ":0") {
			if code, reached := exportFromGateway(ctx, e, base, *cfgPath+"'s listen", *format, *key, true); reached {
				return code
			}
		}
	}
	if *dir == "" {
		*dir = defaultToolsDir
	}
	reg, err := contract.Load(*dir)
	if err != nil {
		return loadFailure(e, "export", *dir, err)
	}
	lock, err := lockfile.Read(*dir)
	if err != nil {
		fmt.Fprintf(e.Stderr, "toolgate export: %v\n", err)
		return exitUsage
	}
	deps := rollout.FromLock(lock)
	records := map[string]*ledger.Rollout{}
	var include func(string) bool
	if cfg != nil {
		include = cfg.Bound
		for _, t := range configcheck.Unbound(cfg, reg) {
			fmt.Fprintf(e.Stderr, "toolgate export: left out %s: %s binds it to nothing\n", t.ID, *cfgPath)
		}
		if records, err = ledgerRollouts(ctx, cfg.Ledger); err != nil {
			fmt.Fprintf(e.Stderr, "toolgate export: no gateway answers at %s's listen and its ledger's rollouts cannot be read: %v\n", *cfgPath, err)
			fmt.Fprintln(e.Stderr, "toolgate export: the gateway decides which version serves; export from it: --gateway URL --key KEY")
			return exitUsage
		}
	}
	now := time.Now()
	out, err := provider.ExportPicked(reg, *format, func(t *contract.Tool) *contract.Version {
		if include != nil && !include(t.ID) {
			return nil
		}
		v, _ := rollout.Default(t, records[t.ID], deps, now)
		return v
	})
	if err != nil {
		fmt.Fprintf(e.Stderr, "toolgate export: %v\n", err)
		return exitUsage
	}
	for _, w := range out.Warnings {
		fmt.Fprintf(e.Stderr, "toolgate export: warning: %s\n", w)
	}
	switch {
	case cfg != nil:
		for _, t := range reg.Tools() {
			if r := records[t.ID]; r != nil && r.Mode == ledger.RolloutCanary && (include == nil || include(t.ID)) {
				fmt.Fprintf(e.Stderr, "toolgate export: %s: a canary sends the new actions of some callers to %s; what a key is handed: --gateway URL --key KEY\n", t.ID, r.Candidate)
			}
		}
		fmt.Fprintf(e.Stderr, "toolgate export: no gateway answers at %s's listen: each tool's default from its ledger's rollouts and %s\n", *cfgPath, lockfile.FileName)
	default:
		fmt.Fprintf(e.Stderr, "toolgate export: each tool's released default (%s); a running gateway's rollout may serve another: export from it with --gateway URL (or --config toolgate.yaml)\n", lockfile.FileName)
	}
	return writeExport(e, out)
}

func writeExport(e env, out *provider.Exported) int {
	enc := json.NewEncoder(e.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		fmt.Fprintf(e.Stderr, "toolgate export: %v\n", err)
		return exitUsage
	}
	return exitOK
}

// exportFromGateway prints the gateway's GET /v1/export for the key. reached
// is false when nothing answers at base (a connection refused) and optional
// says that is not an error (--config: the caller falls back).
func exportFromGateway(ctx context.Context, e env, base, from, format, key string, optional bool) (code int, reached bool) {
	ctx, cancel := context.WithTimeout(ctx, exportTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/export?format="+url.QueryEscape(format), nil)
	if err != nil {
		fmt.Fprintf(e.Stderr, "toolgate export: %v\n", err)
		return exitUsage, true
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		var op *net.OpError
		if optional && errors.As(err, &op) && op.Op == "dial" {
			return 0, false
		}
		fmt.Fprintf(e.Stderr, "toolgate export: the gateway at %s (%s) does not answer: %v\n", base, from, err)
		return exitUsage, true
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		fmt.Fprintf(e.Stderr, "toolgate export: the gateway at %s: %v\n", base, err)
		return exitUsage, true
	}
	if resp.StatusCode != http.StatusOK {
		var p struct{ Code, Detail string }
		json.Unmarshal(body, &p)
		if p.Code == "" {
			p.Code, p.Detail = resp.Status, strings.TrimSpace(string(body))
		}
		fmt.Fprintf(e.Stderr, "toolgate export: the gateway at %s (%s) refused: %s: %s\n", base, from, p.Code, oneLine(p.Detail))
		if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
			fmt.Fprintf(e.Stderr, "toolgate export: the export is what the gateway hands one key: pass the agent's key (--key or $%s)\n", envGatewayKey)
		}
		if resp.StatusCode >= 500 {
			return exitUsage, true
		}
		return exitNegative, true
	}
	var out provider.Exported
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&out); err != nil {
		fmt.Fprintf(e.Stderr, "toolgate export: the gateway at %s answered something else than an export: %v\n", base, err)
		return exitUsage, true
	}
	for _, w := range out.Warnings {
		fmt.Fprintf(e.Stderr, "toolgate export: warning: %s\n", w)
	}
	fmt.Fprintf(e.Stderr, "toolgate export: what the gateway at %s (%s) hands this key\n", base, from)
	return writeExport(e, &out), true
}

// ledgerRollouts reads every rollout record of a ledger that exists; a
// SQLite file not created yet holds none.
func ledgerRollouts(ctx context.Context, dsn string) (map[string]*ledger.Rollout, error) {
	out := map[string]*ledger.Rollout{}
	store, err := openExistingLedger(ctx, dsn)
	if errors.Is(err, os.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	defer store.Close()
	rs, err := store.ListRollouts(ctx)
	if err != nil {
		return nil, err
	}
	for _, r := range rs {
		out[r.ToolID] = r
	}
	return out, nil
}
