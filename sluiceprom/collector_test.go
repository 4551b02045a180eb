package sluiceprom_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/sluiceprom"
)

// limiterText is the exposition of one limiter's five series, in the
// order testutil sorts them.
const limiterText = `
# HELP sluice_limiter_canceled_total Waiters whose context ended while they waited.
# TYPE sluice_limiter_canceled_total counter
sluice_limiter_canceled_total{algorithm="GCRA",name="api"} %d
# HELP sluice_limiter_granted_total Permits granted since the limiter was made.
# TYPE sluice_limiter_granted_total counter
sluice_limiter_granted_total{algorithm="GCRA",name="api"} %d
# HELP sluice_limiter_refunded_total Grants given back unused; also counted in granted.
# TYPE sluice_limiter_refunded_total counter
sluice_limiter_refunded_total{algorithm="GCRA",name="api"} %d
# HELP sluice_limiter_rejected_total Requests refused (ErrRateLimited, or Allow's false).
# TYPE sluice_limiter_rejected_total counter
sluice_limiter_rejected_total{algorithm="GCRA",name="api"} %d
# HELP sluice_limiter_waiting Acquires waiting for their answer now.
# TYPE sluice_limiter_waiting gauge
sluice_limiter_waiting{algorithm="GCRA",name="api"} %d
`

// A scrape reports exactly the counters the limiter kept at that instant:
// a timeline of grants, a refusal, a waiter, its cancellation and a
// refund, scraped twice in virtual time.
func TestAScrapeReportsTheLimitersCountersAtThatInstant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gcra, err := algorithms.NewGCRA(algorithms.PerSecond(1), 2)
		if err != nil {
			t.Fatal(err)
		}
		lim := actor.MustNew(gcra, actor.WithName("api"))
		defer lim.Close()
		c, err := sluiceprom.NewCollector(sluiceprom.Limiter("api", lim.Stats, sluiceprom.Algorithm("GCRA")))
		if err != nil {
			t.Fatal(err)
		}

		lim.Allow()
		lim.Allow()
		lim.Allow() // refused: the burst is 2
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { _, err := lim.Acquire(ctx, 1); done <- err }()
		synctest.Wait() // the waiter is queued for t0+1s
		// In limiterText's order: canceled, granted, refunded, rejected, waiting.
		compare(t, c, fmt.Sprintf(limiterText, 0, 2, 0, 1, 1))

		cancel()
		<-done
		time.Sleep(time.Second) // t0+1s: one unit back
		g, err := lim.TryAcquireGrant(1)
		if err != nil {
			t.Fatal(err)
		}
		lim.Refund(g)
		compare(t, c, fmt.Sprintf(limiterText, 1, 3, 1, 1, 0))
	})
}

// The metrics pass Prometheus's own lint: names, units, _total on
// counters, help texts.
func TestTheMetricsPassPromlint(t *testing.T) {
	c := everySource(t)
	problems, err := testutil.CollectAndLint(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
}

func compare(t *testing.T, c *sluiceprom.Collector, want string, names ...string) {
	t.Helper()
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
}
