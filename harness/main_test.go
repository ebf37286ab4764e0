package harness

import (
	"os"
	"testing"

	"github.com/toolgate/toolgate/internal/pgtest"
)

// The harness's tests wait on crashes, partitions, failovers and leases far
// more than they compute: four run at once.
func TestMain(m *testing.M) {
	pgtest.WaitBound(4)
	os.Exit(m.Run())
}
