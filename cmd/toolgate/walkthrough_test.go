package main

// The walk-throughs (docs/first-tool.md, the walk-through of docs/release-gate.md) are
// executed, command by command, so that no command or output in them can rot. The rules a
// page follows, also written at the end of each page:
//
//   - A fenced block whose info string is `LANG file=PATH` is a file the reader writes: the
//     test writes its content to PATH (relative to the working directory).
//   - A ```console block holds commands, each on a line starting with "$ " (a line ending
//     in a backslash continues on the next), followed by the output it prints (stdout and
//     stderr as a terminal shows them). Each command runs in bash in one working
//     directory, with the toolgate binary on PATH.
//   - A command must exit 0 unless it ends with a comment "# exit N", which is then the
//     exit status it must have.
//   - The whole page runs in ONE bash session with job control, as a person types it: the
//     working directory, variables and jobs carry over, "%1" is the first job started.
//   - A command ending in "&" is a background job (a server); its output is not checked,
//     and the next command waits until it printed its "listening on" line. A job that ends
//     before that (its port is taken, say) fails the page, as it would leave the reader
//     stuck. Every job is stopped at the end.
//   - Outputs are compared after normalising the parts that change from run to run:
//     timestamps, clock times and durations, and ports (the page uses 8080 for the gateway
//     and 9090 for the sandbox; the test runs them on free ports and maps them back; the
//     operator commands get the gateway's address from TOOLGATE_URL). An output line "..."
//     matches any number of lines.
//
// go test ./cmd/toolgate -run TestWalkthroughs -update rewrites the outputs that differ.

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/testrig"
)

// docBlock is a fenced block of a page: its info string and the line range of its body.
type docBlock struct {
	info       string
	start, end int // body lines [start, end) of the page
}

// docCommand is one "$ " command of a console block with its expected output lines.
type docCommand struct {
	text           string // the command, continuation lines joined
	line           int    // line of the "$ " in the page (1-based)
	outStart, outE int    // expected output lines [outStart, outE) of the page
	exit           int
	background     bool
}

func parseBlocks(lines []string) []docBlock {
	var out []docBlock
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if !strings.HasPrefix(l, "```") {
			continue
		}
		b := docBlock{info: strings.TrimSpace(strings.TrimPrefix(l, "```")), start: i + 1}
		j := i + 1
		for j < len(lines) && strings.TrimSpace(lines[j]) != "```" {
			j++
		}
		b.end = j
		out = append(out, b)
		i = j
	}
	return out
}

var exitComment = regexp.MustCompile(`\s+# exit (\d+)$`)

func parseCommands(lines []string, b docBlock) []docCommand {
	var cmds []docCommand
	for i := b.start; i < b.end; i++ {
		if !strings.HasPrefix(lines[i], "$ ") {
			if len(cmds) == 0 {
				continue
			}
			cmds[len(cmds)-1].outE = i + 1
			continue
		}
		c := docCommand{line: i + 1}
		text := strings.TrimPrefix(lines[i], "$ ")
		for strings.HasSuffix(text, "\\") && i+1 < b.end {
			i++
			text += "\n" + lines[i]
		}
		if m := exitComment.FindStringSubmatch(text); m != nil {
			c.exit, _ = strconv.Atoi(m[1])
			text = text[:len(text)-len(m[0])]
		}
		text = strings.TrimSpace(text)
		if strings.HasSuffix(text, "&") {
			c.background = true
			text = strings.TrimSpace(strings.TrimSuffix(text, "&"))
		}
		c.text = text
		c.outStart, c.outE = i+1, i+1
		cmds = append(cmds, c)
	}
	return cmds
}

var volatile = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`), "<time>"},
	{regexp.MustCompile(`\b\d{4}/\d\d/\d\d\b`), "<date>"},
	{regexp.MustCompile(`@\d{9,11}\b`), "@<unix seconds>"}, // Deprecation: @1796157227
	{regexp.MustCompile(`\b(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d\d (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4}\b`), "<date>"},
	{regexp.MustCompile(`\b\d\d:\d\d:\d\d(\.\d+)?\b`), "<clock>"},
	// With the spaces before it: a right-aligned column's padding changes
	// with the duration's width (0ms, 49ms).
	{regexp.MustCompile(`\s*\b\d+(\.\d+)?(ns|µs|us|ms|s)\b`), " <duration>"},
	{regexp.MustCompile(`"(mean_latency_ms|duration_ms|latency_ms)":\s*[0-9.e+-]+`), `"$1":<n>`},
}

func normalise(s string) string {
	for _, v := range volatile {
		s = v.re.ReplaceAllString(s, v.with)
	}
	return s
}

// outputMatches compares output lines with expected ones; an expected "..." line matches
// any number of lines.
func outputMatches(got, want []string) bool {
	if len(want) == 0 {
		return len(got) == 0
	}
	if strings.TrimSpace(want[0]) == "..." {
		for i := 0; i <= len(got); i++ {
			if outputMatches(got[i:], want[1:]) {
				return true
			}
		}
		return false
	}
	return len(got) > 0 && normalise(got[0]) == normalise(want[0]) && outputMatches(got[1:], want[1:])
}

func splitLines(s string) []string {
	s = strings.ReplaceAll(s, "\r\n", "\n") // HTTP heads, as curl -i prints them
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// walkthrough runs one page in one bash session, the way a person types it: a command
// ending in "&" is a job of that shell (so "%1" names the first one, and a second
// "toolgate serve &" while one runs fails to bind, as it would at a terminal), and
// variables, the working directory and the jobs carry from one command to the next.
type walkthrough struct {
	t        *testing.T
	page     string
	dir, bin string
	ports    map[string]string // page port -> free port
	env      []string
	commands int // commands run by the last runPage
	sh       *shellSession
}

// shellSession is one bash process fed the page's commands on its standard input.
// Each command's output goes to a file of its own outside the working directory, and
// the shell answers on its standard output with a marker line once the command ends.
type shellSession struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	markers chan string
	scratch string
	seq     int
	jobs    []int // process ids of the background jobs, in start order
	stderr  *testrig.Buffer
}

func (w *walkthrough) mapPorts(s string) string {
	for page, free := range w.ports {
		s = strings.ReplaceAll(s, ":"+page, ":"+free)
	}
	return s
}

func (w *walkthrough) unmapPorts(s string) string {
	for page, free := range w.ports {
		s = strings.ReplaceAll(s, ":"+free, ":"+page)
	}
	return s
}

// startShell starts the page's bash session with job control on.
func (w *walkthrough) startShell() {
	w.t.Helper()
	cmd := exec.Command("bash", "--noprofile", "--norc")
	cmd.Dir, cmd.Env = w.dir, w.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		w.t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		w.t.Fatal(err)
	}
	sh := &shellSession{cmd: cmd, stdin: stdin, markers: make(chan string, 16), scratch: w.t.TempDir(), stderr: &testrig.Buffer{}}
	cmd.Stderr = sh.stderr
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m, ok := strings.CutPrefix(sc.Text(), "__walkthrough__ "); ok {
				sh.markers <- m
			}
		}
		close(sh.markers)
	}()
	w.sh = sh
	// Job control, as at a terminal: every job is a process group of its own.
	w.send("set -m")
}

// send writes one line of script to the shell and waits for its marker: the words the
// shell printed after "__walkthrough__ N".
func (w *walkthrough) send(script string) []string {
	w.t.Helper()
	sh := w.sh
	sh.seq++
	fmt.Fprintf(sh.stdin, "%s\n", script)
	fmt.Fprintf(sh.stdin, "echo \"__walkthrough__ %d $? $!\"\n", sh.seq)
	timeout := time.After(90 * time.Second)
	for {
		select {
		case m, ok := <-sh.markers:
			if !ok {
				w.t.Fatalf("%s: the shell ended early:\n%s", w.page, sh.stderr.String())
			}
			f := strings.Fields(m)
			if len(f) > 0 && f[0] == strconv.Itoa(sh.seq) {
				return f[1:]
			}
		case <-timeout:
			w.stopShell()
			w.t.Fatalf("%s: %q did not end within 90s", w.page, script)
		}
	}
}

// run runs a foreground command and returns its exit status and output.
func (w *walkthrough) run(c docCommand) (int, string) {
	w.t.Helper()
	out := filepath.Join(w.sh.scratch, fmt.Sprintf("cmd%d.out", w.sh.seq+1))
	words := w.send("{\n" + w.mapPorts(c.text) + "\n} >" + shellQuote(out) + " 2>&1 </dev/null")
	code, _ := strconv.Atoi(words[0])
	b, err := os.ReadFile(out)
	if err != nil {
		w.t.Fatal(err)
	}
	return code, string(b)
}

// background starts a job the way "CMD &" does at a terminal (its output to a file of
// its own instead of the terminal) and waits until it prints its "listening on" line;
// a job that ends first (it could not bind its port, say) fails the page.
func (w *walkthrough) background(c docCommand) {
	w.t.Helper()
	log := filepath.Join(w.sh.scratch, fmt.Sprintf("job%d.log", w.sh.seq+1))
	words := w.send(w.mapPorts(c.text) + " >" + shellQuote(log) + " 2>&1 </dev/null &")
	pid, err := strconv.Atoi(words[len(words)-1])
	if err != nil {
		w.t.Fatalf("%s:%d: %s: no job id: %v", w.page, c.line, c.text, words)
	}
	w.sh.jobs = append(w.sh.jobs, pid)
	listening := regexp.MustCompile(`listening on (?:https?://)?([0-9.]+:\d+)`)
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, _ := os.ReadFile(log)
		if m := listening.FindStringSubmatch(string(b)); m != nil {
			if conn, err := net.Dial("tcp", m[1]); err == nil {
				conn.Close()
				return
			}
		}
		if syscall.Kill(pid, 0) != nil {
			w.t.Fatalf("%s:%d: %s & ended before it listened (as a person at a terminal would see it):\n%s", w.page, c.line, c.text, w.unmapPorts(string(b)))
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("%s:%d: %s & printed no listening line:\n%s", w.page, c.line, c.text, w.unmapPorts(string(b)))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stopShell ends the shell and every job it started, as closing the terminal would
// (SIGINT first, so servers shut down cleanly; SIGKILL after 15 s).
func (w *walkthrough) stopShell() {
	sh := w.sh
	if sh == nil {
		return
	}
	w.sh = nil
	sh.stdin.Close()
	for _, pid := range sh.jobs {
		syscall.Kill(-pid, syscall.SIGINT)
	}
	deadline := time.Now().Add(15 * time.Second)
	for _, pid := range sh.jobs {
		for syscall.Kill(pid, 0) == nil && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		syscall.Kill(-pid, syscall.SIGKILL)
	}
	syscall.Kill(-sh.cmd.Process.Pid, syscall.SIGKILL)
	sh.cmd.Wait()
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// runPage executes a page and returns it with the outputs that differ rewritten.
func (w *walkthrough) runPage(src string) (string, bool) {
	w.t.Helper()
	lines := strings.Split(src, "\n")
	w.commands = 0
	w.startShell()
	defer w.stopShell()
	replace := map[int][]string{} // outStart -> new output lines (for -update)
	ends := map[int]int{}
	ok := true
	for _, b := range parseBlocks(lines) {
		lang, rest, _ := strings.Cut(b.info, " ")
		if path, isFile := strings.CutPrefix(strings.TrimSpace(rest), "file="); isFile {
			body := strings.Join(lines[b.start:b.end], "\n") + "\n"
			full := filepath.Join(w.dir, path)
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				w.t.Fatal(err)
			}
			if err := os.WriteFile(full, []byte(w.mapPorts(body)), 0o644); err != nil {
				w.t.Fatal(err)
			}
			continue
		}
		if lang != "console" {
			continue
		}
		for _, c := range parseCommands(lines, b) {
			w.commands++
			if c.background {
				w.background(c)
				continue
			}
			code, out := w.run(c)
			got := splitLines(w.unmapPorts(out))
			want := lines[c.outStart:c.outE]
			for len(want) > 0 && strings.TrimSpace(want[len(want)-1]) == "" {
				want = want[:len(want)-1]
			}
			if code != c.exit {
				ok = false
				w.t.Errorf("%s:%d: %s\nexit %d, want %d; output:\n%s", w.page, c.line, c.text, code, c.exit, strings.Join(got, "\n"))
			}
			if !outputMatches(got, want) {
				ok = false
				replace[c.outStart], ends[c.outStart] = got, c.outE
				w.t.Errorf("%s:%d: %s\n--- got\n%s\n--- want\n%s", w.page, c.line, c.text, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		}
	}
	if ok {
		return src, true
	}
	var b strings.Builder
	for i := 0; i < len(lines); i++ {
		if got, is := replace[i]; is {
			for _, l := range got {
				b.WriteString(l + "\n")
			}
			if ends[i] > i { // the old output lines go
				i = ends[i] - 1
				continue
			}
		}
		b.WriteString(lines[i])
		if i < len(lines)-1 {
			b.WriteString("\n")
		}
	}
	return b.String(), false
}

// TestWalkthroughs executes docs/first-tool.md and the walk-through of
// docs/release-gate.md with the real binary, a real sandbox and a real gateway on SQLite.
func TestWalkthroughs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	t.Parallel()
	if _, err := exec.LookPath("curl"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("curl is needed to run the walk-throughs")
		}
		t.Skip("no curl")
	}
	bin := buildBinary(t)
	for _, page := range []string{"first-tool.md", "release-gate.md"} {
		t.Run(page, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join("..", "..", "docs", page)
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			w := &walkthrough{t: t, page: "docs/" + page, dir: dir, bin: bin}
			w.ports = map[string]string{}
			for _, p := range []string{"8080", "9090"} {
				_, port, _ := net.SplitHostPort(freeAddr(t))
				w.ports[p] = port
			}
			// The page's commands see what a reader's shell would: no TOOLGATE_ variable
			// of the test's environment (a key, another gateway) leaks in.
			for _, kv := range os.Environ() {
				if !strings.HasPrefix(kv, "TOOLGATE_") {
					w.env = append(w.env, kv)
				}
			}
			w.env = append(w.env,
				"PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"),
				"HOME="+dir, "TOOLGATE_URL=http://127.0.0.1:"+w.ports["8080"], "TZ=UTC", "NO_COLOR=1")
			t.Cleanup(w.stopShell)
			for _, word := range []string{"SPEC", "/work/", "shared folder"} {
				if page == "first-tool.md" && strings.Contains(string(src), word) {
					t.Errorf("docs/%s mentions %q: the tutorial stands on the repository alone", page, word)
				}
			}
			out, ok := w.runPage(string(src))
			// A walk-through that runs nothing would pass on nothing.
			if w.commands < 20 {
				t.Errorf("docs/%s: only %d commands ran", page, w.commands)
			}
			if !ok && *update {
				if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
					t.Fatal(err)
				}
				fmt.Fprintf(os.Stderr, "rewrote the outputs that differ in %s\n", path)
			}
		})
	}
}

// TestWalkthroughRunner checks the runner's own rules: commands and their outputs, the
// exit comment, backgrounds, continuation lines, the "..." wildcard and the normalising
// of volatile parts (which must not hide a real difference).
func TestWalkthroughRunner(t *testing.T) {
	t.Parallel()
	page := strings.Split("text\n```console\n$ echo a \\\n  b # exit 3\nout 1\n\n$ serve &\n$ true\n```\n```json file=x/y.json\n{}\n```", "\n")
	blocks := parseBlocks(page)
	if len(blocks) != 2 || blocks[1].info != "json file=x/y.json" {
		t.Fatalf("blocks %+v", blocks)
	}
	cmds := parseCommands(page, blocks[0])
	if len(cmds) != 3 {
		t.Fatalf("commands %+v", cmds)
	}
	if c := cmds[0]; c.text != "echo a \\\n  b" || c.exit != 3 || c.background || strings.Join(page[c.outStart:c.outE], "|") != "out 1|" {
		t.Errorf("first command %+v (output %q)", c, page[c.outStart:c.outE])
	}
	if c := cmds[1]; c.text != "serve" || !c.background {
		t.Errorf("background command %+v", c)
	}
	for _, tt := range []struct {
		got, want string
		match     bool
	}{
		{"a\nb", "a\nb", true},
		{"a\nb", "a\nc", false},
		{"a\nb\nc", "a\n...\nc", true},
		{"a\nc", "a\n...\nc", true},
		{"a", "a\nb", false},
		{"updated:   2026-12-01T20:33:18Z by x", "updated:   2025-01-02T03:04:05Z by x", true},
		{"updated:   2026-12-01T20:33:18Z by x", "updated:   2025-01-02T03:04:05Z by y", false},
		{"Date: Tue, 01 Dec 2026 20:26:46 GMT", "Date: Wed, 02 Dec 2026 08:00:01 GMT", true},
		{"Deprecation: @1796157227", "Deprecation: @1796157252", true},
		{"latency 12ms", "latency 0ms", true},
		{"  2.0.0     candidate       4   0.0%        49ms", "  2.0.0     candidate       4   0.0%         0ms", true},
		{"3 calls", "4 calls", false},
	} {
		if got := outputMatches(splitLines(tt.got), splitLines(tt.want)); got != tt.match {
			t.Errorf("outputMatches(%q, %q) = %v", tt.got, tt.want, got)
		}
	}
}
