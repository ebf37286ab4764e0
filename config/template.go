package config

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/toolgate/toolgate/internal/placeholder"
	"github.com/toolgate/toolgate/internal/suggest"
)

// placeholderNames are the placeholders a URL template may use besides {args.FIELD}.
var placeholderNames = []string{"action_id", "downstream_key", "tenant"}

// PlaceholderHelp lists the placeholders, for messages and docs.
const PlaceholderHelp = "{action_id}, {downstream_key}, {tenant} or {args.FIELD}"

// checkTemplate checks a template on its own: its braces, its placeholder names, and for a
// URL a fixed scheme and host. {args.FIELD} names are checked against the tool by configcheck.Check.
func checkTemplate(tmpl string, isURL, allowKey bool) []string {
	ps, err := placeholder.Scan(tmpl)
	if err != nil {
		return []string{fmt.Sprintf("%q: %s", tmpl, err)}
	}
	var out []string
	names := placeholderNames
	if !allowKey {
		names = []string{"action_id", "tenant"}
	}
	for _, p := range ps {
		switch {
		case contains(names, p.Name):
		case p.Name == "downstream_key":
			out = append(out, "{downstream_key} cannot stand here: the downstream key is built from this template (use {tenant}, {action_id} or {args.FIELD})")
		case strings.HasPrefix(p.Name, "args."):
			if field := strings.TrimPrefix(p.Name, "args."); field == "" || strings.HasPrefix(field, ".") || strings.HasSuffix(field, ".") || strings.Contains(field, "..") {
				out = append(out, fmt.Sprintf("{%s} names no field: write {args.FIELD} with a top-level parameter", p.Name))
			}
		default:
			msg := fmt.Sprintf("unknown placeholder {%s}", p.Name)
			if near := suggest.Nearest(p.Name, names, 2); len(near) > 0 {
				msg += "; did you mean {" + near[0] + "}?"
			} else if head, rest, ok := strings.Cut(p.Name, "."); ok && rest != "" && suggest.Distance(head, "args") <= 1 {
				msg += "; did you mean {args." + rest + "}?"
			}
			out = append(out, msg+" (placeholders: "+PlaceholderHelp+")")
		}
	}
	if isURL {
		out = append(out, checkURLShape(tmpl, ps)...)
	}
	return out
}

// checkURLShape refuses a URL template that is not an absolute http(s) URL, or that has a
// placeholder in its scheme or host: where a request goes must not depend on a call's
// arguments.
func checkURLShape(tmpl string, ps []placeholder.Placeholder) []string {
	scheme, rest, ok := strings.Cut(tmpl, "://")
	if !ok {
		return []string{fmt.Sprintf("%q is not an absolute http(s) URL (write http://host/path)", tmpl)}
	}
	hostEnd := strings.IndexAny(rest, "/?#")
	if hostEnd < 0 {
		hostEnd = len(rest)
	}
	authorityEnd := len(scheme) + 3 + hostEnd
	for _, p := range ps {
		if p.Offset < len(scheme) {
			return []string{fmt.Sprintf("placeholder {%s} in the scheme of %q: the scheme must be fixed (placeholders may stand in the path and query)", p.Name, tmpl)}
		}
		if p.Offset < authorityEnd {
			return []string{fmt.Sprintf("placeholder {%s} in the host of %q: the host must be fixed, so a call's arguments cannot choose where it goes (placeholders may stand in the path and query)", p.Name, tmpl)}
		}
	}
	if s := strings.ToLower(scheme); s != "http" && s != "https" {
		return []string{fmt.Sprintf("%q is not an http(s) URL", tmpl)}
	}
	if hostEnd == 0 {
		return []string{fmt.Sprintf("%q names no host", tmpl)}
	}
	if _, err := parseURLTemplate(tmpl, ps); err != nil {
		return []string{fmt.Sprintf("%q is not a valid URL: %v", tmpl, err)}
	}
	return nil
}

// parseURLTemplate parses a template with each placeholder replaced by a plain word.
func parseURLTemplate(tmpl string, ps []placeholder.Placeholder) (string, error) {
	var b strings.Builder
	last := 0
	for _, p := range ps {
		b.WriteString(tmpl[last:p.Offset])
		b.WriteString("x")
		last = p.Offset + len(p.Name) + 2
	}
	b.WriteString(tmpl[last:])
	u, err := parseURL(b.String())
	if err != nil {
		return "", err
	}
	return u, nil
}

func parseURL(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return "", err
	}
	return u.String(), nil
}

// TemplateHost is the host and port of a URL template (placeholders stand
// only in its path and query), lowercased, with the scheme's default port
// made explicit.
func TemplateHost(tmpl string) (string, bool) {
	ps, err := placeholder.Scan(tmpl)
	if err != nil || len(checkURLShape(tmpl, ps)) > 0 {
		return "", false // refused as it is
	}
	s, err := parseURLTemplate(tmpl, ps)
	if err != nil {
		return "", false
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return "", false
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[strings.ToLower(u.Scheme)]
	}
	return strings.ToLower(u.Hostname()) + ":" + port, true
}
