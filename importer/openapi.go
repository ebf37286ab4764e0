package importer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/toolgate/toolgate/internal/canon"
	"github.com/toolgate/toolgate/lockfile"
)

// OpenAPIImport is what FromOpenAPI made of a document: the tools, each
// operation it could not import with the reason, and the document's
// problems that touched no imported operation.
type OpenAPIImport struct {
	Tools      []Tool
	Skipped    []Skipped
	Warnings   []string
	Operations int // operations in the document
	Selected   int // operations tried: all, or the ones named
}

// Skipped is an operation that was not imported, and why.
type Skipped struct {
	Operation    string // operationId, or "METHOD /path"
	Method, Path string
	Reason       string
	Selected     bool // named in the ops list
}

// SelectedSkipped reports whether an operation named in the ops list was skipped.
func (r *OpenAPIImport) SelectedSkipped() bool {
	for _, s := range r.Skipped {
		if s.Selected {
			return true
		}
	}
	return false
}

// FromOpenAPI makes tool folders from the operations of an OpenAPI 3.0 or
// 3.1 document (JSON or YAML), the ones named by operationId (or "METHOD
// /path"; all when ops is empty). file is where data was read from: $refs
// to other files resolve inside its directory only (docs/upstreams.md).
// baseURL replaces the document's first server URL in the bindings.
//
// Each operation is imported on its own: one that cannot be is listed in
// Skipped with its reason and the others are still imported; the document
// is refused whole only when it is not an OpenAPI 3 document at all, or an
// operation named in ops does not exist. The request body (JSON or a form),
// the path and required query parameters become parameters; the first 2xx
// JSON response's schema becomes result; each declared 4xx and 5xx response
// becomes an entry of errors. GET, HEAD and OPTIONS are read_only, other
// methods mutating. The import stops with ctx's error when ctx ends.
func FromOpenAPI(ctx context.Context, data []byte, file string, ops []string, baseURL string, opts Options) (*OpenAPIImport, error) {
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("%s is larger than %d MiB", file, MaxFileBytes>>20)
	}
	fs, name, err := newFiles(file, data)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", file, err)
	}
	doc, _ := fs.docs[name].(map[string]any)
	if doc == nil {
		return nil, fmt.Errorf("%s is not an OpenAPI document (not a JSON or YAML object)", file)
	}
	if v, ok := doc["swagger"]; ok {
		return nil, fmt.Errorf("%s is Swagger %v (OpenAPI 2): convert it to OpenAPI 3 first", file, v)
	}
	ver, _ := doc["openapi"].(string)
	if !strings.HasPrefix(ver, "3.") {
		return nil, fmt.Errorf("%s is not an OpenAPI 3 document (its openapi field is %q)", file, ver)
	}
	info, _ := doc["info"].(map[string]any)
	title, _ := info["title"].(string)
	ns := namespace(opts.Namespace, title)
	if msg := CheckNamespace(ns); msg != "" {
		return nil, fmt.Errorf("%s (set --namespace)", msg)
	}
	imp := &openapiImport{fs: fs, ns: ns, base: baseURL, dialect: DialectOpenAPI3, opts: opts, file: file}
	if strings.HasPrefix(ver, "3.1") {
		imp.dialect = Dialect202012
	}
	if imp.base == "" {
		if servers, _ := doc["servers"].([]any); len(servers) > 0 {
			imp.base = serverURL(servers[0])
		}
	}
	out := &OpenAPIImport{}
	root := loc{name, ""}
	paths, _ := doc["paths"].(map[string]any)
	var all []operation
	for _, p := range sortedNames(paths) {
		item, iat, err := fs.deref(paths[p], root.child("paths", p))
		im, _ := item.(map[string]any)
		if err != nil || im == nil {
			reason := "its path item is not an object"
			if err != nil {
				reason = err.Error()
			}
			out.Warnings = append(out.Warnings, fmt.Sprintf("%s: the path item of %s cannot be read, so none of its operations is imported: %s", iat, p, reason))
			continue
		}
		for _, m := range sortedNames(im) {
			method := strings.ToUpper(m)
			if !httpMethods[method] {
				continue
			}
			op, oat, err := fs.deref(im[m], iat.child(m))
			om, _ := op.(map[string]any)
			o := operation{method: method, path: p, op: om, item: im, at: oat, itemAt: iat}
			o.name = method + " " + p
			if id, _ := om["operationId"].(string); id != "" {
				o.name = id
			}
			if err != nil || om == nil {
				o.bad = "the operation is not an object"
				if err != nil {
					o.bad = err.Error()
				}
			}
			all = append(all, o)
		}
	}
	out.Operations = len(all)
	out.Warnings = append(out.Warnings, documentWarnings(name, all)...)
	if len(all) == 0 {
		return nil, fmt.Errorf("%s has no operations", file)
	}
	var chosen []operation
	if len(ops) == 0 {
		chosen = all
	}
	for _, want := range ops {
		found := false
		for _, o := range all {
			if o.name == want || strings.EqualFold(o.method+" "+o.path, want) && strings.HasSuffix(want, o.path) {
				o.selected = true
				chosen = append(chosen, o)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("%s has no operation %q (%s)", file, want, suggest(all, want))
		}
	}
	out.Selected = len(chosen)
	now := opts.now()
	// Operations are imported concurrently (each on its own; the document's
	// nodes are only read), then taken in the document's order.
	type done struct {
		t   Tool
		err error
	}
	results := make([]done, len(chosen))
	work := make(chan int)
	var wg sync.WaitGroup
	for range max(1, min(runtime.GOMAXPROCS(0), len(chosen))) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if chosen[i].bad != "" {
					results[i].err = errors.New(chosen[i].bad)
					continue
				}
				results[i].t, results[i].err = imp.operation(chosen[i])
			}
		}()
	}
	for i := range chosen {
		if ctx.Err() != nil {
			break
		}
		work <- i
	}
	close(work)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ids := map[string]string{}
	for i, o := range chosen {
		skip := func(reason string) {
			out.Skipped = append(out.Skipped, Skipped{Operation: o.name, Method: o.method, Path: o.path, Reason: reason, Selected: o.selected})
		}
		t, err := results[i].t, results[i].err
		if err != nil {
			skip(err.Error())
			continue
		}
		if other, taken := ids[t.ID]; taken {
			skip(fmt.Sprintf("its tool id %s is also operation %s's: import it on its own with another --namespace", t.ID, other))
			continue
		}
		ids[t.ID] = o.name
		t.Pin.Source = lockfile.Source{Kind: lockfile.SourceOpenAPI, File: filepath.ToSlash(file), Operation: o.name}
		t.Changelog = changelog(t.ID, fmt.Sprintf("the OpenAPI document %s (operation %s, %s %s)", filepath.Base(file), o.name, o.method, o.path), t.Notes, now)
		out.Tools = append(out.Tools, t)
	}
	return out, nil
}

var httpMethods = map[string]bool{"GET": true, "PUT": true, "POST": true, "DELETE": true, "OPTIONS": true, "HEAD": true, "PATCH": true, "TRACE": true}

type operation struct {
	name, method, path string
	op, item           map[string]any
	at, itemAt         loc
	bad                string
	selected           bool
}

type openapiImport struct {
	fs            *files
	ns, base      string
	dialect, file string
	opts          Options
}

var templateParam = regexp.MustCompile(`\{([^{}]*)\}`)

// documentWarnings are the document's problems that do not stop an
// operation's import: path templates a router cannot tell apart, and
// operationIds used twice.
func documentWarnings(file string, all []operation) []string {
	var out []string
	byShape := map[string][]string{}
	var shapes []string
	seenPath := map[string]bool{}
	for _, o := range all {
		if seenPath[o.path] {
			continue
		}
		seenPath[o.path] = true
		shape := templateParam.ReplaceAllString(o.path, "{}")
		if len(byShape[shape]) == 0 {
			shapes = append(shapes, shape)
		}
		byShape[shape] = append(byShape[shape], o.path)
	}
	for _, s := range shapes {
		if ps := byShape[s]; len(ps) > 1 {
			out = append(out, fmt.Sprintf("%s#/paths: the paths %s differ only in their parameter names, so a router cannot tell them apart; each operation is still imported on its own", file, strings.Join(quoteAll(ps), " and ")))
		}
	}
	ids := map[string]string{}
	for _, o := range all {
		id, _ := o.op["operationId"].(string)
		if id == "" {
			continue
		}
		if first, dup := ids[id]; dup {
			out = append(out, fmt.Sprintf("%s: operationId %q is also %s's: only the first becomes a tool", o.at, id, first))
			continue
		}
		ids[id] = o.method + " " + o.path
	}
	return out
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strconv.Quote(s)
	}
	return out
}

// suggest names a few operations like want.
func suggest(all []operation, want string) string {
	var like []string
	for _, o := range all {
		if strings.Contains(strings.ToLower(o.name), strings.ToLower(want)) {
			like = append(like, o.name)
		}
	}
	if len(like) == 0 {
		for _, o := range all {
			like = append(like, o.name)
		}
		sort.Strings(like)
	}
	more := ""
	if len(like) > 10 {
		more = fmt.Sprintf(" and %d more", len(like)-10)
		like = like[:10]
	}
	return fmt.Sprintf("it has %d operations; e.g. %s%s", len(all), strings.Join(like, ", "), more)
}

func serverURL(s any) string {
	m, _ := s.(map[string]any)
	u, _ := m["url"].(string)
	vars, _ := m["variables"].(map[string]any)
	for _, name := range sortedNames(vars) {
		v, _ := vars[name].(map[string]any)
		def := fmt.Sprint(v["default"])
		u = strings.ReplaceAll(u, "{"+name+"}", def)
	}
	return strings.TrimSuffix(u, "/")
}

// param is one path, query, header or cookie parameter of an operation.
type param struct {
	in, name, arg string
	required      bool
	description   string
	schema        node
	schemaAt      loc
}

// Body modes of a binding (docs/configuration.md).
const (
	bodyJSON = "json"
	bodyForm = "form"
	bodyNone = "none"
)

// BodyArgument is the argument a request body that is not a JSON object
// (an array, a scalar) is wrapped under.
const BodyArgument = "body"

func (imp *openapiImport) params(o operation) ([]param, error) {
	var list []param
	idx := map[string]int{}
	add := func(raw any, at loc) error {
		items, _ := raw.([]any)
		for i, pr := range items {
			v, pat, err := imp.fs.deref(pr, at.child(fmt.Sprint(i)))
			if err != nil {
				return err
			}
			pm, _ := v.(map[string]any)
			if pm == nil {
				return fmt.Errorf("%s: a parameter is not an object", pat)
			}
			p := param{}
			p.in, _ = pm["in"].(string)
			p.name, _ = pm["name"].(string)
			p.required, _ = pm["required"].(bool)
			p.description, _ = pm["description"].(string)
			if p.name == "" || p.in == "" {
				return fmt.Errorf("%s: a parameter without a name or in", pat)
			}
			p.schema, p.schemaAt = pm["schema"], pat.child("schema")
			if p.schema == nil {
				if content, ok := pm["content"].(map[string]any); ok {
					for _, ct := range sortedNames(content) {
						mt, _ := content[ct].(map[string]any)
						p.schema, p.schemaAt = mt["schema"], pat.child("content", ct, "schema")
						break
					}
				}
			}
			if p.schema == nil {
				p.schema = map[string]any{"type": "string"}
			}
			key := p.in + " " + p.name
			if j, ok := idx[key]; ok {
				list[j] = p // an operation's parameter overrides the path item's
				continue
			}
			idx[key] = len(list)
			list = append(list, p)
		}
		return nil
	}
	if err := add(o.item["parameters"], o.itemAt.child("parameters")); err != nil {
		return nil, err
	}
	if err := add(o.op["parameters"], o.at.child("parameters")); err != nil {
		return nil, err
	}
	return list, nil
}

// media picks a request or response body's media type: JSON (application/json,
// else a +json type), else a form; the kind is bodyJSON or bodyForm, "" when
// neither is there.
func media(content map[string]any) (map[string]any, string, string) {
	norm := map[string]string{}
	var names []string
	for _, ct := range sortedNames(content) {
		n := strings.ToLower(strings.TrimSpace(strings.SplitN(ct, ";", 2)[0]))
		if _, dup := norm[n]; !dup {
			norm[n] = ct
			names = append(names, n)
		}
	}
	get := func(n string) map[string]any {
		m, _ := content[norm[n]].(map[string]any)
		if m == nil {
			m = map[string]any{}
		}
		return m
	}
	if _, ok := norm["application/json"]; ok {
		return get("application/json"), "application/json", bodyJSON
	}
	for _, n := range names {
		if strings.HasSuffix(n, "+json") {
			return get(n), n, bodyJSON
		}
	}
	if _, ok := norm["application/x-www-form-urlencoded"]; ok {
		return get("application/x-www-form-urlencoded"), "application/x-www-form-urlencoded", bodyForm
	}
	return nil, strings.Join(names, ", "), ""
}

func (imp *openapiImport) operation(o operation) (Tool, error) {
	id := imp.ns + "." + ident(opName(o))
	var notes []string
	params, err := imp.params(o)
	if err != nil {
		return Tool{}, err
	}
	for _, m := range templateParam.FindAllStringSubmatch(o.path, -1) {
		declared := false
		for _, p := range params {
			declared = declared || p.in == "path" && p.name == m[1]
		}
		if !declared {
			return Tool{}, fmt.Errorf("the path's {%s} is not declared as a path parameter (declare it, then import again)", m[1])
		}
	}
	in := newSchemaSet(imp.fs)

	// The request body.
	bodyKind, wrapped := "", false
	var bodySchema node
	var encoding map[string]any
	bodyRequired := false
	if raw, ok := o.op["requestBody"]; ok {
		rb, rat, err := imp.fs.deref(raw, o.at.child("requestBody"))
		if err != nil {
			return Tool{}, err
		}
		rbm, _ := rb.(map[string]any)
		bodyRequired, _ = rbm["required"].(bool)
		content, _ := rbm["content"].(map[string]any)
		mt, ctype, kind := media(content)
		switch {
		case len(content) == 0:
		case kind == "" && strings.Contains(ctype, "multipart/"):
			return Tool{}, fmt.Errorf("its request body is %s (file uploads): not imported, since a tool's arguments are JSON and a binding sends a JSON or form body", ctype)
		case kind == "":
			return Tool{}, fmt.Errorf("its request body is %s, not JSON or a form: not imported, since a binding sends a JSON or form body", ctype)
		default:
			bodyKind = kind
			if kind == bodyJSON && ctype != "application/json" {
				notes = append(notes, fmt.Sprintf("the request body's media type is %s; the binding sends application/json", ctype))
			}
			if s, ok := mt["schema"]; ok {
				if bodySchema, err = in.resolve(s, rat.child("content", ctype, "schema")); err != nil {
					return Tool{}, err
				}
			} else {
				notes = append(notes, "the request body has no schema: the contract takes the parameters only")
			}
			encoding, _ = mt["encoding"].(map[string]any)
			if !bodyRequired && bodySchema != nil {
				notes = append(notes, "the request body is optional upstream; the contract asks for its required fields")
			}
		}
	}
	var top map[string]any
	reserved := map[string]bool{}
	if bodySchema != nil {
		top, _ = derefDefs(bodySchema, in.defs).(map[string]any)
		if top == nil || !objectLike(top, in.defs, 0) {
			if bodyKind == bodyForm {
				return Tool{}, errors.New("its form body is not an object schema: a form is a set of named fields")
			}
			wrapped = true
			reserved[BodyArgument] = true
			notes = append(notes, fmt.Sprintf("the request body is not a JSON object: it is the argument %q (the binding sends it as the body)", BodyArgument))
		} else {
			for k := range bodyProps(top, in.defs, 0) {
				reserved[k] = true
			}
		}
	}

	// Path and required query parameters: the URL's arguments.
	sort.SliceStable(params, func(i, j int) bool {
		ri, rj := inRank(params[i].in), inRank(params[j].in)
		if ri != rj {
			return ri < rj
		}
		return params[i].name < params[j].name
	})
	props := map[string]any{}
	var required, urlArgs []string
	var query [][2]string // name, argument
	renames := map[string]string{}
	used := map[string]bool{}
	for _, p := range params {
		switch {
		case p.in == "path", p.in == "query" && p.required:
		case p.in == "query":
			notes = append(notes, fmt.Sprintf("the optional query parameter %s is left out: a binding's URL template cannot leave a parameter out", p.name))
			continue
		default:
			notes = append(notes, fmt.Sprintf("the %s parameter %s is left out: a binding sends no per-call %ss", p.in, p.name, p.in))
			continue
		}
		s, err := in.resolve(p.schema, p.schemaAt)
		if err != nil {
			return Tool{}, err
		}
		if t := typeOf(derefDefs(s, in.defs)); t == "array" || t == "object" {
			return Tool{}, fmt.Errorf("the %s parameter %s is an %s: a binding's URL template takes strings, numbers and booleans", p.in, p.name, t)
		}
		arg := p.name
		for reserved[arg] || used[arg] {
			arg = p.in + "_" + arg
		}
		used[arg] = true
		if arg != p.name {
			notes = append(notes, fmt.Sprintf("the %s parameter %s is the argument %s: the request body has a property %s too", p.in, p.name, arg, p.name))
		}
		if sm, ok := s.(map[string]any); ok && p.description != "" {
			if _, has := sm["description"]; !has {
				sm["description"] = p.description
			}
		}
		props[arg] = s
		required = append(required, arg)
		urlArgs = append(urlArgs, arg)
		if p.in == "path" {
			renames[p.name] = arg
		} else {
			query = append(query, [2]string{p.name, arg})
		}
	}
	sort.Strings(required)
	sort.Slice(query, func(i, j int) bool { return query[i][0] < query[j][0] })
	paramSchema := map[string]any{"type": "object", "properties": props, "required": toAny(required)}
	switch {
	case wrapped:
		props[BodyArgument] = bodySchema
		if bodyRequired {
			paramSchema["required"] = append(asList(paramSchema["required"]), BodyArgument)
		}
	case top != nil:
		merged, err := mergeBody(paramSchema, top, in.defs)
		if err != nil {
			return Tool{}, err
		}
		paramSchema = merged
	}
	if len(in.defs) > 0 {
		paramSchema["$defs"] = in.defs
	}
	cin := &converter{dialect: imp.dialect, dir: input, where: "parameters", notes: &notes}
	parameters, err := cin.convert(paramSchema)
	if err != nil {
		return Tool{}, err
	}
	if parameters, err = objectParameters(parameters, "request", &notes); err != nil {
		return Tool{}, err
	}

	// Result: the first 2xx JSON response; errors: declared 4xx and 5xx.
	var result any
	var errs []map[string]any
	responses, _ := o.op["responses"].(map[string]any)
	for _, code := range sortedNames(responses) {
		r, rat, err := imp.fs.deref(responses[code], o.at.child("responses", code))
		if err != nil {
			return Tool{}, err
		}
		rm, _ := r.(map[string]any)
		status, serr := strconv.Atoi(code)
		content, _ := rm["content"].(map[string]any)
		switch {
		case serr != nil:
			notes = append(notes, fmt.Sprintf("response %s is left out: only declared statuses are imported", code))
		case status >= 200 && status < 300 && result == nil:
			mt, ctype, kind := media(content)
			if kind != bodyJSON || mt["schema"] == nil {
				continue
			}
			rs := newSchemaSet(imp.fs)
			res, err := rs.resolve(mt["schema"], rat.child("content", ctype, "schema"))
			if err != nil {
				return Tool{}, err
			}
			if len(rs.defs) > 0 {
				if rm, ok := res.(map[string]any); ok {
					rm["$defs"] = rs.defs
				} else {
					res = map[string]any{"allOf": []any{res}, "$defs": rs.defs}
				}
			}
			cout := &converter{dialect: imp.dialect, dir: output, where: "result", notes: &notes}
			if result, err = cout.convert(res); err != nil {
				return Tool{}, err
			}
		case status >= 400:
			for _, e := range imp.errorEntries(status, content, rat) {
				dup := false
				for _, o := range errs {
					if o["code"] == e["code"] {
						notes = append(notes, fmt.Sprintf("error %s is declared for %v and %d; the catalogue lists it once, with %v", e["code"], o["http_status"], status, o["http_status"]))
						dup = true
						break
					}
				}
				if !dup {
					errs = append(errs, e)
				}
			}
		}
	}
	effect := "mutating"
	if o.method == http.MethodGet || o.method == http.MethodHead || o.method == http.MethodOptions {
		effect = "read_only"
	}
	summary, _ := o.op["summary"].(string)
	desc, _ := o.op["description"].(string)
	description := strings.TrimSpace(strings.Join(nonEmpty(summary, desc), "\n\n"))
	rawDef, err := canonJSON(map[string]any{"method": o.method, "path": o.path, "operation": o.op, "path_parameters": o.item["parameters"]})
	if err != nil {
		return Tool{}, err
	}
	b := httpBinding(imp.base, o.method, o.path, renames, query, effect)
	if o.method != http.MethodGet && o.method != http.MethodHead {
		switch {
		case bodyKind == "" || bodySchema == nil && bodyKind == bodyJSON:
			if bodyKind == "" {
				b["body"] = bodyNone
			} else if len(urlArgs) > 0 {
				b["body_omit"] = toAny(urlArgs)
			}
		default:
			if bodyKind == bodyForm {
				b["body"] = bodyForm
				if enc := formEncoding(encoding); len(enc) > 0 {
					b["form_encoding"] = enc
				}
			}
			if wrapped {
				b["body_arg"] = BodyArgument
			} else if len(urlArgs) > 0 {
				b["body_omit"] = toAny(urlArgs)
			}
		}
	}
	t := Tool{
		ID:        id,
		Schema:    contractOf(id, ident(opName(o)), description, effect, parameters, result, errs),
		Owner:     imp.opts.Owner,
		RiskLevel: imp.opts.RiskLevel,
		Notes:     notes,
		Pin:       &lockfile.Pin{PinVersion: lockfile.PinFormatVersion, ToolID: id, Definition: rawDef, Todo: todos()},
		Binding:   b,
	}
	err = checkContract(&t)
	return t, err
}

func opName(o operation) string {
	if id, _ := o.op["operationId"].(string); id != "" {
		return id
	}
	return strings.ToLower(o.method) + "_" + o.path
}

func inRank(in string) int {
	switch in {
	case "path":
		return 0
	case "query":
		return 1
	}
	return 2
}

func typeOf(v node) string {
	m, _ := v.(map[string]any)
	t, _ := m["type"].(string)
	if t == "" && m["properties"] != nil {
		return "object"
	}
	return t
}

// objectLike: an object schema, or a composition of them.
func objectLike(m map[string]any, defs map[string]any, depth int) bool {
	if isObject(m) {
		return true
	}
	if depth > 8 {
		return false
	}
	for _, k := range []string{"oneOf", "anyOf"} {
		if list, ok := m[k].([]any); ok && len(list) > 0 {
			for _, br := range list {
				bm, _ := derefDefs(br, defs).(map[string]any)
				if bm == nil || !objectLike(bm, defs, depth+1) {
					return false
				}
			}
			return true
		}
	}
	if list, ok := m["allOf"].([]any); ok {
		for _, br := range list {
			if bm, _ := derefDefs(br, defs).(map[string]any); bm != nil && objectLike(bm, defs, depth+1) {
				return true
			}
		}
	}
	return false
}

// bodyProps are the property names a body schema may have, branches and
// allOf members included.
func bodyProps(m map[string]any, defs map[string]any, depth int) map[string]bool {
	out := map[string]bool{}
	if depth > 8 {
		return out
	}
	if p, ok := m["properties"].(map[string]any); ok {
		for k := range p {
			out[k] = true
		}
	}
	for _, k := range []string{"oneOf", "anyOf", "allOf"} {
		list, _ := m[k].([]any)
		for _, br := range list {
			if bm, _ := derefDefs(br, defs).(map[string]any); bm != nil {
				for p := range bodyProps(bm, defs, depth+1) {
					out[p] = true
				}
			}
		}
	}
	return out
}

// formEncoding is the binding's form_encoding from an OpenAPI encoding object.
func formEncoding(enc map[string]any) map[string]any {
	out := map[string]any{}
	for _, name := range sortedNames(enc) {
		e, _ := enc[name].(map[string]any)
		entry := map[string]any{}
		if s, ok := e["style"].(string); ok {
			entry["style"] = s
		}
		if x, ok := e["explode"].(bool); ok {
			entry["explode"] = x
		}
		if ct, ok := e["contentType"].(string); ok && strings.Contains(ct, "json") {
			entry["content_type"] = "application/json"
		}
		if len(entry) > 0 {
			out[name] = entry
		}
	}
	return out
}

func canonJSON(v any) (json.RawMessage, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return canon.Transform(raw)
}

func httpBinding(base, method, path string, renames map[string]string, query [][2]string, effect string) map[string]any {
	tmpl := templateParam.ReplaceAllStringFunc(path, func(m string) string {
		name := m[1 : len(m)-1]
		if r, ok := renames[name]; ok {
			name = r
		}
		return "{args." + name + "}"
	})
	if len(query) > 0 {
		parts := make([]string, len(query))
		for i, q := range query {
			parts[i] = escapeQueryName(q[0]) + "={args." + q[1] + "}"
		}
		tmpl += "?" + strings.Join(parts, "&")
	}
	b := map[string]any{"url": base + tmpl, "method": method}
	if base == "" || !strings.Contains(base, "://") {
		b["url"] = "BASE_URL" + tmpl
		b["#"] = "the document names no absolute server URL: replace BASE_URL (or import with --base-url)"
	}
	if effect == "mutating" {
		root := base
		if root == "" || !strings.Contains(root, "://") {
			root = "BASE_URL"
		}
		note := "lookup: {url: \"" + root + "/…/{downstream_key}\"}   # an endpoint that finds an effect by its idempotency key: 200 found, 404 not found"
		if c, ok := b["#"].(string); ok {
			note = c + "\n" + note
		}
		b["#"] = note
	}
	return b
}

func escapeQueryName(s string) string {
	r := strings.NewReplacer("{", "%7B", "}", "%7D", "&", "%26", "=", "%3D", "#", "%23", " ", "%20")
	return r.Replace(s)
}

// mergeBody puts the body's properties beside the path and query
// parameters: an object body's properties join them; a oneOf/anyOf body of
// objects gets the parameters in each branch. The parameters' names do not
// collide with the body's (operation renamed them).
func mergeBody(params map[string]any, bm map[string]any, defs map[string]any) (map[string]any, error) {
	props := params["properties"].(map[string]any)
	required := asList(params["required"])
	if len(props) == 0 {
		out := cloneMap(bm)
		if _, has := out["type"]; !has {
			out["type"] = "object"
		}
		return out, nil
	}
	for _, k := range []string{"oneOf", "anyOf"} {
		if branches, ok := bm[k].([]any); ok && !isObject(bm) {
			out := cloneMap(bm)
			nb := make([]any, len(branches))
			for i, br := range branches {
				brm, ok := derefDefs(br, defs).(map[string]any)
				if !ok {
					return nil, fmt.Errorf("%s branch %d of the request body is not an object schema", k, i)
				}
				nb[i] = mergeObject(brm, props, required)
			}
			out[k] = nb
			out["type"] = "object"
			return out, nil
		}
	}
	return mergeObject(bm, props, required), nil
}

func mergeObject(obj map[string]any, props map[string]any, required []any) map[string]any {
	out := cloneMap(obj)
	op, _ := out["properties"].(map[string]any)
	merged := map[string]any{}
	for k, v := range op {
		merged[k] = v
	}
	for k, v := range props {
		merged[k] = v
	}
	out["properties"] = merged
	out["required"] = append(slicesClone(asList(out["required"])), required...)
	if _, has := out["type"]; !has {
		out["type"] = "object"
	}
	return out
}

func slicesClone(l []any) []any { return append([]any(nil), l...) }

// errorEntries are the catalogue entries of one error response: one per
// value of a "code" (or "error.code") enum in its JSON schema, else one
// named after the status.
func (imp *openapiImport) errorEntries(status int, content map[string]any, at loc) []map[string]any {
	entry := func(code string) map[string]any {
		return map[string]any{"code": code, "category": category(status), "http_status": status, "retryable": status == 429 || status == 503}
	}
	mt, ctype, kind := media(content)
	if kind == bodyJSON {
		s := imp.schemaObject(mt["schema"], at.child("content", ctype, "schema"))
		props, _ := s["properties"].(map[string]any)
		if e := imp.schemaObject(props["error"], at); e != nil {
			if ep, _ := e["properties"].(map[string]any); ep["code"] != nil {
				props = ep
			}
		}
		if c := imp.schemaObject(props["code"], at); c != nil {
			var out []map[string]any
			enum, _ := c["enum"].([]any)
			for _, v := range enum {
				if str, ok := v.(string); ok {
					out = append(out, entry(str))
				}
			}
			if len(out) > 0 {
				return out
			}
		}
	}
	name := strings.ToUpper(strings.ReplaceAll(http.StatusText(status), " ", "_"))
	name = strings.ReplaceAll(strings.ReplaceAll(name, "-", "_"), "'", "")
	if name == "" {
		name = fmt.Sprintf("HTTP_%d", status)
	}
	return []map[string]any{entry(name)}
}

// schemaObject follows a schema's $refs to an object, nil when there is none.
func (imp *openapiImport) schemaObject(v node, at loc) map[string]any {
	for range maxRefHops {
		m, _ := v.(map[string]any)
		ref, ok := m["$ref"].(string)
		if !ok {
			return m
		}
		nv, nat, err := imp.fs.lookup(at, ref)
		if err != nil {
			return nil
		}
		v, at = nv, nat
	}
	return nil
}

// Summary is the import's one-line count: "N of M operations imported".
func (r *OpenAPIImport) Summary() string {
	s := fmt.Sprintf("%d of %d operations imported", len(r.Tools), r.Selected)
	if r.Selected != r.Operations {
		s = fmt.Sprintf("%d of %d selected operations imported (the document has %d)", len(r.Tools), r.Selected, r.Operations)
	}
	if n := len(r.Skipped); n > 0 {
		s += fmt.Sprintf("; %d skipped (listed above with the reason)", n)
	}
	switch n := len(r.Warnings); n {
	case 0:
	case 1:
		s += "; 1 warning"
	default:
		s += fmt.Sprintf("; %d warnings", n)
	}
	return s
}
