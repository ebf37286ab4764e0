// Command toolgate is the gateway and toolchain for the tools that LLM agents call.
//
// Each subcommand lives in its own file and registers itself with register; each
// writes to the io.Writers it is given so tests can read what a user sees.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"sort"
	"syscall"
	"time"

	"github.com/toolgate/toolgate/internal/suggest"
)

// Exit codes shared by every subcommand (docs/reference/commands.md).
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
	// Grace is how long the command may take to stop after a SIGINT or
	// SIGTERM cancelled its context before the process exits anyway.
	// Default defaultGrace; a gateway that drains its calls needs longer.
	Grace time.Duration
}

// defaultGrace is how long a command has to stop after the first SIGINT or
// SIGTERM; a second signal ends the process at once.
const defaultGrace = 5 * time.Second

var commands = map[string]command{}

// register adds a subcommand; each subcommand file calls it from init.
func register(c command) {
	if _, dup := commands[c.Name]; dup {
		panic("toolgate: duplicate command " + c.Name)
	}
	commands[c.Name] = c
}

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go onSignals(sigs, cancel, graceOf(os.Args[1:]), os.Stderr, os.Exit)
	code := run(ctx, env{Args: os.Args[1:], Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr})
	signal.Stop(sigs)
	os.Exit(code)
}

// onSignals is how the process ends on SIGINT and SIGTERM: the first
// cancels the command's context (a command that watches it stops and
// returns its own exit code); when the command has not returned after
// grace, or a second signal comes, the process exits with 128 + the
// signal's number. A command that never looks at its context (a read of a
// pipe that never ends, a library call without one) still ends.
func onSignals(sigs <-chan os.Signal, cancel context.CancelFunc, grace time.Duration, stderr io.Writer, exit func(int)) {
	first := <-sigs
	cancel()
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case second := <-sigs:
		fmt.Fprintf(stderr, "toolgate: %s again: exiting now\n", signalName(second))
		exit(signalCode(second))
	case <-timer.C:
		fmt.Fprintf(stderr, "toolgate: %s: the command did not stop within %s: exiting\n", signalName(first), grace)
		exit(signalCode(first))
	}
}

// graceOf is the grace of the command args name.
func graceOf(args []string) time.Duration {
	if len(args) > 0 {
		if c, ok := commands[args[0]]; ok && c.Grace > 0 {
			return c.Grace
		}
	}
	return defaultGrace
}

func signalName(s os.Signal) string {
	if s == syscall.SIGTERM {
		return "SIGTERM"
	}
	return "SIGINT"
}

// signalCode is the shell's exit status of a process ended by s.
func signalCode(s os.Signal) int {
	if n, ok := s.(syscall.Signal); ok {
		return 128 + int(n)
	}
	return 128 + int(syscall.SIGINT)
}

// run dispatches to a subcommand and returns the process exit code.
func run(ctx context.Context, e env) int {
	if len(e.Args) == 0 {
		usage(e.Stderr)
		return exitUsage
	}
	switch e.Args[0] {
	case "-h", "-help", "--help":
		usage(e.Stdout)
		return exitOK
	case "help":
		if len(e.Args) == 1 {
			usage(e.Stdout)
			return exitOK
		}
		// "toolgate help lint" is "toolgate lint --help"
		e.Args = []string{e.Args[1], "--help"}
	case "-version", "--version", "version":
		fmt.Fprintln(e.Stdout, versionLine())
		return exitOK
	}
	c, ok := commands[e.Args[0]]
	if !ok {
		fmt.Fprintf(e.Stderr, "toolgate: unknown command %q", e.Args[0])
		names := make([]string, 0, len(commands))
		for n := range commands {
			names = append(names, n)
		}
		if near := suggest.Nearest(e.Args[0], names, 2); len(near) > 0 {
			fmt.Fprintf(e.Stderr, "; %s", suggest.DidYouMean(near...))
		}
		fmt.Fprint(e.Stderr, "\n\n")
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
	fmt.Fprintln(w, "\nRun 'toolgate <command> --help' for a command's flags, 'toolgate --version' for the version.")
}

// newFlagSet returns a FlagSet that reports errors instead of exiting and names the
// command. Its usage goes to standard output when asked for (--help, exit 0) and to
// standard error after a usage error (exit 2).
func newFlagSet(e env, name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet("toolgate "+name, flag.ContinueOnError)
	fs.SetOutput(&flagOutput{stdout: e.Stdout, stderr: e.Stderr})
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: toolgate %s %s\n\nFlags:\n", name, synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// flagOutput is a FlagSet's output: standard error, except while parseFlags holds what
// the flag package writes until it knows whether that was help or an error.
type flagOutput struct {
	stdout, stderr io.Writer
	held           *bytes.Buffer
}

func (o *flagOutput) Write(p []byte) (int, error) {
	if o.held != nil {
		return o.held.Write(p)
	}
	return o.stderr.Write(p)
}

// parseFlags parses args with fs and allows flags after positional arguments
// ("lint DIR --format json"). It returns exitOK with ok=false on --help (the usage on
// standard output), and exitUsage with ok=false on a bad flag (the error and the usage on
// standard error).
func parseFlags(fs *flag.FlagSet, args []string) (positional []string, code int, ok bool) {
	for {
		err := parseHeld(fs, args)
		if err != nil {
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

// parseHeld runs fs.Parse and sends what the flag package printed to standard output
// for --help and to standard error for anything else.
func parseHeld(fs *flag.FlagSet, args []string) error {
	o, isOurs := fs.Output().(*flagOutput)
	if !isOurs {
		return fs.Parse(args)
	}
	o.held = &bytes.Buffer{}
	err := fs.Parse(args)
	held := o.held
	o.held = nil
	if errors.Is(err, flag.ErrHelp) {
		o.stdout.Write(held.Bytes())
	} else {
		o.stderr.Write(held.Bytes())
	}
	return err
}

// versionLine is what --version prints: the module version and the VCS revision the
// binary was built from (debug.ReadBuildInfo), and the Go version.
func versionLine() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "toolgate (unknown version: built without module information)"
	}
	return formatVersion(info)
}

// formatVersion is "toolgate VERSION [revision REV [(modified)] TIME] GOVERSION".
func formatVersion(info *debug.BuildInfo) string {
	version := info.Main.Version
	if version == "" {
		version = "(devel)"
	}
	var rev, when string
	modified := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	line := "toolgate " + version
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		line += " revision " + rev
		if modified {
			line += " (modified)"
		}
		if when != "" {
			line += " " + when
		}
	}
	return line + " " + info.GoVersion
}
