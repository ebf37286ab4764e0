// Command toolgate is the gateway and toolchain for the tools that LLM agents call.
//
// Each subcommand lives in its own file and registers itself with register; each
// writes to the io.Writers it is given so tests can read what a user sees.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"
)

// Exit codes shared by every subcommand (SPEC 6).
const (
	exitOK       = 0
	exitNegative = 1 // a negative verdict: invalid, blocked, breaking
	exitUsage    = 2 // usage or load errors
)

// env is what a subcommand may touch: its arguments and standard streams.
type env struct {
	Args   []string
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
}

// command is one subcommand.
type command struct {
	Name    string
	Summary string
	Run     func(ctx context.Context, e env) int
}

var commands = map[string]command{}

// register adds a subcommand; each subcommand file calls it from init.
func register(c command) {
	if _, dup := commands[c.Name]; dup {
		panic("toolgate: duplicate command " + c.Name)
	}
	commands[c.Name] = c
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, env{Args: os.Args[1:], Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr})
	stop()
	os.Exit(code)
}

// run dispatches to a subcommand and returns the process exit code.
func run(ctx context.Context, e env) int {
	if len(e.Args) == 0 || e.Args[0] == "-h" || e.Args[0] == "--help" || e.Args[0] == "help" {
		usage(e.Stdout)
		if len(e.Args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	c, ok := commands[e.Args[0]]
	if !ok {
		fmt.Fprintf(e.Stderr, "toolgate: unknown command %q\n\n", e.Args[0])
		usage(e.Stderr)
		return exitUsage
	}
	e.Args = e.Args[1:]
	return c.Run(ctx, e)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "toolgate: valid, exactly-once, replayable tool calls for LLM agents")
	fmt.Fprintln(w, "\nUsage: toolgate <command> [flags]\n\nCommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].Summary)
	}
	fmt.Fprintln(w, "\nRun 'toolgate <command> --help' for a command's flags.")
}

// newFlagSet returns a FlagSet that reports errors instead of exiting, prints its
// usage to e.Stderr and names the command.
func newFlagSet(e env, name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet("toolgate "+name, flag.ContinueOnError)
	fs.SetOutput(e.Stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: toolgate %s %s\n\nFlags:\n", name, synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args with fs and allows flags after positional arguments
// ("lint DIR --format json"). It returns exitOK with ok=false on --help, and
// exitUsage with ok=false on a bad flag.
func parseFlags(fs *flag.FlagSet, args []string) (positional []string, code int, ok bool) {
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, exitOK, false
			}
			return nil, exitUsage, false
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, exitOK, true
		}
		if rest[0] == "--" {
			return append(positional, rest[1:]...), exitOK, true
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}
