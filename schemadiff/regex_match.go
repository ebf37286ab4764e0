package schemadiff

import (
	"sync"

	"github.com/toolgate/toolgate/internal/jsonschemax"
)

// ecmaRegexps caches the validator's own engine for concrete matches.
var ecmaRegexps sync.Map // pattern → *jsonschemax.Regexp or nil

// matchECMA reports whether the validator's engine finds pat in s; known is false when
// the pattern does not compile or the match hits its limits.
func matchECMA(pat, s string) (match, known bool) {
	v, ok := ecmaRegexps.Load(pat)
	if !ok {
		re, err := jsonschemax.CompileRegexp(pat)
		if err != nil {
			re = nil
		}
		v, _ = ecmaRegexps.LoadOrStore(pat, re)
	}
	re, _ := v.(*jsonschemax.Regexp)
	if re == nil {
		return false, false
	}
	m, err := re.Match(s)
	if err != nil {
		return false, false
	}
	return m, true
}
