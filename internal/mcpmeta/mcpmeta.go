// Package mcpmeta holds MCP's naming rules for _meta keys, which config
// applies to a binding's mcp.idempotency_meta at load time and upstream to
// the key it sends. It imports nothing of toolgate.
package mcpmeta

import (
	"fmt"
	"regexp"
	"strings"
)

var (
	labelRE = regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9-]*[A-Za-z0-9])?$`)
	nameRE  = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$`)
)

// CheckKey holds a _meta key to MCP's naming rules: an optional prefix of
// dot-separated labels (each starting with a letter and ending with a letter
// or digit) ending in "/", then a name that starts and ends with a letter or
// digit; a prefix with a label "mcp" or "modelcontextprotocol" followed by
// another label is reserved for MCP. It returns what is wrong, "" when
// nothing is.
func CheckKey(key string) string {
	prefix, name := "", key
	if i := strings.LastIndexByte(key, '/'); i >= 0 {
		prefix, name = key[:i], key[i+1:]
		if prefix == "" {
			return "an empty prefix before \"/\""
		}
		labels := strings.Split(prefix, ".")
		for i, l := range labels {
			if !labelRE.MatchString(l) {
				return fmt.Sprintf("prefix label %q must start with a letter, end with a letter or digit and hold only letters, digits and hyphens", l)
			}
			if (l == "mcp" || l == "modelcontextprotocol") && i < len(labels)-1 {
				return fmt.Sprintf("prefix %q is reserved for MCP itself", prefix+"/")
			}
		}
	}
	if !nameRE.MatchString(name) {
		return "the name must start and end with a letter or digit and hold only letters, digits, hyphens, underscores and dots"
	}
	return ""
}
