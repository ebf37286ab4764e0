package pgtest

import (
	"os/exec"
	"syscall"
	"testing"
	"time"
)

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

func TestChildren(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("sh", "-c", "sleep 30 & sleep 30 & wait")
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var kids []int
	for deadline := time.Now().Add(5 * time.Second); len(kids) < 2 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		kids = children(cmd.Process.Pid)
	}
	if len(kids) != 2 {
		t.Fatalf("children(%d) = %v, want the two sleeps", cmd.Process.Pid, kids)
	}
	for _, k := range kids {
		syscall.Kill(k, syscall.SIGKILL)
	}
}
