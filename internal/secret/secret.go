// Package secret scrubs configured secret values (the credentials of an
// upstream's mcp.headers, a URL's password or query) from the texts toolgate
// writes: logs, /readyz, error texts and what they become (a problem's
// detail, an action's history). A secret is replaced in every form it is
// commonly written in (as is, quoted, JSON-escaped, URL-escaped, and the
// token of an "Authorization: Bearer …" or "Basic …" value).
package secret

import (
	"encoding/base64"
	"encoding/json"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Mask replaces a secret.
const Mask = "[secret]"

// MinLength is the shortest value scrubbed: a shorter one ("1", "on") is no
// credential and would blank ordinary words.
const MinLength = 4

// Set is a set of secret values. The zero value and nil scrub nothing. It is
// safe for concurrent use once built.
type Set struct {
	mu       sync.Mutex
	forms    map[string]bool
	replacer *strings.Replacer
}

// Add adds values (and, for an Authorization-style value, its token).
func (s *Set) Add(values ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range values {
		s.add(v)
		scheme, token, ok := strings.Cut(strings.TrimSpace(v), " ")
		if !ok {
			continue
		}
		token = strings.TrimSpace(token)
		s.add(token)
		if strings.EqualFold(scheme, "basic") {
			if raw, err := base64.StdEncoding.DecodeString(token); err == nil {
				s.add(string(raw))
				if _, pass, ok := strings.Cut(string(raw), ":"); ok {
					s.add(pass)
				}
			}
		}
	}
}

func (s *Set) add(v string) {
	if len(v) < MinLength {
		return
	}
	if s.forms == nil {
		s.forms = map[string]bool{}
	}
	q, a := strconv.Quote(v), strconv.QuoteToASCII(v)
	j, _ := json.Marshal(v)
	for _, f := range []string{v, url.PathEscape(v), url.QueryEscape(v), q[1 : len(q)-1], a[1 : len(a)-1], string(j[1 : len(j)-1])} {
		if len(f) >= MinLength {
			s.forms[f] = true
		}
	}
	s.replacer = nil
}

// AddURL adds a URL's password and its query's values.
func (s *Set) AddURL(raw string) {
	u, err := url.Parse(raw)
	if err != nil {
		return
	}
	if u.User != nil {
		if p, ok := u.User.Password(); ok {
			s.Add(p)
		}
	}
	for _, vs := range u.Query() {
		s.Add(vs...)
	}
}

// Empty reports a set with nothing to scrub.
func (s *Set) Empty() bool {
	if s == nil {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.forms) == 0
}

// Scrub returns t with every secret replaced by Mask.
func (s *Set) Scrub(t string) string {
	if s == nil || t == "" {
		return t
	}
	s.mu.Lock()
	if len(s.forms) == 0 {
		s.mu.Unlock()
		return t
	}
	if s.replacer == nil {
		s.replacer = Replacer(s.forms, Mask)
	}
	r := s.replacer
	s.mu.Unlock()
	return r.Replace(t)
}

// Replacer returns a replacer of every value of values by mask, the longer
// values first, so that a value that contains another is replaced whole.
func Replacer(values map[string]bool, mask string) *strings.Replacer {
	forms := make([]string, 0, len(values))
	for f := range values {
		forms = append(forms, f)
	}
	sort.Slice(forms, func(i, j int) bool {
		if len(forms[i]) != len(forms[j]) {
			return len(forms[i]) > len(forms[j])
		}
		return forms[i] < forms[j]
	})
	pairs := make([]string, 0, 2*len(forms))
	for _, f := range forms {
		pairs = append(pairs, f, mask)
	}
	return strings.NewReplacer(pairs...)
}
