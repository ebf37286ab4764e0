package main

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// subcommandsIn returns the subcommands a command's --help names: the lines
// under "Subcommands:" ("  name  what it does") and the lower-case words its
// usage line offers first ("Usage: toolgate decisions list|show ID",
// "toolgate import mcp URL … | openapi FILE"), so the reference covers every
// subcommand the binary has, not a list kept by hand.
func subcommandsIn(cmd, help string) []string {
	var names []string
	seen := map[string]bool{}
	add := func(n string) {
		if !seen[n] && subcommandWord.MatchString(n) {
			seen[n] = true
			names = append(names, n)
		}
	}
	lines := strings.Split(help, "\n")
	if usage, ok := strings.CutPrefix(lines[0], "Usage: toolgate "+cmd+" "); ok {
		for _, alt := range strings.Split(usage, " | ") {
			if f := strings.Fields(alt); len(f) > 0 {
				for _, w := range strings.Split(f[0], "|") {
					add(w)
				}
			}
		}
	}
	in := false
	for _, line := range lines {
		switch {
		case strings.TrimSpace(line) == "Subcommands:":
			in = true
		case in && strings.TrimSpace(line) == "":
			in = false
		case in && strings.HasPrefix(line, "  ") && !strings.HasPrefix(line, "    "):
			add(strings.Fields(line)[0])
		}
	}
	return names
}

var subcommandWord = regexp.MustCompile(`^[a-z][a-z-]*$`)

const referenceHead = `# Commands

Every command of ` + "`toolgate`" + `, with the help it prints. This page is generated from the
commands themselves (` + "`go test ./cmd/toolgate -run TestCommandReference -update`" + `), so it
is what the binary says.

Conventions shared by every command:

- ` + "`--help`" + ` prints the command's help on standard output and exits 0; a usage error
  goes to standard error and exits 2. ` + "`toolgate --version`" + ` prints the module version
  and VCS revision.
- **Exit codes:** 0 success; 1 a negative verdict (invalid, blocked, breaking, problems
  found, a call that differs, a refusal of the gateway); 2 usage or load errors (a file that
  cannot be read or parsed, an unreachable gateway).
- Every command that reads a tools directory finds it by one rule: the ` + "`DIR`" + ` argument
  (for those shown with ` + "`[DIR]`" + `), else ` + "`--dir DIR`" + `, else the ` + "`tools_dir`" + ` of
  ` + "`./toolgate.yaml`" + ` when that file exists (the file ` + "`check`" + `, ` + "`serve`" + `, ` + "`actions`" + ` and
  ` + "`rollout`" + ` read), else ` + "`./agent-tools`" + `. A ` + "`./toolgate.yaml`" + ` that does not load is
  named (exit 2); fix it or name the directory.
- Report commands offer ` + "`--format`" + ` (` + "`text`" + `, ` + "`json`" + `, ` + "`junit`" + `, ` + "`markdown`" + ` where a CI would
  use them; each command's help lists its own).
- The operator clients (` + "`actions`" + `, ` + "`rollout`" + `) read the gateway address from
  ` + "`--gateway`" + ` or ` + "`$TOOLGATE_URL`" + ` and the key from ` + "`--key`" + ` or ` + "`$TOOLGATE_KEY`" + `.

More on: ` + "`serve`" + ` and ` + "`check`" + ` [../configuration.md](../configuration.md); ` + "`actions`" + `
[../operator-cli.md](../operator-cli.md); ` + "`lint`" + `, ` + "`validate`" + `, ` + "`export`" + `
[../contracts.md](../contracts.md); ` + "`diff`" + ` [../schemadiff.md](../schemadiff.md); ` + "`test`" + `,
` + "`gate`" + `, ` + "`lock`" + `, ` + "`rollout`" + ` [../release-gate.md](../release-gate.md); ` + "`replay`" + `
[../replay.md](../replay.md); ` + "`import`" + `, ` + "`upstream`" + ` [../upstreams.md](../upstreams.md);
` + "`sandbox`" + ` [../sandbox.md](../sandbox.md); ` + "`bench`" + ` [../performance.md](../performance.md).
`

// TestCommandReference: docs/reference/commands.md is every command's --help,
// as the binary prints it.
func TestCommandReference(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString(referenceHead)
	top := runCLI(t, "", "--help")
	b.WriteString("\n## toolgate\n\n```text\n" + top.stdout + top.stderr + "```\n")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		runs := [][]string{{n}}
		for i := 0; i < len(runs); i++ {
			args := runs[i]
			r := runCLI(t, "", append(args, "--help")...)
			if r.code != exitOK {
				t.Fatalf("toolgate %s --help: exit %d", strings.Join(args, " "), r.code)
			}
			if i == 0 {
				if strings.Contains(r.stdout, "Subcommands:") && len(subcommandsIn(n, r.stdout)) == 0 {
					t.Fatalf("toolgate %s --help lists subcommands the reference could not read", n)
				}
				for _, sub := range subcommandsIn(n, r.stdout) {
					runs = append(runs, []string{n, sub})
				}
			}
			level := "##"
			if i > 0 {
				level = "###"
			}
			b.WriteString("\n" + level + " toolgate " + strings.Join(args, " ") + "\n\n```text\n" + r.stdout + "```\n")
		}
	}
	path := filepath.Join("..", "..", "docs", "reference", "commands.md")
	if *update {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != b.String() {
		t.Errorf("docs/reference/commands.md is not what the commands print; go test ./cmd/toolgate -run TestCommandReference -update rewrites it")
	}
}
