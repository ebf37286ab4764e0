package gateway_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/gateway/gatewaytest"
	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/internal/testrig"
	"github.com/toolgate/toolgate/invoke"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/ledger/postgres"
	"github.com/toolgate/toolgate/toolcall"
)

// TestMeasureJoinAcrossReplicas measures (TOOLGATE_MEASURE_JOIN=1, a real
// PostgreSQL) how long after replica A answers a call replica B answers
// the duplicate that joined it, with B's joins woken by A's NOTIFY
// (ledger.Wakeups) and without (polling every 50ms). It prints a table; it
// asserts nothing about time.
func TestMeasureJoinAcrossReplicas(t *testing.T) {
	if os.Getenv("TOOLGATE_MEASURE_JOIN") == "" {
		t.Skip("a measurement: set TOOLGATE_MEASURE_JOIN=1 (and TOOLGATE_TEST_POSTGRES)")
	}
	const samples = 40
	rows := []string{}
	for _, wake := range []bool{false, true} {
		dsn, _ := pgtest.Schema(t)
		d := newHeldDownstream(t)
		replica := func(owner string, wakeups bool) (string, *ledger.Service) {
			st, err := postgres.Open(context.Background(), postgres.Config{DSN: dsn, MaxConns: 4})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			svc := &ledger.Service{Store: st, Lease: 30 * time.Second, Owner: owner}
			srv, err := gatewaytest.New(gatewaytest.Config{Registry: testrig.Registry(t), Invoker: &invoke.Client{}, Ledger: svc,
				Bindings: map[string]invoke.Binding{"refund.create_request": {URL: d.url, Timeout: 30 * time.Second}}, JoinTimeout: 10 * time.Second,
				Logger: testrig.Logger(t)})
			if err != nil {
				t.Fatal(err)
			}
			ts := httptest.NewServer(srv)
			t.Cleanup(ts.Close)
			if wakeups {
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() { defer close(done); (&ledger.Wakeups{Service: svc, Errorf: t.Errorf}).Run(ctx) }()
				t.Cleanup(func() { cancel(); <-done })
			}
			return ts.URL, svc
		}
		aURL, _ := replica("replica-a", false)
		bURL, bSvc := replica("replica-b", wake)
		post := func(url, key string) time.Time {
			req, _ := http.NewRequest("POST", url+"/v1/tools/refund.create_request/calls",
				strings.NewReader(`{"arguments":{"order_id":"ord_123","reason_code":"customer_request","approval_channel":"chat"}}`))
			req.Header.Set("Idempotency-Key", key)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return time.Now()
			}
			resp.Body.Close()
			at := time.Now()
			if resp.StatusCode != 201 {
				t.Errorf("%s: %d", url, resp.StatusCode)
			}
			return at
		}
		var lat []time.Duration
		for i := -5; i < samples; i++ { // five to warm up (LISTEN connects in the background)
			key := fmt.Sprintf("join-measure-%v-%04d", wake, i+5)
			release := d.hold()
			aDone, bDone := make(chan time.Time, 1), make(chan time.Time, 1)
			go func() { aDone <- post(aURL, key) }()
			<-d.arrived
			go func() { bDone <- post(bURL, key) }()
			for bSvc.Waiting(toolcall.DefaultTenant, key) != 1 {
				time.Sleep(time.Millisecond)
			}
			release()
			ta, tb := <-aDone, <-bDone
			if i >= 0 {
				lat = append(lat, tb.Sub(ta))
			}
		}
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		var sum time.Duration
		for _, l := range lat {
			sum += l
		}
		name := "polling (50ms)"
		if wake {
			name = "NOTIFY wake-ups"
		}
		rows = append(rows, fmt.Sprintf("| %s | %d | %.1f | %.1f | %.1f | %.1f |", name, len(lat),
			ms(lat[len(lat)/2]), ms(sum/time.Duration(len(lat))), ms(lat[len(lat)*9/10]), ms(lat[len(lat)-1])))
	}
	t.Logf("\n| B's join answered after A's answer | samples | p50 ms | mean ms | p90 ms | max ms |\n| --- | --- | --- | --- | --- | --- |\n%s", strings.Join(rows, "\n"))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
