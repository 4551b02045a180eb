package sluiceprom_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/keyed"
	"github.com/sluicehq/sluice/permits"
	"github.com/sluicehq/sluice/sluiceprom"
)

// waitText is the histogram of one Acquire granted at once and three
// queued behind a 10/s limit, which wait 100, 200 and 300 ms: cumulative
// buckets of WaitHistogram's 33 bounds in seconds (1µs doubling to
// 4294.967296s), the sum in seconds, the count.
const waitText = `
# HELP sluice_limiter_wait_seconds Time each granted Acquire waited, 0 for one granted at once.
# TYPE sluice_limiter_wait_seconds histogram
sluice_limiter_wait_seconds_bucket{algorithm="GCRA",name="api",le="1e-06"} 1
sluice_limiter_wait_seconds_bucket{algorithm="GCRA",name="api",le="2e-06"} 1
sluice_limiter_wait_seconds_bucket{algorithm="GCRA",name="api",le="4e-06"} 1
sluice_limiter_wait_seconds_bucket{algorithm="GCRA",name="api",le="8e-06"} 1
sluice_limiter_wait_seconds_bucket{algorithm="GCRA",name="api",le="1.6e-05"} 1
sluice_limiter_wait_seconds_bucket{algorithm="GCRA",name="api",le="3.2e-05"} 1
sluice_limiter_wait_seconds_bucket{algorithm="GCRA",name="api",le="6.4e-05"} 1
sluice_limiter_wait_seconds_bucket{algorithm="GCRA",name="api",le="0.000128"} 1
sluice_limiter_wait_seconds_bucket{algorithm="GCRA",name="api",le="0.000256"} 1
sluice_limiter_wait_seconds_bucket{algorithm="GCRA",name="api",le="0.000512"} 1
sluice_limiter_wait_seconds_bucket{algorithm="GCRA",name="api",le="0.001024"} 1
sluice_limiter_wait_seconds_bucket{algorithm="GCRA",name="api",le="0.002048"} 1
sluice_limiter_wait_seconds_bucket{algorithm="GCRA",name="api",le="0.004096"} 1
sluice_limiter_wait_seconds_bucket{algorithm="GCRA",name="api",le="0.008192"} 1
sluice_limiter_wait_seconds_bucket{algorithm="GCRA",name="api",le="0.016384"} 1
sluice_limiter_wait_seconds_bucket{algorithm="GCRA",name="api",le="0.032768"} 1
sluice_limiter_wait_seconds_bucket{algorithm="GCRA",name="api",le="0.065536"} 1
sluice_limiter_wait_seconds_bucket{algorithm="GCRA",name="api",le="0.131072"} 2
sluice_limiter_wait_seconds_bucket{algorithm="GCRA",name="api",le="0.262144"} 3
sluice_limiter_wait_seconds_bucket{algorithm="GCRA",name="api",le="0.524288"} 4
sluice_limiter_wait_seconds_bucket{algorithm="GCRA",name="api",le="1.048576"} 4
sluice_limiter_wait_seconds_bucket{algorithm="GCRA",name="api",le="2.097152"} 4
sluice_limiter_wait_seconds_bucket{algorithm="GCRA",name="api",le="4.194304"} 4
sluice_limiter_wait_seconds_bucket{algorithm="GCRA",name="api",le="8.388608"} 4
sluice_limiter_wait_seconds_bucket{algorithm="GCRA",name="api",le="16.777216"} 4
sluice_limiter_wait_seconds_bucket{algorithm="GCRA",name="api",le="33.554432"} 4
sluice_limiter_wait_seconds_bucket{algorithm="GCRA",name="api",le="67.108864"} 4
sluice_limiter_wait_seconds_bucket{algorithm="GCRA",name="api",le="134.217728"} 4
sluice_limiter_wait_seconds_bucket{algorithm="GCRA",name="api",le="268.435456"} 4
sluice_limiter_wait_seconds_bucket{algorithm="GCRA",name="api",le="536.870912"} 4
sluice_limiter_wait_seconds_bucket{algorithm="GCRA",name="api",le="1073.741824"} 4
sluice_limiter_wait_seconds_bucket{algorithm="GCRA",name="api",le="2147.483648"} 4
sluice_limiter_wait_seconds_bucket{algorithm="GCRA",name="api",le="4294.967296"} 4
sluice_limiter_wait_seconds_bucket{algorithm="GCRA",name="api",le="+Inf"} 4
sluice_limiter_wait_seconds_sum{algorithm="GCRA",name="api"} 0.6
sluice_limiter_wait_seconds_count{algorithm="GCRA",name="api"} 4
`

// A scrape reports the limiter's waits as a Prometheus histogram with the
// source's labels: in virtual time, one Acquire granted at once and three
// queued behind a 10/s limit, waiting 100, 200 and 300 ms.
func TestAScrapeReportsTheWaitsAsAHistogram(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gcra, err := algorithms.NewGCRA(algorithms.PerSecond(10), 1)
		must(t, err)
		var h permits.WaitHistogram
		lim := actor.MustNew(gcra, actor.WithName("api"), actor.WithObserver(&h))
		defer lim.Close()
		c, err := sluiceprom.NewCollector(sluiceprom.Limiter("api", lim.Stats,
			sluiceprom.Algorithm("GCRA"), sluiceprom.Waits(&h)))
		must(t, err)

		_, err = lim.Acquire(t.Context(), 1) // at once: a wait of 0
		must(t, err)
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() { _, _ = lim.Acquire(context.Background(), 1) })
			synctest.Wait() // queued in this order, for t0+100, 200, 300 ms
		}
		wg.Wait()
		compare(t, c, waitText, "sluice_limiter_wait_seconds")
	})
}

// Waits(nil) is a configuration error, for every kind of limiter source.
func TestWaitsOfNilIsAConfigurationError(t *testing.T) {
	for name, s := range map[string]sluiceprom.Source{
		"limiter": sluiceprom.Limiter("api", ok0, sluiceprom.Waits(nil)),
		"keyed":   sluiceprom.Keyed("api", func() keyed.Stats { return keyed.Stats{} }, sluiceprom.Waits(nil)),
		"pool":    sluiceprom.Pool("api", func() actor.PoolStats { return actor.PoolStats{} }, sluiceprom.Waits(nil)),
	} {
		if _, err := sluiceprom.NewCollector(s); !errors.Is(err, permits.ErrInvalidConfig) {
			t.Errorf("%s: got %v, want an error matching ErrInvalidConfig", name, err)
		}
	}
}
