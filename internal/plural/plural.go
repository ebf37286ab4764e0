// Package plural writes counts with the noun in the right number, so no
// message says "1 released versions" or "2 synchronous standby".
package plural

import "strconv"

// N returns n followed by one when n is 1 (or -1) and by many otherwise:
// N(1, "day", "days") is "1 day", N(0, "day", "days") is "0 days".
func N(n int, one, many string) string {
	if n == 1 || n == -1 {
		return strconv.Itoa(n) + " " + one
	}
	return strconv.Itoa(n) + " " + many
}

// S is N for nouns whose plural adds an s: S(2, "tool") is "2 tools".
func S(n int, noun string) string { return N(n, noun, noun+"s") }
