package sqlite_test

import (
	"path/filepath"
	"testing"
)

// embeddedMigrations is how many migration files the binary carries (their
// numbers need not be contiguous: each branch of the project takes its own).
func embeddedMigrations(t *testing.T) int {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("migration", "*.up.sql"))
	if err != nil || len(files) == 0 {
		t.Fatalf("migration files: %v %v", files, err)
	}
	return len(files)
}
