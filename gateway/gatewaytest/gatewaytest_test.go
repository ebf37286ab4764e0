package gatewaytest_test

import (
	"reflect"
	"testing"

	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/gateway/gatewaytest"
	"github.com/toolgate/toolgate/toolcall"
)

// TestConfigCoversBoth: a test gateway can set every field of the server's
// Config and of the call service's Config that is set by hand (those New
// derives are listed), with the same type, so a field added to either
// reaches the tests' rig.
func TestConfigCoversBoth(t *testing.T) {
	t.Parallel()
	rig := reflect.TypeFor[gatewaytest.Config]()
	for _, c := range []struct {
		typ     reflect.Type
		derived map[string]bool
	}{
		{reflect.TypeFor[gateway.Config](), map[string]bool{"Calls": true, "Metrics": true}},
		{reflect.TypeFor[toolcall.Config](), map[string]bool{"ProbeState": true, "PromotionApproval": true, "RolloutObserver": true, "OnChange": true}},
	} {
		for i := range c.typ.NumField() {
			f := c.typ.Field(i)
			if c.derived[f.Name] {
				continue
			}
			rf, ok := rig.FieldByName(f.Name)
			if !ok || rf.Type != f.Type {
				t.Errorf("gatewaytest.Config has no field %s %s of %s", f.Name, f.Type, c.typ)
			}
		}
	}
}
