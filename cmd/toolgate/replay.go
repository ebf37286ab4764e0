package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/toolgate/toolgate/replay"
)

func init() {
	register(command{Name: "replay", Summary: "re-send executed calls with their keys to a sandbox, compare", Run: runReplay})
}

const replaySynopsis = `(--log FILE | --from-ledger DSN [--tenant T]) --target URL [--allow-target HOST]...
       [--target-kind auto|downstream|gateway] [--config toolgate.yaml] [--key KEY]
       [--tool ID] [--since T] [--limit N] [--compare bytes|json] [--format F]

Re-sends every executed call of a decision log (written with arguments: full) or a ledger
to a sandbox, with the same downstream key and payload, and compares the status and the
body with the recorded ones: deterministic, differs (with the first difference as a JSON
pointer and both values), not replayable (arguments masked, erased or not logged; no
recorded response) or skipped (replays, conflicts, invalid and read-only calls).

--target is a sandbox copy of the tools' downstream (each call goes to its binding's path
on the target's host) or a toolgate gateway with a fresh ledger in front of one; auto
tells them apart with one GET of /problems/idempotency_key_reused, which only a gateway
serves. A target that is not on this machine is refused unless --allow-target names its
host: replaying against production is a second refund. The log names each call's
downstream request; --config supplies bindings for records that do not (a ledger).
--key (default $TOOLGATE_KEY) is the gateway target's API key. --since takes an RFC 3339
time or a duration back from now (24h). Exit 0 when nothing differs, 1 when a call
differs, 2 on usage or load errors.`

// stringsFlag collects a repeatable flag.
type stringsFlag []string

func (s *stringsFlag) String() string     { return strings.Join(*s, ",") }
func (s *stringsFlag) Set(v string) error { *s = append(*s, v); return nil }

// replayNow is replay's clock for --since durations; tests replace it.
var replayNow = time.Now

func runReplay(ctx context.Context, e env) int {
	fs := newFlagSet(e, "replay", replaySynopsis)
	logPath := fs.String("log", "", "decision log to replay (JSON Lines; - for standard input)")
	dsn := fs.String("from-ledger", "", "ledger to replay: sqlite://PATH or postgres://…")
	tenant := fs.String("tenant", toolcallDefaultTenant, "the tenant whose actions --from-ledger replays")
	target := fs.String("target", "", "base URL of the sandbox (or of a gateway in front of one) (required)")
	var allow stringsFlag
	fs.Var(&allow, "allow-target", "allow a target `HOST` that is not loopback (repeatable); only ever a sandbox")
	kind := fs.String("target-kind", string(replay.KindAuto), "what the target is: auto, downstream or gateway")
	cfgPath := fs.String("config", "", "toolgate.yaml whose bindings reach tools the records name no request for (default for --from-ledger: ./toolgate.yaml when present)")
	key := fs.String("key", "", "API key for a gateway target (default $TOOLGATE_KEY); never printed")
	tool := fs.String("tool", "", "replay only this tool's calls")
	since := fs.String("since", "", "replay only records from this time: RFC 3339, or a duration back from now (24h)")
	limit := fs.Int("limit", 0, "replay at most this many executed calls (0: all)")
	compare := fs.String("compare", string(replay.CompareBytes), "compare bodies byte for byte (bytes) or as canonical JSON (json)")
	timeout := fs.Duration("timeout", replay.DefaultTimeout, "per-call timeout")
	format := fs.String("format", "text", "output format: "+strings.Join(replay.Formats, "|"))
	pos, code, ok := parseFlags(fs, e.Args)
	if !ok {
		return code
	}
	usage := func(format string, args ...any) int {
		fmt.Fprintf(e.Stderr, "toolgate replay: "+format+"\n", args...)
		return exitUsage
	}
	switch {
	case len(pos) > 0:
		return usage("unexpected argument %q", pos[0])
	case (*logPath == "") == (*dsn == ""):
		fs.Usage()
		return usage("give exactly one of --log and --from-ledger")
	case *target == "":
		fs.Usage()
		return usage("--target is required")
	case *compare != string(replay.CompareBytes) && *compare != string(replay.CompareJSON):
		return usage("--compare %q is not bytes or json", *compare)
	case *kind != string(replay.KindAuto) && *kind != string(replay.KindDownstream) && *kind != string(replay.KindGateway):
		return usage("--target-kind %q is not auto, downstream or gateway", *kind)
	case *limit < 0:
		return usage("--limit must not be negative")
	}
	if *key == "" {
		*key = os.Getenv("TOOLGATE_KEY")
	}
	if msg := checkFormat(*format); msg != "" {
		return usage("%s", msg)
	}
	if err := replay.CheckTarget(*target, allow); err != nil {
		return usage("%v", err)
	}
	filter := replay.Filter{ToolID: *tool, Limit: *limit}
	if *since != "" {
		t, err := parseSince(*since, replayNow())
		if err != nil {
			return usage("--since: %v", err)
		}
		filter.Since = t
	}
	cfg := replay.Config{Target: *target, Kind: replay.Kind(*kind), Compare: replay.Compare(*compare), Key: *key, Timeout: *timeout, AllowTargets: allow}
	// The bindings: --config, else (for --from-ledger) ./toolgate.yaml when
	// present, as serve reads it.
	if *cfgPath != "" || *dsn != "" {
		path, explicit := *cfgPath, *cfgPath != ""
		if !explicit {
			path = defaultConfigFile
		}
		c, err := readOptionalConfig(path, explicit)
		if err != nil {
			return usage("%v", err)
		}
		if c != nil {
			cfg.Bindings = invokeBindings(c.Bindings)
		}
	}
	if cfg.Kind == replay.KindAuto {
		k, err := replay.ProbeKind(ctx, *target, replay.GuardedClient(allow, nil, 5*time.Second))
		if err != nil {
			return usage("%v", err)
		}
		cfg.Kind = k
	}
	if cfg.Kind == replay.KindGateway {
		fmt.Fprintln(e.Stderr, "toolgate replay: the target is a toolgate gateway: its bindings decide where each call goes; they must point at a sandbox, and its ledger must be fresh")
	}

	var calls []replay.Call
	var source string
	var err error
	if *logPath != "" {
		source = *logPath
		calls, err = readReplayLog(e, *logPath, filter)
	} else {
		source = *dsn
		calls, err = readReplayLedger(ctx, *dsn, *tenant, filter)
	}
	if err != nil {
		return usage("%v", err)
	}
	rep, err := replay.Run(ctx, cfg, calls)
	if err != nil {
		return usage("%v", err)
	}
	rep.Source = source
	if err := replay.Write(e.Stdout, rep, *format); err != nil {
		return usage("%v", err)
	}
	if rep.Failed() {
		return exitNegative
	}
	return exitOK
}

// toolcallDefaultTenant is the tenant of every call of a gateway without keys.
const toolcallDefaultTenant = "default"

// parseSince reads an RFC 3339 time, or a duration before now.
func parseSince(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return time.Time{}, fmt.Errorf("%q is neither an RFC 3339 time (2026-11-30T09:00:00Z) nor a duration (24h)", s)
	}
	return now.Add(-d), nil
}

func readReplayLog(e env, path string, f replay.Filter) ([]replay.Call, error) {
	var r io.Reader = e.Stdin
	if path != "-" {
		file, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer file.Close()
		r = file
	}
	return replay.FromLog(r, f)
}

func readReplayLedger(ctx context.Context, dsn, tenant string, f replay.Filter) ([]replay.Call, error) {
	store, err := openExistingLedger(ctx, dsn)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	return replay.FromLedger(ctx, store, tenant, f)
}
