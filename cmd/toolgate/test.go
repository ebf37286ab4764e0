package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/toolgate/toolgate/casetest"
	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/gate"
	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/schemadiff"
	"go.yaml.in/yaml/v3"
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
suite meets release-policy.yaml's thresholds, 1 when one does not, 2 on usage or load errors.`

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
		agents, err := loadAgents(filepath.Join(reg.Dir, "agents"))
		if err != nil {
			return cfg, err
		}
		cfg.Agents = agents
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

// agentFile is agents/<name>.yaml.
type agentFile struct {
	Name         string `yaml:"name"`
	Description  string `yaml:"description"`
	SystemPrompt string `yaml:"system_prompt"`
}

// loadAgents reads agents/*.yaml into name → system prompt; a missing folder is empty.
func loadAgents(dir string) (map[string]string, error) {
	out := map[string]string{}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	for _, en := range entries {
		ext := filepath.Ext(en.Name())
		if en.IsDir() || (ext != ".yaml" && ext != ".yml") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, en.Name()))
		if err != nil {
			return nil, err
		}
		var a agentFile
		dec := yaml.NewDecoder(strings.NewReader(string(data)))
		dec.KnownFields(true)
		if err := dec.Decode(&a); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, en.Name()), err)
		}
		if a.Name == "" {
			a.Name = strings.TrimSuffix(en.Name(), ext)
		}
		out[a.Name] = a.SystemPrompt
	}
	return out, nil
}

func runTest(ctx context.Context, e env) int {
	fs := newFlagSet(e, "test", testSynopsis)
	dir := fs.String("dir", "./agent-tools", "tools directory")
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
	if len(args) == 1 {
		*dir = args[0]
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
		return usage(fmt.Sprintf("load %s: %v", *dir, err))
	}
	tools := reg.Tools()
	if *toolID != "" {
		t := reg.Tool(*toolID)
		if t == nil {
			return usage(fmt.Sprintf("unknown tool %q in %s", *toolID, *dir))
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
				return usage(fmt.Sprintf("tool %s has no version %q", t.ID, *to))
			}
		}
		var fromV *contract.Version
		if *from != "" {
			if fromV = t.Version(*from); fromV == nil {
				return usage(fmt.Sprintf("tool %s has no version %q", t.ID, *from))
			}
			cfg.From = fromV.Version
		}
		rep, err := casetest.Run(ctx, cfg)
		if err != nil {
			return usage(err.Error())
		}
		if fromV != nil {
			target := cfg.Target
			if target == nil {
				target = t.Default()
			}
			if err := addDiff(rep, t, fromV, target); err != nil {
				return usage(err.Error())
			}
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

// addDiff fills a report's schema-diff summary and risk.
func addDiff(rep *casetest.Report, t *contract.Tool, from, to *contract.Version) error {
	oldC, err := schemadiff.ParseContract(from.Raw)
	if err != nil {
		return err
	}
	newC, err := schemadiff.ParseContract(to.Raw)
	if err != nil {
		return err
	}
	d := schemadiff.Diff(oldC, newC, schemadiff.Options{Consumers: len(t.Owner.Consumers)})
	rep.DiffSummary, rep.Risk = gate.Summarize(d), string(d.Tier)
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
