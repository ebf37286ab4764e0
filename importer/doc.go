package importer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

// Limits of an OpenAPI import (docs/upstreams.md, docs/security.md). A
// document or referenced file past them is refused; an operation past them
// is skipped with the limit named.
const (
	// MaxFileBytes caps the document and each file a $ref names.
	MaxFileBytes = 64 << 20
	// MaxFiles caps how many files one import reads (the document included).
	MaxFiles = 64
	// MaxContractBytes caps one imported contract (schemas/v1.0.0.json).
	// Shared definitions stay $defs + $ref, so a contract grows with the
	// document, never with the number of paths through it.
	MaxContractBytes = 8 << 20
	// maxRefHops caps a chain of $refs to $refs.
	maxRefHops = 32
)

// node is a parsed JSON or YAML value: map[string]any, []any, string,
// json.Number (the literal's text, never rounded), bool or nil.
type node = any

// parseDoc reads a JSON or YAML document into nodes. YAML aliases are
// expanded, but never past a node budget proportional to the input (an
// alias bomb is refused, not expanded).
func parseDoc(data []byte) (node, error) {
	if t := bytes.TrimLeft(data, " \t\r\n\ufeff"); len(t) > 0 && t[0] == '{' {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("not valid JSON: %w", err)
		}
		if _, err := dec.Token(); err != io.EOF {
			return nil, errors.New("not valid JSON: data after the document")
		}
		return v, nil
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("not valid YAML: %w", err)
	}
	c := &yamlConv{budget: 4*len(data) + 1024}
	return c.value(&root, 0)
}

type yamlConv struct{ budget int }

var errAliasBudget = errors.New("its YAML aliases expand past the size limit (an alias bomb?)")

func (c *yamlConv) value(n *yaml.Node, depth int) (node, error) {
	c.budget--
	if c.budget < 0 {
		return nil, errAliasBudget
	}
	if depth > 512 {
		return nil, errors.New("nested deeper than 512 levels")
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return c.value(n.Content[0], depth+1)
	case yaml.AliasNode:
		return c.value(n.Alias, depth+1)
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, e := range n.Content {
			v, err := c.value(e, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.MappingNode:
		out := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Tag == "!!merge" {
				mv, err := c.value(v, depth+1)
				if err != nil {
					return nil, err
				}
				merge := []any{mv}
				if l, ok := mv.([]any); ok {
					merge = l
				}
				for _, m := range merge {
					if mm, ok := m.(map[string]any); ok {
						for mk, mval := range mm {
							if _, has := out[mk]; !has {
								out[mk] = mval
							}
						}
					}
				}
				continue
			}
			val, err := c.value(v, depth+1)
			if err != nil {
				return nil, err
			}
			out[k.Value] = val
		}
		return out, nil
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return nil, nil
		case "!!bool":
			b, _ := strconv.ParseBool(strings.ToLower(n.Value))
			return b, nil
		case "!!int", "!!float":
			return yamlNumber(n.Value), nil
		}
		return n.Value, nil
	}
	return nil, nil
}

// yamlNumber is a YAML number as a JSON number with the same value: the
// literal itself when it is JSON already (so no digit is lost).
func yamlNumber(s string) node {
	if json.Valid([]byte(s)) {
		return json.Number(s)
	}
	t := strings.ReplaceAll(s, "_", "")
	if i, err := strconv.ParseInt(t, 0, 64); err == nil {
		return json.Number(strconv.FormatInt(i, 10))
	}
	if f, err := strconv.ParseFloat(strings.TrimPrefix(t, "+"), 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
		return json.Number(strconv.FormatFloat(f, 'g', -1, 64))
	}
	return s
}

// files reads the document and the files its $refs name: only regular files
// inside the document's directory tree (symbolic links resolved), each at
// most MaxFileBytes, at most MaxFiles of them. A $ref may not be an absolute
// path, a URL (file:// included) or climb out with "..".
type files struct {
	root  string // the document's directory, symbolic links resolved
	docs  map[string]node
	order []string
	reads int
	mu    sync.Mutex // operations are imported concurrently
}

func newFiles(file string, data []byte) (*files, string, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil, "", err
	}
	dir := filepath.Dir(abs)
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	fs := &files{root: dir, docs: map[string]node{}}
	name := filepath.Base(abs)
	v, err := parseDoc(data)
	if err != nil {
		return nil, "", err
	}
	fs.docs[name] = v
	fs.order = append(fs.order, name)
	fs.reads = 1
	return fs, name, nil
}

// refTarget splits a $ref into the file it names (relative to the root,
// slash-separated; from is the file the $ref is in) and its JSON pointer.
func (fs *files) refTarget(from, ref string) (string, string, error) {
	u, err := url.Parse(ref)
	if err != nil {
		return "", "", fmt.Errorf("$ref %q is not a URI reference", ref)
	}
	if u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" {
		return "", "", fmt.Errorf("$ref %q: toolgate import follows only relative references to files beside the document, never a URL", ref)
	}
	ptr := u.Fragment
	if u.Path == "" {
		return from, ptr, nil
	}
	p := u.Path
	if strings.HasPrefix(p, "/") || filepath.IsAbs(p) || strings.Contains(p, "\\") || strings.ContainsRune(p, 0) {
		return "", "", fmt.Errorf("$ref %q: an absolute path is not followed (only files inside the document's directory)", ref)
	}
	joined := filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(filepath.FromSlash(from)), filepath.FromSlash(p))))
	if joined == ".." || strings.HasPrefix(joined, "../") || filepath.IsAbs(joined) {
		return "", "", fmt.Errorf("$ref %q climbs out of the document's directory: only files inside it are followed", ref)
	}
	return joined, ptr, nil
}

// doc returns a file's parsed content, reading it on first use.
func (fs *files) doc(rel string) (node, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if v, ok := fs.docs[rel]; ok {
		return v, nil
	}
	if fs.reads >= MaxFiles {
		return nil, fmt.Errorf("the document's $refs name more than %d files", MaxFiles)
	}
	fs.reads++
	full := filepath.Join(fs.root, filepath.FromSlash(rel))
	real, err := filepath.EvalSymlinks(full)
	if err != nil {
		return nil, fmt.Errorf("$ref file %s cannot be read: %v", rel, errors.Unwrap(err))
	}
	if r, err := filepath.Rel(fs.root, real); err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return nil, fmt.Errorf("$ref file %s links out of the document's directory: only files inside it are followed", rel)
	}
	f, err := os.Open(real)
	if err != nil {
		return nil, fmt.Errorf("$ref file %s cannot be read", rel)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("$ref file %s is not a regular file", rel)
	}
	if fi.Size() > MaxFileBytes {
		return nil, fmt.Errorf("$ref file %s is larger than %d MiB", rel, MaxFileBytes>>20)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil || len(data) > MaxFileBytes {
		return nil, fmt.Errorf("$ref file %s cannot be read whole (at most %d MiB)", rel, MaxFileBytes>>20)
	}
	v, err := parseDoc(data)
	if err != nil {
		// The parser's message may quote the file; name the file only.
		return nil, fmt.Errorf("$ref file %s is not JSON or YAML", rel)
	}
	fs.docs[rel] = v
	fs.order = append(fs.order, rel)
	return v, nil
}

// loc is where a node is: a file (relative to the root) and a JSON pointer.
type loc struct{ file, ptr string }

func (l loc) String() string { return l.file + "#" + l.ptr }

func (l loc) child(tokens ...string) loc {
	p := l.ptr
	for _, t := range tokens {
		p += "/" + escape(t)
	}
	return loc{l.file, p}
}

// lookup resolves a $ref found at from.
func (fs *files) lookup(from loc, ref string) (node, loc, error) {
	file, ptr, err := fs.refTarget(from.file, ref)
	if err != nil {
		return nil, loc{}, err
	}
	d, err := fs.doc(file)
	if err != nil {
		return nil, loc{}, err
	}
	v, err := pointer(d, ptr)
	if err != nil {
		return nil, loc{}, fmt.Errorf("$ref %q: %v", ref, err)
	}
	return v, loc{file, ptr}, nil
}

// pointer walks a JSON pointer (RFC 6901, as a URI fragment: percent-decoded).
func pointer(d node, ptr string) (node, error) {
	if ptr == "" {
		return d, nil
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil, fmt.Errorf("the fragment %q is not a JSON pointer", ptr)
	}
	cur := d
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[tok]
			if !ok {
				return nil, fmt.Errorf("nothing at %s", ptr)
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, fmt.Errorf("nothing at %s", ptr)
			}
			cur = c[i]
		default:
			return nil, fmt.Errorf("nothing at %s", ptr)
		}
	}
	return cur, nil
}

// deref follows a non-schema object's $ref chain (a parameter, request
// body, response or path item that is {"$ref": ...}).
func (fs *files) deref(v node, at loc) (node, loc, error) {
	for hops := 0; ; hops++ {
		m, ok := v.(map[string]any)
		if !ok {
			return v, at, nil
		}
		ref, ok := m["$ref"].(string)
		if !ok {
			return v, at, nil
		}
		if hops >= maxRefHops {
			return nil, at, fmt.Errorf("%s: a chain of more than %d $refs", at, maxRefHops)
		}
		nv, nat, err := fs.lookup(at, ref)
		if err != nil {
			return nil, at, fmt.Errorf("%s: %w", at, err)
		}
		v, at = nv, nat
	}
}
