package main

import (
	"fmt"
	"io"
	"strings"
)

// dispatch runs the subcommand e.Args[0] of a command that has them
// (toolgate actions, toolgate rollout): names lists them, run(i, args) runs
// names[i] with the arguments after its name. No subcommand prints usage to
// stderr (exit 2); -h, --help and help print it to stdout (exit 0); an
// unknown name, or a flag before the subcommand, is a usage error naming it.
func dispatch(e env, cmd string, names []string, usage func(io.Writer), run func(i int, args []string) int) int {
	if len(e.Args) == 0 {
		usage(e.Stderr)
		return exitUsage
	}
	switch e.Args[0] {
	case "-h", "--help", "-help", "help":
		usage(e.Stdout)
		return exitOK
	}
	for i, name := range names {
		if name == e.Args[0] {
			return run(i, e.Args[1:])
		}
	}
	if strings.HasPrefix(e.Args[0], "-") {
		flagName, _, _ := strings.Cut(strings.TrimLeft(e.Args[0], "-"), "=")
		fmt.Fprintf(e.Stderr, "toolgate %s: flag provided but not defined: -%s (flags follow the subcommand)\n\n", cmd, flagName)
	} else {
		fmt.Fprintf(e.Stderr, "toolgate %s: unknown subcommand %q\n\n", cmd, e.Args[0])
	}
	usage(e.Stderr)
	return exitUsage
}
