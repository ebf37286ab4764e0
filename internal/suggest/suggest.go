// Package suggest finds the names a mistyped one was probably meant to be: "requried" is
// "required", "timout" is "timeout", "crm.close_tickets" is "crm.close_ticket". Every
// "did you mean" of toolgate's error messages comes from here, so they agree.
package suggest

import (
	"sort"
	"strings"
)

// Distance is the optimal-string-alignment edit distance between a and b: insertions,
// deletions, substitutions and transpositions of adjacent characters each cost 1. Letters
// that differ only in case cost nothing, so "MaxLength" is 0 away from "maxLength".
func Distance(a, b string) int {
	ra, rb := []rune(strings.ToLower(a)), []rune(strings.ToLower(b))
	if len(ra) == 0 {
		return len(rb)
	}
	if len(rb) == 0 {
		return len(ra)
	}
	// three rows: two back (for transpositions), one back, current
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}

// MaxDistance is how far a name may be from a candidate to be suggested: 1 edit for names
// of up to 4 characters, 2 up to 12, 3 beyond. Short names get few suggestions because
// almost every short word is one or two edits from another.
func MaxDistance(name string) int {
	n := len([]rune(name))
	switch {
	case n <= 4:
		return 1
	case n <= 12:
		return 2
	}
	return 3
}

// Nearest returns the candidates within MaxDistance of name, closest first (ties in the
// candidates' alphabetical order), at most limit of them (limit <= 0: all). A candidate
// equal to name is not a suggestion and is left out.
func Nearest(name string, candidates []string, limit int) []string {
	type scored struct {
		s string
		d int
	}
	maxD := MaxDistance(name)
	var found []scored
	seen := map[string]bool{}
	for _, c := range candidates {
		if c == name || seen[c] {
			continue
		}
		seen[c] = true
		if d := Distance(name, c); d <= maxD {
			found = append(found, scored{c, d})
		}
	}
	sort.Slice(found, func(i, j int) bool {
		if found[i].d != found[j].d {
			return found[i].d < found[j].d
		}
		return found[i].s < found[j].s
	})
	if limit > 0 && len(found) > limit {
		found = found[:limit]
	}
	out := make([]string, len(found))
	for i, f := range found {
		out[i] = f.s
	}
	return out
}

// Best returns the nearest candidate, or "" when none is close enough.
func Best(name string, candidates []string) string {
	if n := Nearest(name, candidates, 1); len(n) > 0 {
		return n[0]
	}
	return ""
}

// DidYouMean formats suggestions as a sentence to append to a message:
// `did you mean "a"?` or `did you mean "a" or "b"?`; "" when there are none.
func DidYouMean(suggestions ...string) string {
	switch len(suggestions) {
	case 0:
		return ""
	case 1:
		return `did you mean "` + suggestions[0] + `"?`
	}
	q := make([]string, len(suggestions))
	for i, s := range suggestions {
		q[i] = `"` + s + `"`
	}
	return "did you mean " + strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1] + "?"
}
