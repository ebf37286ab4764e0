// Package jsonschemax holds what toolgate sets on every JSON Schema compiler it builds
// (santhosh-tekuri/jsonschema/v6): an ECMA-262 regular expression engine with a match
// time limit, the formats it asserts written from their RFCs, and a repair of the
// library's instance locations. The contract loader and the schema diff's validator
// both use it, so the gateway and the diff judge a value the same way.
package jsonschemax

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/dlclark/regexp2/v2"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// MatchTimeout bounds one regular expression match (a pattern, a patternProperties
// key or a propertyNames pattern against one string). A match that runs longer stops
// and the value is refused with a PatternTimeout error: a hostile pattern or input
// cannot hold a call. The engine reads a clock that advances every ClockPeriod, so a
// stopped match runs up to about MatchTimeout + 2×ClockPeriod.
const MatchTimeout = 50 * time.Millisecond

// ClockPeriod is how often the engine's timeout clock advances (regexp2's default is
// 100ms, which would let a stopped match run three times the limit).
const ClockPeriod = 10 * time.Millisecond

func init() { regexp2.SetTimeoutCheckPeriod(ClockPeriod) }

// Options are the regexp2 options patterns compile with: ECMAScript syntax and
// semantics in Unicode mode (the "u" flag), as JSON Schema 2020-12 §6.4 asks.
const Options = regexp2.ECMAScript | regexp2.Unicode

// Regexp is a compiled ECMA-262 pattern: its exact RE2 translation when it has one
// (linear time), otherwise regexp2 under MatchTimeout.
type Regexp struct {
	linear *regexp.Regexp
	re     *regexp2.Regexp
	src    string
}

// CompileRegexp compiles an ECMA-262 pattern in Unicode mode; a pattern only the
// legacy (non-Unicode, Annex B) grammar accepts is compiled that way.
//
// Which patterns are valid is decided by ECMA-262's own grammar (ecma.go), not by the
// engine, which also accepts .NET syntax: a pattern with an inline flag group ((?i)),
// a comment group, \a and the like is refused with a message that says what it is.
func CompileRegexp(pat string) (*Regexp, error) {
	var re *regexp2.Regexp
	var err error
	if uerr := checkECMA(pat, true); uerr == nil {
		re, err = regexp2.Compile(pat, Options)
	} else if lerr := checkECMA(pat, false); lerr == nil {
		legacy, lerr := legacyForEngine(pat)
		if lerr != nil {
			return nil, fmt.Errorf("not an ECMA-262 regular expression: %v", lerr)
		}
		re, err = regexp2.Compile(legacy, regexp2.ECMAScript)
	} else {
		return nil, fmt.Errorf("not an ECMA-262 regular expression: %v", uerr)
	}
	if err != nil {
		return nil, fmt.Errorf("not an ECMA-262 regular expression: %v", err)
	}
	re.MatchTimeout = MatchTimeout
	out := &Regexp{re: re, src: pat}
	if re2, why := TranslateToRE2(pat); why == "" {
		out.linear = regexp.MustCompile(re2) // TranslateToRE2 checked it compiles
	}
	return out, nil
}

// Linear reports whether matches run on the RE2 translation (no time limit needed).
func (r *Regexp) Linear() bool { return r.linear != nil }

// PatternTimeout is the panic value MatchString raises when a match exceeds
// MatchTimeout (or the engine's backtracking limit): the schema library's Regexp
// interface has no error result, so the validator's caller recovers it (see Recovered)
// and reports a refusal rather than a guessed match.
type PatternTimeout struct {
	Pattern string
	// Limit is what stopped the match: "time" or "backtracking". The engine's own error
	// is not kept: it quotes the input, which is the caller's data.
	Limit string
}

func (p *PatternTimeout) Error() string {
	return fmt.Sprintf("the pattern %q could not be evaluated within the %s limit", p.Pattern, p.Limit)
}

// Recovered turns a value recovered from a panic into a PatternTimeout when it is one.
func Recovered(r any) (*PatternTimeout, bool) {
	if p, ok := r.(*PatternTimeout); ok {
		return p, true
	}
	if err, ok := r.(error); ok {
		var p *PatternTimeout
		if errors.As(err, &p) {
			return p, true
		}
	}
	return nil, false
}

// MatchString reports whether s contains a match; it panics with *PatternTimeout when
// the match cannot finish in time.
func (r *Regexp) MatchString(s string) bool {
	ok, err := r.Match(s)
	if err != nil {
		limit := "backtracking"
		if isTimeout(err) {
			limit = "time"
		}
		panic(&PatternTimeout{Pattern: r.src, Limit: limit})
	}
	return ok
}

// Match is MatchString with the error returned instead of raised. The engine's clock
// is a coarse one a background goroutine advances; on a starved machine it can jump
// and stop a quick match. A timeout is believed only when the match really ran for
// MatchTimeout by the wall clock; otherwise the match is run again (a few times).
func (r *Regexp) Match(s string) (bool, error) {
	if r.linear != nil {
		return r.linear.MatchString(s), nil
	}
	for try := 0; ; try++ {
		start := time.Now()
		ok, err := r.re.MatchString(s)
		if err == nil || try == 3 || !isTimeout(err) || time.Since(start) >= MatchTimeout {
			return ok, err
		}
	}
}

func isTimeout(err error) bool { return strings.Contains(err.Error(), "timeout") }

func (r *Regexp) String() string { return r.src }

func engine(pat string) (jsonschema.Regexp, error) {
	re, err := CompileRegexp(pat)
	if err != nil {
		return nil, err
	}
	return re, nil
}

// Configure sets toolgate's validator settings on c: the ECMA-262 engine (for pattern,
// patternProperties and format "regex"), format assertion, and the formats of Formats.
func Configure(c *jsonschema.Compiler) {
	c.UseRegexpEngine(engine)
	c.AssertFormat()
	for _, f := range Formats() {
		c.RegisterFormat(f)
	}
}
