package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// signalBound is how long a test waits for the binary to end after a
// signal: far above the grace, so a slow machine does not fail it, and far
// below "forever", which is what a command that ignores its context took.
const signalBound = 30 * time.Second

// A command that never looks at its context (replay reading a log from a
// pipe that is never closed) still ends after SIGTERM or SIGINT: within the
// grace after one signal, at once after a second; with 128 + the signal.
func TestSignalEndsACommandThatIgnoresItsContext(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	t.Parallel()
	bin := buildBinary(t)
	cases := []struct {
		name    string
		signals []syscall.Signal
		code    int
		say     string
	}{
		{"one SIGTERM", []syscall.Signal{syscall.SIGTERM}, 143, "did not stop within"},
		{"one SIGINT", []syscall.Signal{syscall.SIGINT}, 130, "did not stop within"},
		{"two SIGTERMs", []syscall.Signal{syscall.SIGTERM, syscall.SIGTERM}, 143, "again: exiting now"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// A signal that arrives before the command has installed its
			// handlers kills the process by the signal's default action (a
			// loaded machine can take longer than any fixed pause to get
			// there). That is not the behaviour under test: such a run is
			// recognised by its wait status and started again.
			var cmd *exec.Cmd
			var stderr bytes.Buffer
			for attempt := 1; ; attempt++ {
				cmd = exec.Command(bin, "replay", "--log", "-", "--target", "http://127.0.0.1:9", "--target-kind", "downstream")
				stdin, err := cmd.StdinPipe() // never written, never closed: the read blocks forever
				if err != nil {
					t.Fatal(err)
				}
				defer stdin.Close()
				stderr.Reset()
				cmd.Stderr = &stderr
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				done := make(chan error, 1)
				go func() { done <- cmd.Wait() }()
				time.Sleep(time.Duration(attempt) * 300 * time.Millisecond) // the command reaches its read
				for i, s := range tc.signals {
					if i > 0 {
						time.Sleep(100 * time.Millisecond)
					}
					if err := cmd.Process.Signal(s); errors.Is(err, os.ErrProcessDone) {
						break // an earlier signal ended it; the wait status says how
					} else if err != nil {
						t.Fatal(err)
					}
				}
				select {
				case <-done:
				case <-time.After(signalBound):
					cmd.Process.Kill()
					<-done
					t.Fatalf("still running %s after %v; stderr:\n%s", tc.name, signalBound, stderr.String())
				}
				ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
				if !ws.Signaled() || stderr.Len() > 0 {
					break
				}
				if attempt == 5 {
					t.Fatalf("%s: in 5 starts the command never installed its signal handlers before the signal arrived", tc.name)
				}
				t.Logf("attempt %d: the signal arrived before the handlers were installed (killed by %v); starting again", attempt, ws.Signal())
			}
			if got := cmd.ProcessState.ExitCode(); got != tc.code {
				t.Errorf("exit code %d, want %d; stderr:\n%s", got, tc.code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.say) {
				t.Errorf("stderr does not say %q:\n%s", tc.say, stderr.String())
			}
		})
	}
}

// The first signal cancels the context; a command that stops in time
// decides its own exit code (onSignals never calls exit).
func TestOnSignalsCancelsFirst(t *testing.T) {
	t.Parallel()
	sigs := make(chan os.Signal, 2)
	ctx, cancel := context.WithCancel(context.Background())
	exited := make(chan int, 1)
	var stderr bytes.Buffer
	go onSignals(sigs, cancel, time.Hour, &stderr, func(code int) { exited <- code })
	sigs <- syscall.SIGTERM
	<-ctx.Done()
	select {
	case code := <-exited:
		t.Fatalf("exited %d on the first signal before the grace", code)
	case <-time.After(50 * time.Millisecond):
	}
	sigs <- syscall.SIGINT
	if code := <-exited; code != 130 {
		t.Fatalf("second signal: exit %d, want 130", code)
	}
}

func TestGraceOf(t *testing.T) {
	t.Parallel()
	for args, want := range map[string]time.Duration{"serve": drainGrace, "lint": defaultGrace, "": defaultGrace, "nosuch": defaultGrace} {
		if got := graceOf(strings.Fields(args)); got != want {
			t.Errorf("%q: %v, want %v", args, got, want)
		}
	}
}
