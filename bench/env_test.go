package bench

import (
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// failingCollector is a collector whose scrape fails, as the gateway's
// toolgate_actions does when counting the ledger times out.
type failingCollector struct{ desc *prometheus.Desc }

func (c failingCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }
func (c failingCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.NewInvalidMetric(c.desc, errors.New("context deadline exceeded"))
}

// The join count survives another collector failing in the same scrape.
func TestJoinsWithFailingCollector(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	joins := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toolgate_joins_total"}, []string{"tool_id"})
	joins.WithLabelValues("a").Add(5)
	joins.WithLabelValues("b").Add(2)
	reg.MustRegister(joins, failingCollector{prometheus.NewDesc("toolgate_actions", "", []string{"state"}, nil)})
	if _, err := reg.Gather(); err == nil {
		t.Fatal("test setup: the scrape did not fail")
	}
	if got := (&gw{prom: reg}).joins(); got != 7 {
		t.Errorf("joins %d, want 7", got)
	}
}
