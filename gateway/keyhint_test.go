package gateway

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/toolgate/toolgate/contract"
)

// TestKeyHintNamesTheChosenVersionsArgument: a rollout can serve a version
// other than the registry's newest (a rollback, a pin, a canary's
// candidate), and versions may name their key argument differently. The
// hint a model gets when its call had no key names the argument of the
// version its call chose, not the newest's.
func TestKeyHintNamesTheChosenVersionsArgument(t *testing.T) {
	t.Parallel()
	version := func(v, keyArg string) []byte {
		return []byte(`{"tool_id":"ops.send","version":"` + v + `","name":"send","description":"Send a message.","effect":"mutating",
  "parameters":{"type":"object","properties":{
    "to":{"type":"string","description":"The recipient."},
    "` + keyArg + `":{"type":"string","minLength":8,"maxLength":255,"x-idempotency-key":true,"description":"One per intended send."}},
  "required":["to"]},
  "result":{"type":"object"}}`)
	}
	reg, err := contract.LoadFS(fstest.MapFS{
		"ops.send/schemas/v1.0.0.json": {Data: version("1.0.0", "request_id")},
		"ops.send/schemas/v2.0.0.json": {Data: version("2.0.0", "dedupe_id")},
	})
	if err != nil {
		t.Fatal(err)
	}
	tool := reg.Tool("ops.send")
	if d := tool.Default(); d == nil || d.Version != "2.0.0" {
		t.Fatalf("the registry's default is %v, want 2.0.0", d)
	}
	for _, c := range []struct{ version, want string }{
		{"1.0.0", "request_id"}, // the call chose the older version
		{"2.0.0", "dedupe_id"},
		{"", "dedupe_id"}, // the call chose none: the tool's default
		{"9.9.9", "dedupe_id"},
	} {
		if got := keyArgument(tool, c.version); got != c.want {
			t.Errorf("keyArgument(%q) = %q, want %q", c.version, got, c.want)
		}
		for name, hint := range map[string]string{"provider": providerKeyHint(tool, c.version), "mcp": mcpKeyHint(tool, c.version)} {
			if !strings.Contains(hint, `"`+c.want+`"`) {
				t.Errorf("%s hint for a call of %q names no %q: %s", name, c.version, c.want, hint)
			}
		}
	}
}
