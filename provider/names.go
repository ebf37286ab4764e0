package provider

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// nameRules says which characters and how many a provider allows in a tool name.
type nameRules struct {
	max     int
	allowed func(r rune) bool
}

func alnum(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-'
}

var rulesByFormat = map[string]nameRules{
	FormatOpenAI:          {64, alnum},
	FormatOpenAIResponses: {64, alnum},
	FormatAnthropic:       {64, alnum},
	FormatMCP:             {128, func(r rune) bool { return alnum(r) || r == '.' }},
}

// ExportNames maps each tool id to the name it is exported under. A name the provider
// allows is kept; otherwise every forbidden character becomes "_". A rewritten name that
// is too long or collides with another tool's name is cut and suffixed with "_" and the
// first 8 hex digits of the SHA-256 of the tool id. The result depends only on the set of ids.
func ExportNames(format string, ids []string) map[string]string {
	rules, ok := rulesByFormat[format]
	if !ok {
		rules = rulesByFormat[FormatOpenAI]
	}
	cand := make(map[string]string, len(ids))
	count := map[string]int{}
	for _, id := range ids {
		n := sanitize(id, rules)
		cand[id] = n
		count[n]++
	}
	out := make(map[string]string, len(ids))
	for _, id := range ids {
		n := cand[id]
		switch {
		case len(n) > rules.max:
			n = hashed(n, id, rules.max)
		case n != id && count[n] > 1:
			// a rewritten name that collides yields; an id that needed no rewriting keeps its name
			n = hashed(n, id, rules.max)
		}
		out[id] = n
	}
	return out
}

func sanitize(id string, rules nameRules) string {
	var b strings.Builder
	for _, r := range id {
		if rules.allowed(r) {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "tool"
	}
	return b.String()
}

func hashed(name, id string, max int) string {
	sum := sha256.Sum256([]byte(id))
	suffix := "_" + hex.EncodeToString(sum[:])[:8]
	if len(name) > max-len(suffix) {
		name = name[:max-len(suffix)]
	}
	return name + suffix
}
