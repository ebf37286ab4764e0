package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/toolgate/toolgate/casetest"
	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/gate"
	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/schemadiff"
)

func init() {
	register(command{Name: "test", Summary: "run contract cases, print the report", Run: runTest})
}

const testSynopsis = `[DIR] [--tool ID] [--from V --to V | --version V] [--model-url URL] [--target URL] [--format F]

Replays the contract cases (contracts/golden, regression, shadow) of every tool, or of
--tool, against its default version (or --to/--version). Cases written for the versions
release-policy.yaml lists in compatible_with, and for --from, are replayed against the new
version. Without --model-url the recorded agent_response is checked; with it, an
OpenAI-compatible chat completions API plays the agent (its key from TOOLGATE_MODEL_API_KEY).
--target sends valid arguments to a live tool and checks its answer. Exit 0 when every
suite meets release-policy.yaml's thresholds, 1 when one does not or when the report rests on
no case ("no cases"; for a risk_level high tool, or a major change with --from, no golden or
regression case covering the version), 2 on usage or load errors.`

// replayFlags are the flags test and gate share.
type replayFlags struct {
	modelURL, modelName, target *string
	concurrency                 *int
}

func addReplayFlags(fs *flag.FlagSet) replayFlags {
	return replayFlags{
		modelURL:    fs.String("model-url", "", "OpenAI-compatible chat completions endpoint that plays the agent"),
		modelName:   fs.String("model", "", "model name sent to --model-url (default toolgate-test)"),
		target:      fs.String("target", "", "live tool URL: POST each valid case's arguments and check the result"),
		concurrency: fs.Int("concurrency", 0, "cases checked at once (default 4 with a model, else GOMAXPROCS)"),
	}
}

// config builds the replay configuration: agent prompts, model and live target.
func (f replayFlags) config(e env, reg *contract.Registry) (casetest.Config, error) {
	cfg := casetest.Config{Concurrency: *f.concurrency}
	if *f.modelURL != "" {
		exp, err := provider.Export(reg, provider.FormatOpenAI)
		if err != nil {
			return cfg, err
		}
		cfg.Agents = reg.AgentPrompts()
		cfg.Model = &casetest.Model{URL: *f.modelURL, Name: *f.modelName, APIKey: os.Getenv("TOOLGATE_MODEL_API_KEY"), Tools: exp.Tools, Names: exp.Names, Versions: exp.Versions}
		if isTerminal(e.Stderr) {
			cfg.Progress = e.Stderr
		}
	}
	if *f.target != "" {
		cfg.Live = &casetest.Live{URL: *f.target}
	}
	return cfg, nil
}

// isTerminal reports whether w is a character device (progress goes only to terminals).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func runTest(ctx context.Context, e env) int {
	fs := newFlagSet(e, "test", testSynopsis)
	dir := fs.String("dir", defaultToolsDir, "tools directory (default: tools_dir of ./toolgate.yaml, else ./agent-tools)")
	toolID := fs.String("tool", "", "only this tool")
	from := fs.String("from", "", "the version being replaced: its cases are replayed too, and the report shows the diff")
	to := fs.String("to", "", "the version to replay against (default: the tool's default version)")
	version := fs.String("version", "", "same as --to")
	format := fs.String("format", "text", "output format: "+strings.Join(casetest.Formats, "|"))
	rf := addReplayFlags(fs)
	args, code, ok := parseFlags(fs, e.Args)
	if !ok {
		return code
	}
	if len(args) > 1 {
		fs.Usage()
		return exitUsage
	}
	if !settleToolsDir(e, "test", fs, dir, firstArg(args)) {
		return exitUsage
	}
	usage := func(msg string) int {
		fmt.Fprintln(e.Stderr, "toolgate test: "+msg)
		return exitUsage
	}
	if !contains(casetest.Formats, *format) {
		return usage(fmt.Sprintf("unknown --format %q (want %s)", *format, strings.Join(casetest.Formats, "|")))
	}
	if *version != "" {
		if *to != "" && *to != *version {
			return usage("--version and --to disagree")
		}
		*to = *version
	}
	if (*from != "" || *to != "") && *toolID == "" {
		return usage("--from, --to and --version need --tool")
	}
	reg, err := contract.Load(*dir)
	if err != nil {
		return loadFailure(e, "test", *dir, err)
	}
	tools := reg.Tools()
	if *toolID != "" {
		t := reg.Tool(*toolID)
		if t == nil {
			return usage(fmt.Sprintf("%s: %s", *dir, reg.ToolNotFoundDetail(*toolID)))
		}
		tools = []*contract.Tool{t}
	}
	base, err := rf.config(e, reg)
	if err != nil {
		return usage(err.Error())
	}
	var reports []*casetest.Report
	for _, t := range tools {
		cfg := base
		cfg.Tool = t
		if *to != "" {
			if cfg.Target = t.Version(*to); cfg.Target == nil {
				return usage(t.VersionNotFoundDetail(*to))
			}
		}
		var fromV *contract.Version
		if *from != "" {
			if fromV = t.Version(*from); fromV == nil {
				return usage(t.VersionNotFoundDetail(*from))
			}
			cfg.From = fromV.Version
		}
		var d *schemadiff.Report
		if fromV != nil {
			target := cfg.Target
			if target == nil {
				target = t.Default()
			}
			if d, err = diffOf(t, fromV, target); err != nil {
				return usage(err.Error())
			}
			cfg.Change = string(d.Tier)
		}
		rep, err := casetest.Run(ctx, cfg)
		if err != nil {
			return usage(err.Error())
		}
		if d != nil {
			rep.DiffSummary, rep.Risk = gate.Summarize(*d), string(d.Tier)
		}
		reports = append(reports, rep)
	}
	sort.SliceStable(reports, func(i, j int) bool { return reports[i].Tool < reports[j].Tool })
	if err := casetest.Write(e.Stdout, reports, *format); err != nil {
		return usage(err.Error())
	}
	for _, r := range reports {
		if !r.OK() {
			return exitNegative
		}
	}
	return exitOK
}

// diffOf is the classified diff of a release of t, counting its consumers.
func diffOf(t *contract.Tool, from, to *contract.Version) (*schemadiff.Report, error) {
	oldC, err := schemadiff.ParseContract(from.Raw)
	if err != nil {
		return nil, err
	}
	newC, err := schemadiff.ParseContract(to.Raw)
	if err != nil {
		return nil, err
	}
	d := schemadiff.Diff(oldC, newC, schemadiff.Options{Consumers: len(t.Owner.Consumers)})
	return &d, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
