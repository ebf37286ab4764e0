package pgtest

import "testing"

func TestWithParam(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, dsn, key, value, want string
	}{
		{"url without query", "postgres://u:p@h:5432/db", "search_path", "s1", "postgres://u:p@h:5432/db?search_path=s1"},
		{"url with query", "postgres://u@h/db?sslmode=disable", "search_path", "s1", "postgres://u@h/db?search_path=s1&sslmode=disable"},
		{"url replaces", "postgresql://h/db?port=1", "port", "2", "postgresql://h/db?port=2"},
		{"keyword/value", "host=h dbname=db", "search_path", "s1", "host=h dbname=db search_path='s1'"},
		{"keyword/value quoting", "host=h", "application_name", `it's\`, `host=h application_name='it\'s\\'`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := WithParam(tt.dsn, tt.key, tt.value); got != tt.want {
				t.Fatalf("WithParam(%q, %q, %q) = %q, want %q", tt.dsn, tt.key, tt.value, got, tt.want)
			}
		})
	}
}
