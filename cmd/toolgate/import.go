package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/importer"
	"github.com/toolgate/toolgate/lint"
	"github.com/toolgate/toolgate/upstream"
)

func init() {
	register(command{Name: "import", Summary: "write tool folders from an MCP server's tools or an OpenAPI document", Run: runImport})
}

const importSynopsis = `mcp URL [--tool NAME]... | openapi FILE [--operation ID]... [--dir DIR] [flags]

Writes one tool folder per imported tool into DIR (default ./agent-tools):
schemas/v1.0.0.json (JSON Schema 2020-12, references resolved, parameters closed),
owner.yaml, release-policy.yaml, changelog.md and upstream.json (the upstream's
definition, pinned in DIR/toolgate.lock), then prints the bindings for toolgate.yaml and
what toolgate lint says a person must still add (owner, x-sensitive marks, rules,
descriptions the upstream lacks).

  toolgate import mcp http://127.0.0.1:7070/mcp [--tool create_ticket]... [--header 'Authorization: Bearer …']...
  toolgate import openapi api.yaml [--operation createTicket]... [--base-url https://api.example.com]

OpenAPI operations are imported one by one: each one that cannot be is listed with its
reason (a multipart or binary body, say), the document's problems that touch no imported
operation are warnings, and the summary says how many of how many were imported.

A tool whose folder exists is refused (an upstream's new definition is re-pinned with
toolgate upstream accept). Exit 0 when at least one tool was written and every
--operation named was imported (operations skipped without --operation are warnings);
1 when an operation named with --operation was skipped (the others are written); 2 on
usage errors, an unreachable server, a document that is not OpenAPI 3, or when no
operation could be imported.`

// importNow is import's clock; tests replace it.
var importNow = func() time.Time { return time.Now().UTC() }

func runImport(ctx context.Context, e env) int {
	fs := newFlagSet(e, "import", importSynopsis)
	dir := fs.String("dir", "./agent-tools", "tools directory to write the tool folders into")
	var tools, ops, headers stringsFlag
	fs.Var(&tools, "tool", "an MCP tool `NAME` to import (repeatable; default all)")
	fs.Var(&ops, "operation", "an OpenAPI operation `ID` (operationId, or \"METHOD /path\") to import (repeatable; default all)")
	fs.Var(&headers, "header", "a header `NAME: VALUE` to send to the MCP server (repeatable)")
	ns := fs.String("namespace", "", "the tool ids' namespace (default: from the server's name or the document's title)")
	owner := fs.String("owner", "", "owner.yaml's owner")
	risk := fs.String("risk", "", "owner.yaml's risk_level: low, medium or high")
	baseURL := fs.String("base-url", "", "OpenAPI: the API's base URL for the bindings (default: the document's first server)")
	timeout := fs.Duration("timeout", 10*time.Second, "MCP: how long to wait for the server")
	args, code, ok := parseFlags(fs, e.Args)
	if !ok {
		return code
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(e.Stderr, "toolgate import: "+format+"\n", a...)
		return exitUsage
	}
	if len(args) != 2 || (args[0] != "mcp" && args[0] != "openapi") {
		return fail("want mcp URL or openapi FILE (see toolgate import --help)")
	}
	if *ns != "" {
		if msg := importer.CheckNamespace(*ns); msg != "" {
			return fail("%s", msg)
		}
	}
	if *risk != "" && !slices.Contains(contract.RiskLevels, *risk) {
		return fail("--risk %q is not one of %s", *risk, strings.Join(contract.RiskLevels, ", "))
	}
	opts := importer.Options{Namespace: *ns, Owner: *owner, RiskLevel: *risk, Now: importNow}
	var imported []importer.Tool
	var report *importer.OpenAPIImport
	switch args[0] {
	case "mcp":
		if len(ops) > 0 || *baseURL != "" {
			return fail("--operation and --base-url are for openapi")
		}
		h, err := parseHeaders(headers)
		if err != nil {
			return fail("%v", err)
		}
		cctx, cancel := context.WithTimeout(ctx, *timeout)
		defer cancel()
		pool := upstream.NewPool(upstream.Config{Logger: discardLogger})
		defer pool.Close()
		listed, name, err := pool.Describe(cctx, args[1], h)
		if err != nil {
			return fail("%v", err)
		}
		if imported, err = importer.FromMCP(args[1], name, listed, tools, opts); err != nil {
			return fail("%v", err)
		}
	case "openapi":
		if len(tools) > 0 || len(headers) > 0 {
			return fail("--tool and --header are for mcp")
		}
		data, err := os.ReadFile(args[1])
		if err != nil {
			return fail("%v", err)
		}
		if report, err = importer.FromOpenAPI(ctx, data, args[1], ops, *baseURL, opts); err != nil {
			return fail("%v", err)
		}
		imported = report.Tools
		printReport(e, report)
		if len(imported) == 0 {
			if report.SelectedSkipped() {
				fmt.Fprintln(e.Stderr, "toolgate import: no tool written: the operations named were skipped")
				return exitNegative
			}
			return fail("no operation of %s could be imported", args[1])
		}
	}
	// The bindings to print are written and read back before anything is
	// written to the tools directory.
	snippet, err := importer.Snippet(imported)
	if err != nil {
		return fail("%v", err)
	}
	if err := importer.Write(*dir, imported, importNow()); err != nil {
		return fail("%v", err)
	}
	printImport(e, *dir, imported, snippet)
	if report != nil {
		fmt.Fprintf(e.Stdout, "\n%s\n", report.Summary())
		if report.SelectedSkipped() {
			return exitNegative
		}
	}
	return exitOK
}

// printReport lists the operations skipped and the document's warnings.
func printReport(e env, r *importer.OpenAPIImport) {
	for _, w := range r.Warnings {
		fmt.Fprintf(e.Stderr, "warning: %s\n", importer.Visible(w))
	}
	for _, s := range r.Skipped {
		name := s.Operation
		if name != s.Method+" "+s.Path {
			name += " (" + s.Method + " " + s.Path + ")"
		}
		fmt.Fprintf(e.Stderr, "skipped %s: %s\n", importer.Visible(name), importer.Visible(s.Reason))
	}
}

func parseHeaders(list []string) (map[string]string, error) {
	if len(list) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for _, h := range list {
		name, value, ok := strings.Cut(h, ":")
		if !ok || strings.TrimSpace(name) == "" {
			return nil, fmt.Errorf("--header %q is not NAME: VALUE", h)
		}
		out[strings.TrimSpace(name)] = strings.TrimSpace(value)
	}
	return out, nil
}

// maxLintedImport: a larger import does not run lint itself (it would parse
// every contract again); it says to run it.
const maxLintedImport = 50

// printImport says what was written, the bindings to add and lint's to-dos.
// What a document chose (names, notes, messages quoting them) is shown with
// the characters a terminal would hide escaped (importer.Visible), and the
// bindings come from importer.Snippet, which checks they read back as
// imported.
func printImport(e env, dir string, tools []importer.Tool, snippet string) {
	ids := map[string]bool{}
	for _, t := range tools {
		ids[t.ID] = true
		fmt.Fprintf(e.Stdout, "wrote %s (%s, pinned in %s)\n", importer.Visible(filepath.Join(dir, t.ID)), t.Schema["effect"], importer.Visible(filepath.Join(dir, "toolgate.lock")))
		for _, n := range t.Notes {
			fmt.Fprintf(e.Stdout, "  note: %s\n", importer.Visible(n))
		}
	}
	fmt.Fprintf(e.Stdout, "\nAdd to toolgate.yaml:\n\n%s", indent(snippet, "  ")+"\n")
	if len(tools) > maxLintedImport {
		fmt.Fprintf(e.Stdout, "\n%d tools imported: run toolgate lint %s for what a person must still add (the import lists it for at most %d tools).\n", len(tools), dir, maxLintedImport)
		return
	}
	var todo []lint.Finding
	for _, f := range lint.Run(dir) {
		if ids[f.Tool] {
			todo = append(todo, f)
		}
	}
	if len(todo) == 0 {
		fmt.Fprintln(e.Stdout, "\ntoolgate lint finds nothing left to do.")
		return
	}
	fmt.Fprintf(e.Stdout, "\nStill to do (toolgate lint %s):\n", dir)
	for _, f := range todo {
		loc, _ := filepath.Rel(dir, f.File)
		if loc == "" || strings.HasPrefix(loc, "..") {
			loc = f.File
		}
		if f.Pointer != "" {
			loc += " " + f.Pointer
		}
		fmt.Fprintf(e.Stdout, "  %s %s: %s: %s\n", f.Severity, f.ID, importer.Visible(filepath.ToSlash(loc)), importer.Visible(f.Message))
	}
}
