package deploy_test

import (
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// PromQL's words that are not metric names: keywords and the label lists
// that follow by, without, on, ignoring, group_left and group_right.
var (
	promqlStrings   = regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|'(?:[^'\\\\]|\\\\.)*'|`[^`]*`")
	promqlMatchers  = regexp.MustCompile(`\{[^{}]*\}`)
	promqlRanges    = regexp.MustCompile(`\[[^\[\]]*\]`)
	promqlGroupings = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)`)
	promqlNumbers   = regexp.MustCompile(`\b(?:0x[0-9a-fA-F]+|[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?(?:ms|[smhdwy])*)\b`)
	promqlIdents    = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*(\s*\()?`)
	promqlKeywords  = []string{"and", "or", "unless", "offset", "bool", "by", "without", "on", "ignoring",
		"group_left", "group_right", "inf", "nan", "Inf", "NaN", "start", "end"}
)

// metricNames returns the metric names an expression selects, sorted: every
// identifier that is not a function or aggregation (followed by "("), a
// keyword, a label (inside {...} or a grouping list), a string or a number.
// A name inside {__name__="..."} is not seen; the checked files use none.
func metricNames(expr string) []string {
	s := promqlStrings.ReplaceAllString(expr, `""`)
	s = promqlMatchers.ReplaceAllString(s, " ")
	s = promqlRanges.ReplaceAllString(s, " ")
	s = promqlGroupings.ReplaceAllString(s, " ")
	s = promqlNumbers.ReplaceAllString(s, " ")
	seen := map[string]bool{}
	for _, m := range promqlIdents.FindAllStringSubmatch(s, -1) {
		word := strings.TrimRight(strings.TrimSuffix(strings.TrimSpace(m[0]), "("), " \t\n")
		if m[1] != "" || slices.Contains(promqlKeywords, word) {
			continue
		}
		seen[word] = true
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func TestMetricNames(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ expr, want string }{
		{`toolgate_ledger_up == 0`, "toolgate_ledger_up"},
		{`sum by (tool_id, code) (rate(toolgate_idempotency_conflicts_total{code!~"a|b",tool_id=~".*"}[5m] offset 15m)) / on (tool_id) group_left sum by (tool_id) (rate(toolgate_calls_total[1h]))`,
			"toolgate_calls_total toolgate_idempotency_conflicts_total"},
		{`histogram_quantile(0.99, sum by (le) (rate(toolgate_call_duration_seconds_bucket{outcome="executed"}[5m])))`, "toolgate_call_duration_seconds_bucket"},
		{`max by (tool_id) (a_gauge) > on (tool_id) max by (tool_id) (b_gauge) * 1.5e3`, "a_gauge b_gauge"},
		{`increase(c_total[1h30m]) > 0 and bool up`, "c_total up"},
		{`label_replace(x, "dst", "$1", "src", "(.*)")`, "x"},
		{`vector(1)`, ""},
		{`sum without (instance) (rate(x:rule:sum[5m]))`, "x:rule:sum"},
	} {
		if got := strings.Join(metricNames(c.expr), " "); got != c.want {
			t.Errorf("metricNames(%s) = %q, want %q", c.expr, got, c.want)
		}
	}
}
