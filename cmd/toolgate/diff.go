package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/schemadiff"
	"go.yaml.in/yaml/v3"
)

func init() {
	register(command{Name: "diff", Summary: "classified schema changes and the required bump", Run: runDiff})
}

const diffSynopsis = `OLD NEW [flags]

OLD and NEW are two contract schema files (schemas/vX.Y.Z.json), two versions of a tool
in a tools directory (ID@2.1.0 ID@2.2.0, with --dir), or two plain JSON Schema documents
(with --direction input|output). Exit 0 when the changes are compatible or the declared
bump satisfies them, 1 when it does not, 2 on usage or load errors.`

func runDiff(_ context.Context, e env) int {
	fs := newFlagSet(e, "diff", diffSynopsis)
	dir := fs.String("dir", defaultToolsDir, "tools directory for the ID@VERSION form (default: tools_dir of ./toolgate.yaml, else ./agent-tools)")
	direction := fs.String("direction", "", "input|output: how to read two plain JSON Schema documents")
	format := fs.String("format", "text", "output format: "+strings.Join(schemadiff.Formats, "|"))
	var consumers unsetInt
	fs.Var(&consumers, "consumers", "`number` of consumers (default: owner.yaml's consumers when found)")
	args, code, ok := parseFlags(fs, e.Args)
	if !ok {
		return code
	}
	if len(args) != 2 {
		fmt.Fprintln(e.Stderr, "toolgate diff: need OLD and NEW")
		fs.Usage()
		return exitUsage
	}
	if !validFormat(*format) {
		fmt.Fprintf(e.Stderr, "toolgate diff: unknown --format %q (want %s)\n", *format, strings.Join(schemadiff.Formats, "|"))
		return exitUsage
	}
	if *direction != "" && *direction != "input" && *direction != "output" {
		fmt.Fprintf(e.Stderr, "toolgate diff: --direction must be input or output, not %q\n", *direction)
		return exitUsage
	}
	if strings.Contains(args[0]+args[1], "@") && !settleToolsDir(e, "diff", fs, dir, "") {
		return exitUsage
	}
	report, err := diffArgs(args[0], args[1], *dir, schemadiff.Direction(*direction), consumers.value())
	if err != nil {
		fmt.Fprintf(e.Stderr, "toolgate diff: %v\n", err)
		return exitUsage
	}
	if err := schemadiff.Write(e.Stdout, report, *format); err != nil {
		fmt.Fprintf(e.Stderr, "toolgate diff: %v\n", err)
		return exitUsage
	}
	if !report.OK() {
		return exitNegative
	}
	return exitOK
}

func validFormat(f string) bool {
	for _, ok := range schemadiff.Formats {
		if f == ok {
			return true
		}
	}
	return false
}

// diffArgs picks the form from the arguments and runs the diff.
func diffArgs(oldArg, newArg, dir string, direction schemadiff.Direction, consumers int) (schemadiff.Report, error) {
	if isToolRef(oldArg) && isToolRef(newArg) {
		if direction != "" {
			return schemadiff.Report{}, errors.New("--direction applies only to plain JSON Schema documents")
		}
		return diffToolVersions(oldArg, newArg, dir, consumers)
	}
	oldData, err := os.ReadFile(oldArg)
	if err != nil {
		return schemadiff.Report{}, err
	}
	newData, err := os.ReadFile(newArg)
	if err != nil {
		return schemadiff.Report{}, err
	}
	oldC, oldErr := schemadiff.ParseContract(oldData)
	newC, newErr := schemadiff.ParseContract(newData)
	switch {
	case oldErr == nil && newErr == nil:
		if direction != "" {
			return schemadiff.Report{}, errors.New("--direction applies only to plain JSON Schema documents, not contract files")
		}
		for _, f := range []struct {
			path string
			data []byte
		}{{oldArg, oldData}, {newArg, newData}} {
			if problems := contract.CheckFile(f.path, f.data); len(problems) > 0 {
				return schemadiff.Report{}, fmt.Errorf("%s does not load:\n%w", f.path, &contract.LoadError{Problems: problems})
			}
		}
		if consumers < 0 {
			consumers = ownerConsumers(newArg)
		}
		return schemadiff.Diff(oldC, newC, schemadiff.Options{Consumers: max(consumers, 0)}), nil
	case oldErr == nil || newErr == nil:
		return schemadiff.Report{}, errors.New("cannot compare a contract file with a plain schema")
	case !errors.Is(oldErr, schemadiff.ErrNotContract):
		return schemadiff.Report{}, fmt.Errorf("%s: %w", oldArg, oldErr)
	case !errors.Is(newErr, schemadiff.ErrNotContract):
		return schemadiff.Report{}, fmt.Errorf("%s: %w", newArg, newErr)
	}
	if direction == "" {
		return schemadiff.Report{}, errors.New("plain JSON Schema documents need --direction input|output")
	}
	oldS, err := decodeSchema(oldData)
	if err != nil {
		return schemadiff.Report{}, fmt.Errorf("%s: %w", oldArg, err)
	}
	newS, err := decodeSchema(newData)
	if err != nil {
		return schemadiff.Report{}, fmt.Errorf("%s: %w", newArg, err)
	}
	// A 2020-12 document is held to a contract's strictness (a misspelt
	// keyword is an error, not a check switched off); a document naming an
	// older draft is read by that draft's rules, and the diff reports any
	// keyword that draft does not know as a change needing review.
	for _, f := range []struct {
		path string
		doc  any
		data []byte
	}{{oldArg, oldS, oldData}, {newArg, newS, newData}} {
		if !names2020(f.doc) {
			continue
		}
		if _, problems := contract.ParseSchema(f.path, f.data); len(problems) > 0 {
			err := &contract.LoadError{Problems: problems}
			if strings.Contains(err.Error(), contract.TupleFormHint) {
				// the diff also reads older drafts: the other fix is to say which
				return schemadiff.Report{}, fmt.Errorf("%s does not load:\n%w\n(or declare the draft the document is written for, "+
					`"$schema": "http://json-schema.org/draft-07/schema#": the diff reads drafts 04, 06, 07, 2019-09 and 2020-12)`, f.path, err)
			}
			return schemadiff.Report{}, fmt.Errorf("%s does not load:\n%w", f.path, err)
		}
	}
	return schemadiff.DiffSchemas(oldS, newS, direction, schemadiff.Options{Consumers: max(consumers, 0)}), nil
}

// decodeSchema reads a plain JSON Schema document, keeping numbers exact (json.Number):
// the diff compares bounds as the validator does, not as float64 rounds them.
func decodeSchema(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("more than one JSON value")
	}
	return v, nil
}

// names2020 reports whether a plain schema document is read as JSON Schema
// 2020-12: it names no $schema, or names 2020-12's.
func names2020(doc any) bool {
	m, ok := doc.(map[string]any)
	if !ok {
		return true
	}
	s, ok := m["$schema"].(string)
	return !ok || strings.TrimSuffix(s, "#") == contract.Draft2020
}

// isToolRef reports whether s reads as ID@VERSION and is not an existing file.
func isToolRef(s string) bool {
	i := strings.LastIndexByte(s, '@')
	if i <= 0 || i == len(s)-1 {
		return false
	}
	_, err := os.Stat(s)
	return err != nil
}

func diffToolVersions(oldRef, newRef, dir string, consumers int) (schemadiff.Report, error) {
	reg, err := contract.Load(dir)
	if err != nil {
		return schemadiff.Report{}, fmt.Errorf("cannot load %s:\n%w", dir, err)
	}
	load := func(ref string) (schemadiff.Contract, *contract.Tool, error) {
		i := strings.LastIndexByte(ref, '@')
		id, v := ref[:i], ref[i+1:]
		t := reg.Tool(id)
		if t == nil {
			return schemadiff.Contract{}, nil, fmt.Errorf("%s: %s", dir, reg.ToolNotFoundDetail(id))
		}
		ver := t.Version(v)
		if ver == nil {
			return schemadiff.Contract{}, nil, errors.New(t.VersionNotFoundDetail(v))
		}
		c, err := schemadiff.ParseContract(ver.Raw)
		if err != nil {
			return schemadiff.Contract{}, nil, fmt.Errorf("%s: %w", ver.File, err)
		}
		return c, t, nil
	}
	oldC, _, err := load(oldRef)
	if err != nil {
		return schemadiff.Report{}, err
	}
	newC, tool, err := load(newRef)
	if err != nil {
		return schemadiff.Report{}, err
	}
	if consumers < 0 {
		consumers = len(tool.Owner.Consumers)
	}
	return schemadiff.Diff(oldC, newC, schemadiff.Options{Consumers: consumers}), nil
}

// ownerConsumers counts owner.yaml's consumers for a schema file inside a tool folder
// (TOOL/schemas/vX.json → TOOL/owner.yaml); 0 when there is none.
func ownerConsumers(schemaFile string) int {
	dir := filepath.Dir(schemaFile)
	if filepath.Base(dir) != "schemas" {
		return 0
	}
	data, err := os.ReadFile(filepath.Join(filepath.Dir(dir), "owner.yaml"))
	if err != nil {
		return 0
	}
	var owner struct {
		Consumers []string `yaml:"consumers"`
	}
	if yaml.Unmarshal(data, &owner) != nil {
		return 0
	}
	return len(owner.Consumers)
}

// unsetInt is an int flag whose default is "not given", so that --help prints
// the usage's own words on the default and no "(default -1)" after them.
type unsetInt struct {
	n   int
	set bool
}

// value is the number given, or -1 when the flag was not.
func (u *unsetInt) value() int {
	if !u.set {
		return -1
	}
	return u.n
}

func (u *unsetInt) String() string {
	if u == nil || !u.set {
		return ""
	}
	return strconv.Itoa(u.n)
}

func (u *unsetInt) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return fmt.Errorf("want a whole number, 0 or more")
	}
	u.n, u.set = n, true
	return nil
}
