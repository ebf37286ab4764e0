package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestDemo runs the whole demo, as the README's first command does, and checks
// that every scenario came out as it says.
func TestDemo(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	code := run(context.Background(), env{Args: []string{"demo"}, Stdout: &out, Stderr: &errb})
	if code != exitOK {
		t.Fatalf("demo exited %d\n%s\n%s", code, out.String(), errb.String())
	}
	for _, want := range []string{
		"7 of 7 scenarios came out as told",
		"the sandbox applied 4 refunds for 4 intended actions",
		"error at /order_id",
		"error at /amount_minor",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out.String())
		}
	}
}
