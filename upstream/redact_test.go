package upstream

import "testing"

func TestRedactURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"http://127.0.0.1:7070/mcp":                  "http://127.0.0.1:7070/mcp",
		"https://bot:s3cret@crm.example/mcp":         "https://crm.example/mcp",
		"https://crm.example/mcp?api_key=s3cret&x=1": "https://crm.example/mcp?…",
		"https://u:p@crm.example?token=s3cret#frag":  "https://crm.example?…",
		"https://crm.example/mcp#frag":               "https://crm.example/mcp",
		"https://crm.example/a@b/mcp":                "https://crm.example/a@b/mcp",
		"not a url":                                  "not a url",
	} {
		if got := redactURL(in); got != want {
			t.Errorf("redactURL(%q) = %q, want %q", in, got, want)
		}
	}
}
