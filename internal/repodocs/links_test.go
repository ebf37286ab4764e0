package repodocs

import (
	"bytes"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/text"
)

// markdownFiles returns the repository root and its tracked Markdown files,
// leaving out third-party packages installed for tests.
func markdownFiles(t *testing.T) (string, []string) {
	t.Helper()
	root, files := trackedFiles(t)
	var md []string
	for _, f := range files {
		if strings.HasSuffix(f, ".md") && !strings.Contains(f, "node_modules/") {
			md = append(md, f)
		}
	}
	if len(md) < 20 {
		t.Fatalf("git lists %d Markdown files under %s; expected the repository's docs", len(md), root)
	}
	return root, md
}

// TestRelativeLinksResolve fails on a relative link in a tracked Markdown
// file whose target does not exist, or whose #fragment names no heading of
// the target page. Links are read by a CommonMark parser (goldmark), so
// code spans and fenced blocks are not mistaken for links.
func TestRelativeLinksResolve(t *testing.T) {
	t.Parallel()
	root, files := markdownFiles(t)
	md := goldmark.New(goldmark.WithExtensions(extension.GFM))
	anchors := map[string]map[string]bool{} // file -> heading slugs
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		src, err := os.ReadFile(path)
		if err != nil {
			anchors[path] = nil
			return nil
		}
		anchors[path] = headingSlugs(md, src)
		return anchors[path]
	}
	checked := 0
	for _, f := range files {
		src, err := os.ReadFile(filepath.Join(root, f))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range links(md, src) {
			dest := l.dest
			if dest == "" || strings.HasPrefix(dest, "//") {
				continue
			}
			if u, err := url.Parse(dest); err == nil && u.Scheme != "" {
				continue // http:, https:, mailto: — not this test's business
			}
			path, frag, _ := strings.Cut(dest, "#")
			path, err := url.PathUnescape(path)
			if err != nil {
				t.Errorf("%s:%d: link %q: %v", f, l.line, dest, err)
				continue
			}
			target := filepath.Join(root, f) // a bare #fragment points into the page itself
			if path != "" {
				if strings.HasPrefix(path, "/") {
					// A path from the site's root (a URL the gateway serves, such as
					// /problems/…) is not a file of the repository.
					continue
				}
				target = filepath.Join(filepath.Dir(filepath.Join(root, f)), path)
			}
			checked++
			if _, err := os.Stat(target); err != nil {
				t.Errorf("%s:%d: link %q: %s does not exist (links are relative to the page's folder)", f, l.line, dest, rel(root, target))
				continue
			}
			if frag != "" && strings.HasSuffix(target, ".md") {
				if a := anchorsOf(target); !a[strings.ToLower(frag)] {
					t.Errorf("%s:%d: link %q: %s has no heading with the anchor #%s", f, l.line, dest, rel(root, target), frag)
				}
			}
		}
	}
	if checked < 50 {
		t.Errorf("checked only %d relative links: the link reader found too few to trust", checked)
	}
}

// TestMarkdownTablesAreWhole fails on a table whose rows do not all have the
// header's number of cells, and on table rows that a paragraph or a blank
// line cut off from their table (they render as a paragraph of pipes).
func TestMarkdownTablesAreWhole(t *testing.T) {
	t.Parallel()
	root, files := markdownFiles(t)
	tables := 0
	for _, f := range files {
		src, err := os.ReadFile(filepath.Join(root, f))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range tableProblems(src) {
			t.Errorf("%s:%s", f, p)
		}
		tables += len(tableBlocks(src))
	}
	if tables < 50 {
		t.Errorf("found only %d tables: the table reader found too few to trust", tables)
	}
}

// TestTableAndLinkReaders checks the two readers on pages with known faults.
func TestTableAndLinkReaders(t *testing.T) {
	t.Parallel()
	broken := "| a | b |\n|---|---|\n| 1 | 2 |\n\nA paragraph.\n\n| 3 | 4 |\n| 5 | 6 | 7 |\n"
	if got := tableProblems([]byte(broken)); len(got) != 1 || !strings.Contains(got[0], "no header") {
		t.Errorf("a table cut by a paragraph: %q", got)
	}
	short := "| a | b |\n|---|---|\n| 1 |\n| `x \\| y` | 2 |\n"
	if got := tableProblems([]byte(short)); len(got) != 1 || !strings.Contains(got[0], "3: 1 cells") {
		t.Errorf("a short row (the escaped pipe is one cell): %q", got)
	}
	fenced := "```\n| not | a table\n```\n| a |\n|---|\n| 1 |\n"
	if got := tableProblems([]byte(fenced)); len(got) != 0 {
		t.Errorf("a fenced block is not a table: %q", got)
	}
	md := goldmark.New(goldmark.WithExtensions(extension.GFM))
	got := links(md, []byte("See [a](x.md#Two) and `[b](no.md)`.\n\n```\n[c](no.md)\n```\n\n[d]: y.md\n\nand [e][d].\n"))
	if len(got) != 2 || got[0].dest != "x.md#Two" || got[1].dest != "y.md" {
		t.Errorf("links %+v", got)
	}
	slugs := headingSlugs(md, []byte("# Two words\n## Two words\n## `code` & more: (x)\n"))
	for _, s := range []string{"two-words", "two-words-1", "code--more-x"} {
		if !slugs[s] {
			t.Errorf("slug %q missing from %v", s, slugs)
		}
	}
}

type link struct {
	dest string
	line int
}

// links returns every link and image destination of a Markdown page.
func links(md goldmark.Markdown, src []byte) []link {
	doc := md.Parser().Parse(text.NewReader(src))
	var out []link
	ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		var dest []byte
		switch n := n.(type) {
		case *ast.Link:
			dest = n.Destination
		case *ast.Image:
			dest = n.Destination
		default:
			return ast.WalkContinue, nil
		}
		out = append(out, link{dest: string(dest), line: lineOf(n, src)})
		return ast.WalkContinue, nil
	})
	return out
}

// lineOf is the 1-based line of the block that holds n.
func lineOf(n ast.Node, src []byte) int {
	for p := n; p != nil; p = p.Parent() {
		if p.Type() == ast.TypeBlock && p.Lines().Len() > 0 {
			return 1 + bytes.Count(src[:p.Lines().At(0).Start], []byte("\n"))
		}
	}
	return 0
}

// headingSlugs returns the anchors a page's headings get on GitHub: lower
// case, punctuation dropped, spaces as hyphens, a repeated one suffixed -1, -2….
func headingSlugs(md goldmark.Markdown, src []byte) map[string]bool {
	doc := md.Parser().Parse(text.NewReader(src))
	slugs := map[string]bool{}
	seen := map[string]int{}
	ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		h, ok := n.(*ast.Heading)
		if !ok || !entering {
			return ast.WalkContinue, nil
		}
		var b strings.Builder
		for _, r := range strings.ToLower(plainText(h, src)) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteByte('-')
			}
		}
		s := b.String()
		if k := seen[s]; k > 0 {
			slugs[fmt.Sprintf("%s-%d", s, k)] = true
		} else {
			slugs[s] = true
		}
		seen[s]++
		return ast.WalkSkipChildren, nil
	})
	return slugs
}

// plainText is the text of a node and its children, as a reader sees it.
func plainText(n ast.Node, src []byte) string {
	var b strings.Builder
	ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch c := c.(type) {
		case *ast.Text:
			b.Write(c.Segment.Value(src))
		case *ast.String:
			b.Write(c.Value)
		}
		return ast.WalkContinue, nil
	})
	return b.String()
}

var separatorRow = regexp.MustCompile(`^\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$`)

// tableBlocks returns the runs of consecutive lines that start with "|",
// outside fenced code blocks, each as its first line number and its lines.
func tableBlocks(src []byte) []tableBlock {
	var out []tableBlock
	fence := ""
	var cur *tableBlock
	for i, l := range strings.Split(string(src), "\n") {
		trimmed := strings.TrimSpace(l)
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			cur = nil
			continue
		}
		if strings.HasPrefix(l, "|") {
			if cur == nil {
				out = append(out, tableBlock{line: i + 1})
				cur = &out[len(out)-1]
			}
			cur.rows = append(cur.rows, l)
			continue
		}
		cur = nil
	}
	return out
}

type tableBlock struct {
	line int
	rows []string
}

// tableProblems says what is wrong with a page's tables, as "LINE: problem".
func tableProblems(src []byte) []string {
	var out []string
	for _, tb := range tableBlocks(src) {
		if len(tb.rows) < 2 || !separatorRow.MatchString(tb.rows[1]) {
			out = append(out, fmt.Sprintf("%d: table rows with no header and separator row above them (a paragraph or blank line cut a table in two?)", tb.line))
			continue
		}
		want := cells(tb.rows[0])
		for i, r := range tb.rows {
			if n := cells(r); n != want && i != 1 {
				out = append(out, fmt.Sprintf("%d: %d cells, the header has %d", tb.line+i, n, want))
			}
		}
	}
	return out
}

// cells counts a table row's cells: pipes that are not escaped separate them
// (GFM: an escaped \| is text, even inside a code span).
func cells(row string) int {
	row = strings.TrimSpace(row)
	row = strings.TrimPrefix(row, "|")
	if strings.HasSuffix(row, "|") && !strings.HasSuffix(row, `\|`) {
		row = row[:len(row)-1]
	}
	n := 1
	for i := 0; i < len(row); i++ {
		switch row[i] {
		case '\\':
			i++
		case '|':
			n++
		}
	}
	return n
}

func rel(root, path string) string {
	if r, err := filepath.Rel(root, path); err == nil {
		return r
	}
	return path
}
