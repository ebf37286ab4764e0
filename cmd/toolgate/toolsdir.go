package main

import (
	"flag"
	"fmt"
)

// defaultToolsDir is the tools directory when nothing names one.
const defaultToolsDir = "./agent-tools"

// settleToolsDir applies the one rule every command that reads a tools
// directory follows (docs/reference/commands.md): the DIR argument when given
// (arg != ""), else --dir when set, else the tools_dir of ./toolgate.yaml when
// that file exists (as check, serve, actions and rollout read it), else
// ./agent-tools. It sets *dir and answers false, with the reason printed,
// when ./toolgate.yaml exists but does not load: the reader should fix it or
// name the directory.
func settleToolsDir(e env, cmd string, fset *flag.FlagSet, dir *string, arg string) bool {
	if arg != "" {
		*dir = arg
		return true
	}
	if isFlagSet(fset, "dir") {
		return true
	}
	cfg, err := readOptionalConfig(defaultConfigFile, false)
	if err != nil {
		fmt.Fprintf(e.Stderr, "toolgate %s: %s names the tools directory, but does not load (fix it, or name the directory: toolgate %s DIR):\n%v\n", cmd, defaultConfigFile, cmd, err)
		return false
	}
	if cfg != nil && cfg.ToolsDir != "" {
		*dir = cfg.ToolsDir
	}
	return true
}

// firstArg is the one positional argument of a command that takes at most
// one DIR, or "".
func firstArg(args []string) string {
	if len(args) == 1 {
		return args[0]
	}
	return ""
}
