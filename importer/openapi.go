package importer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/toolgate/toolgate/internal/canon"
	"github.com/toolgate/toolgate/internal/jsonschemax"
	"github.com/toolgate/toolgate/lockfile"
)

// FromOpenAPI makes tool folders from the operations of an OpenAPI 3.0 or
// 3.1 document (JSON or YAML), the ones named by operationId (or "METHOD
// /path"; all when ops is empty). file is where data was read from: other
// files it references are read relative to it (local files only).
// baseURL replaces the document's first server URL in the bindings.
//
// The request body (application/json, an object or a oneOf/anyOf of
// objects) and the path and required query parameters become parameters;
// the first 2xx response's JSON schema becomes result; each declared 4xx
// and 5xx response becomes an entry of errors. GET, HEAD and OPTIONS are
// read_only, other methods mutating. Every $ref is resolved.
func FromOpenAPI(data []byte, file string, ops []string, baseURL string, opts Options) ([]Tool, error) {
	loader := openapi3.NewLoader()
	loader.IsExternalRefsAllowed = true
	loader.ReadFromURIFunc = localFilesOnly
	abs, _ := filepath.Abs(file)
	doc, err := loader.LoadFromDataWithPath(data, &url.URL{Path: abs})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", file, err)
	}
	// patterns are ECMA-262, read as the gateway's validator reads them (a lookahead loads)
	ecma := openapi3.SetRegexCompiler(func(p string) (openapi3.RegexMatcher, error) { return jsonschemax.CompileRegexp(p) })
	if err := doc.Validate(context.Background(), openapi3.DisableExamplesValidation(), ecma); err != nil {
		return nil, fmt.Errorf("%s is not a valid OpenAPI document: %w", file, err)
	}
	title := ""
	if doc.Info != nil {
		title = doc.Info.Title
	}
	ns := namespace(opts.Namespace, title)
	if msg := CheckNamespace(ns); msg != "" {
		return nil, fmt.Errorf("%s (set --namespace)", msg)
	}
	base := baseURL
	if base == "" && len(doc.Servers) > 0 {
		base = serverURL(doc.Servers[0])
	}
	dialect := DialectOpenAPI3
	if strings.HasPrefix(doc.OpenAPI, "3.1") {
		dialect = Dialect202012
	}
	type found struct {
		method, path string
		op           *openapi3.Operation
		item         *openapi3.PathItem
	}
	var all []found
	for _, p := range doc.Paths.InMatchingOrder() {
		item := doc.Paths.Value(p)
		methods := make([]string, 0, 8)
		for m := range item.Operations() {
			methods = append(methods, m)
		}
		sort.Strings(methods)
		for _, m := range methods {
			all = append(all, found{method: m, path: p, op: item.Operations()[m], item: item})
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].path+" "+all[i].method < all[j].path+" "+all[j].method })
	name := func(f found) string {
		if f.op.OperationID != "" {
			return f.op.OperationID
		}
		return f.method + " " + f.path
	}
	var chosen []found
	if len(ops) == 0 {
		chosen = all
	}
	for _, want := range ops {
		i := slices.IndexFunc(all, func(f found) bool { return name(f) == want || strings.EqualFold(f.method+" "+f.path, want) })
		if i < 0 {
			names := make([]string, len(all))
			for j, f := range all {
				names[j] = name(f)
			}
			return nil, fmt.Errorf("%s has no operation %q (it has %s)", file, want, strings.Join(names, ", "))
		}
		chosen = append(chosen, all[i])
	}
	now := opts.now()
	var out []Tool
	for _, f := range chosen {
		t, err := fromOperation(ns, f.method, f.path, f.op, f.item, base, dialect, opts)
		if err != nil {
			return nil, fmt.Errorf("operation %s: %w", name(f), err)
		}
		opName := name(f)
		t.Pin.Source = lockfile.Source{Kind: lockfile.SourceOpenAPI, File: filepath.ToSlash(file), Operation: opName}
		t.Changelog = changelog(t.ID, fmt.Sprintf("the OpenAPI document %s (operation %s, %s %s)", filepath.Base(file), opName, f.method, f.path), t.Notes, now)
		out = append(out, t)
	}
	return out, uniqueIDs(out)
}

// localFilesOnly lets $refs name other local files, never a URL.
func localFilesOnly(loader *openapi3.Loader, u *url.URL) ([]byte, error) {
	if u.Scheme != "" && u.Scheme != "file" || u.Host != "" {
		return nil, fmt.Errorf("$ref %s: toolgate import reads only local files", u)
	}
	return openapi3.ReadFromFile(loader, u)
}

func serverURL(s *openapi3.Server) string {
	u := s.URL
	for name, v := range s.Variables {
		u = strings.ReplaceAll(u, "{"+name+"}", v.Default)
	}
	return strings.TrimSuffix(u, "/")
}

func fromOperation(ns, method, path string, op *openapi3.Operation, item *openapi3.PathItem, base, dialect string, opts Options) (Tool, error) {
	opName := op.OperationID
	if opName == "" {
		opName = strings.ToLower(method) + "_" + path
	}
	id := ns + "." + ident(opName)
	var notes []string
	x := &inliner{defs: map[string]any{}, names: map[*openapi3.Schema]string{}, onStack: map[*openapi3.Schema]bool{}, recursive: map[*openapi3.Schema]bool{}}

	// Parameters: path and required query parameters (URL templates), then the body.
	props := map[string]any{}
	var required []string
	query := []string{}
	params := append(openapi3.Parameters{}, item.Parameters...)
	params = append(params, op.Parameters...)
	seen := map[string]bool{}
	for i := len(params) - 1; i >= 0; i-- { // an operation's parameter overrides the path item's
		p := params[i].Value
		if p == nil || seen[p.In+" "+p.Name] {
			continue
		}
		seen[p.In+" "+p.Name] = true
		switch {
		case p.In == openapi3.ParameterInPath, p.In == openapi3.ParameterInQuery && p.Required:
		case p.In == openapi3.ParameterInQuery:
			notes = append(notes, fmt.Sprintf("the optional query parameter %s is left out: a binding's URL template cannot leave a parameter out", p.Name))
			continue
		default:
			notes = append(notes, fmt.Sprintf("the %s parameter %s is left out: a binding sends no per-call %ss", p.In, p.Name, p.In))
			continue
		}
		var s any = map[string]any{"type": "string"}
		if p.Schema != nil {
			s = x.schema(p.Schema)
		}
		if sm, ok := s.(map[string]any); ok && p.Description != "" {
			if _, has := sm["description"]; !has {
				sm["description"] = p.Description
			}
		}
		props[p.Name] = s
		required = append(required, p.Name)
		if p.In == openapi3.ParameterInQuery {
			query = append(query, p.Name)
		}
	}
	sort.Strings(required)
	sort.Strings(query)
	paramSchema := map[string]any{"type": "object", "properties": props, "required": toAny(required)}
	var bodySchema any
	if rb := op.RequestBody; rb != nil && rb.Value != nil {
		mt, ctype := jsonMedia(rb.Value.Content)
		if mt == nil {
			return Tool{}, fmt.Errorf("its request body is not JSON (%s): toolgate sends the arguments as a JSON body", strings.Join(mediaTypes(rb.Value.Content), ", "))
		}
		if ctype != "application/json" {
			notes = append(notes, fmt.Sprintf("the request body's media type is %s; the binding sends application/json", ctype))
		}
		if mt.Schema != nil {
			bodySchema = x.schema(mt.Schema)
		}
		if !rb.Value.Required {
			notes = append(notes, "the request body is optional upstream; the contract asks for its required fields")
		}
	}
	if bodySchema != nil {
		merged, err := mergeBody(paramSchema, bodySchema)
		if err != nil {
			return Tool{}, err
		}
		paramSchema = merged
	}
	if len(x.defs) > 0 {
		paramSchema["$defs"] = x.defs
	}
	in := &converter{dialect: dialect, dir: input, where: "parameters", notes: &notes}
	parameters, err := in.convert(paramSchema)
	if err != nil {
		return Tool{}, err
	}
	if parameters, err = objectParameters(parameters, "request", &notes); err != nil {
		return Tool{}, err
	}

	// Result: the first 2xx JSON response; errors: declared 4xx and 5xx.
	var result any
	var errs []map[string]any
	if op.Responses != nil {
		codes := make([]string, 0)
		for code := range op.Responses.Map() {
			codes = append(codes, code)
		}
		sort.Strings(codes)
		for _, code := range codes {
			r := op.Responses.Map()[code].Value
			if r == nil {
				continue
			}
			status, err := strconv.Atoi(code)
			switch {
			case err != nil:
				notes = append(notes, fmt.Sprintf("response %s is left out: only declared statuses are imported", code))
			case status >= 200 && status < 300 && result == nil:
				mt, _ := jsonMedia(r.Content)
				if mt == nil || mt.Schema == nil {
					continue
				}
				rx := &inliner{defs: map[string]any{}, names: map[*openapi3.Schema]string{}, onStack: map[*openapi3.Schema]bool{}, recursive: map[*openapi3.Schema]bool{}}
				rs := rx.schema(mt.Schema)
				if rm, ok := rs.(map[string]any); ok && len(rx.defs) > 0 {
					rm["$defs"] = rx.defs
				}
				out := &converter{dialect: dialect, dir: output, where: "result", notes: &notes}
				if result, err = out.convert(rs); err != nil {
					return Tool{}, err
				}
			case status >= 400:
				for _, e := range errorEntries(status, r) {
					if i := slices.IndexFunc(errs, func(o map[string]any) bool { return o["code"] == e["code"] }); i >= 0 {
						notes = append(notes, fmt.Sprintf("error %s is declared for %v and %d; the catalogue lists it once, with %v", e["code"], errs[i]["http_status"], status, errs[i]["http_status"]))
						continue
					}
					errs = append(errs, e)
				}
			}
		}
	}
	effect := "mutating"
	if method == http.MethodGet || method == http.MethodHead || method == http.MethodOptions {
		effect = "read_only"
	}
	description := strings.TrimSpace(strings.Join(nonEmpty(op.Summary, op.Description), "\n\n"))
	rawDef, err := operationDefinition(method, path, op, item)
	if err != nil {
		return Tool{}, err
	}
	t := Tool{
		ID:        id,
		Schema:    contractOf(id, ident(opName), description, effect, parameters, result, errs),
		Owner:     opts.Owner,
		RiskLevel: opts.RiskLevel,
		Notes:     notes,
		Pin:       &lockfile.Pin{PinVersion: lockfile.PinFormatVersion, ToolID: id, Definition: rawDef, Todo: todos()},
		Binding:   httpBinding(base, method, path, query, effect),
	}
	return t, checkContract(t)
}

// operationDefinition is the operation as the document defines it, with its
// path and method, as canonical JSON: what upstream.json keeps.
func operationDefinition(method, path string, op *openapi3.Operation, item *openapi3.PathItem) (json.RawMessage, error) {
	raw, err := json.Marshal(map[string]any{"method": method, "path": path, "operation": op, "path_parameters": item.Parameters})
	if err != nil {
		return nil, err
	}
	return canon.Transform(raw)
}

func httpBinding(base, method, path string, query []string, effect string) map[string]any {
	tmpl := path
	for {
		i := strings.Index(tmpl, "{")
		if i < 0 || strings.HasPrefix(tmpl[i:], "{args.") {
			break
		}
		tmpl = tmpl[:i] + "{args." + tmpl[i+1:]
	}
	if len(query) > 0 {
		parts := make([]string, len(query))
		for i, q := range query {
			parts[i] = q + "={args." + q + "}"
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

// mergeBody puts the body's properties beside the path and query
// parameters: an object body's properties join them; a oneOf/anyOf body of
// objects gets the parameters in each branch.
func mergeBody(params map[string]any, body any) (map[string]any, error) {
	bm, ok := body.(map[string]any)
	if !ok {
		return nil, errors.New("its request body schema is not an object schema")
	}
	props := params["properties"].(map[string]any)
	required := asList(params["required"])
	if len(props) == 0 {
		if isObject(bm) || bm["oneOf"] != nil || bm["anyOf"] != nil {
			out := cloneMap(bm)
			if _, has := out["type"]; !has {
				out["type"] = "object"
			}
			return out, nil
		}
		return nil, errors.New("its request body is not a JSON object: a tool's arguments are an object")
	}
	for _, k := range []string{"oneOf", "anyOf"} {
		if branches, ok := bm[k].([]any); ok {
			out := cloneMap(bm)
			nb := make([]any, len(branches))
			for i, br := range branches {
				brm, ok := br.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("%s branch %d of the request body is not an object schema", k, i)
				}
				m, err := mergeObject(brm, props, required)
				if err != nil {
					return nil, fmt.Errorf("%s branch %d: %w", k, i, err)
				}
				nb[i] = m
			}
			out[k] = nb
			out["type"] = "object"
			return out, nil
		}
	}
	if !isObject(bm) {
		return nil, errors.New("its request body is not a JSON object: a tool's arguments are an object")
	}
	return mergeObject(bm, props, required)
}

func mergeObject(obj map[string]any, props map[string]any, required []any) (map[string]any, error) {
	out := cloneMap(obj)
	op, _ := out["properties"].(map[string]any)
	merged := map[string]any{}
	for k, v := range op {
		merged[k] = v
	}
	for k, v := range props {
		if _, clash := merged[k]; clash {
			return nil, fmt.Errorf("the parameter %s is also a property of the request body", k)
		}
		merged[k] = v
	}
	out["properties"] = merged
	req := append(asList(out["required"]), required...)
	out["required"] = req
	if _, has := out["type"]; !has {
		out["type"] = "object"
	}
	return out, nil
}

func cloneMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if strings.TrimSpace(s) != "" {
			out = append(out, strings.TrimSpace(s))
		}
	}
	return out
}

// jsonMedia picks application/json, else the first */*+json media type.
func jsonMedia(c openapi3.Content) (*openapi3.MediaType, string) {
	if mt, ok := c["application/json"]; ok {
		return mt, "application/json"
	}
	types := mediaTypes(c)
	for _, t := range types {
		if strings.HasSuffix(t, "+json") {
			return c[t], t
		}
	}
	return nil, ""
}

func mediaTypes(c openapi3.Content) []string {
	out := make([]string, 0, len(c))
	for t := range c {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// errorEntries are the catalogue entries of one error response: one per
// value of a "code" (or "error.code") enum in its JSON schema, else one
// named after the status.
func errorEntries(status int, r *openapi3.Response) []map[string]any {
	entry := func(code string) map[string]any {
		return map[string]any{"code": code, "category": category(status), "http_status": status, "retryable": status == 429 || status == 503}
	}
	if mt, _ := jsonMedia(r.Content); mt != nil && mt.Schema != nil && mt.Schema.Value != nil {
		s := mt.Schema.Value
		if e := s.Properties["error"]; e != nil && e.Value != nil && e.Value.Properties["code"] != nil {
			s = e.Value
		}
		if c := s.Properties["code"]; c != nil && c.Value != nil && len(c.Value.Enum) > 0 {
			var out []map[string]any
			for _, v := range c.Value.Enum {
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

func category(status int) string {
	switch {
	case status == 401 || status == 403:
		return "permission"
	case status == 429:
		return "rate_limit"
	case status == 400 || status == 422 || status == 413 || status == 415:
		return "validation"
	case status >= 500:
		return "platform"
	}
	return "business"
}

// inliner turns a kin-openapi schema into a JSON document with every $ref
// resolved in place; a schema that refers to itself (directly or through
// others) goes to $defs and is referred to as #/$defs/NAME.
type inliner struct {
	defs      map[string]any
	names     map[*openapi3.Schema]string
	onStack   map[*openapi3.Schema]bool
	recursive map[*openapi3.Schema]bool
	depth     int
}

func (x *inliner) schema(ref *openapi3.SchemaRef) any {
	if ref == nil || ref.Value == nil {
		return map[string]any{}
	}
	v := ref.Value
	if ref.Ref != "" {
		if _, ok := x.names[v]; !ok {
			x.names[v] = x.defName(ref.Ref)
		}
	}
	if x.onStack[v] || x.depth > 64 {
		x.recursive[v] = true
		if _, ok := x.names[v]; !ok {
			x.names[v] = x.defName(fmt.Sprintf("schema%d", len(x.names)+1))
		}
		return map[string]any{"$ref": "#/$defs/" + x.names[v]}
	}
	x.onStack[v] = true
	x.depth++
	defer func() { delete(x.onStack, v); x.depth-- }()
	raw, err := json.Marshal(v)
	if err != nil {
		return map[string]any{}
	}
	var m map[string]any
	if err := decodeNumbers(raw, &m); err != nil {
		return map[string]any{}
	}
	one := map[string]*openapi3.SchemaRef{"items": v.Items, "not": v.Not, "contains": v.Contains, "propertyNames": v.PropertyNames,
		"if": v.If, "then": v.Then, "else": v.Else, "additionalProperties": v.AdditionalProperties.Schema,
		"unevaluatedItems": v.UnevaluatedItems.Schema, "unevaluatedProperties": v.UnevaluatedProperties.Schema}
	for _, k := range sortedNames(one) {
		if sub := one[k]; sub != nil {
			m[k] = x.schema(sub)
		}
	}
	many := map[string]openapi3.SchemaRefs{"allOf": v.AllOf, "anyOf": v.AnyOf, "oneOf": v.OneOf, "prefixItems": v.PrefixItems}
	for _, k := range sortedNames(many) {
		subs := many[k]
		if len(subs) == 0 {
			continue
		}
		list := make([]any, len(subs))
		for i, sub := range subs {
			list[i] = x.schema(sub)
		}
		m[k] = list
	}
	maps := map[string]openapi3.Schemas{"properties": v.Properties, "patternProperties": v.PatternProperties, "dependentSchemas": v.DependentSchemas}
	for _, k := range sortedNames(maps) {
		subs := maps[k]
		if len(subs) == 0 {
			continue
		}
		mm := map[string]any{}
		for _, name := range sortedNames(subs) {
			mm[name] = x.schema(subs[name])
		}
		m[k] = mm
	}
	if x.recursive[v] {
		x.defs[x.names[v]] = m
		return map[string]any{"$ref": "#/$defs/" + x.names[v]}
	}
	return m
}

// defName is a $defs name from a reference's last segment, unique.
func (x *inliner) defName(ref string) string {
	name := ref
	if i := strings.LastIndexAny(ref, "/#"); i >= 0 {
		name = ref[i+1:]
	}
	if name == "" {
		name = "schema"
	}
	base, n := name, 1
	for taken(x.names, name) {
		n++
		name = fmt.Sprintf("%s%d", base, n)
	}
	return name
}

func taken(names map[*openapi3.Schema]string, name string) bool {
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}
