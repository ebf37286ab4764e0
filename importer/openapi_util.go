package importer

import "strings"

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
