package sluiceotel_test

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/permits"
	"github.com/sluicehq/sluice/sluiceotel"
)

// queueThree makes, at t0 of a bubble, a limiter of 4 per second with
// burst 1 that tells obs its waits, and runs its timeline: one Acquire
// granted at once, then three queued, granted 250, 500 and 750 ms after
// they arrived (sums exact in binary, whatever the order of the adds).
func queueThree(t *testing.T, obs permits.Observer) {
	t.Helper()
	gcra, err := algorithms.NewGCRA(algorithms.PerSecond(4), 1)
	if err != nil {
		t.Fatal(err)
	}
	lim := actor.MustNew(gcra, actor.WithName("api"), actor.WithObserver(obs))
	defer lim.Close()
	if _, err := lim.Acquire(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() { _, _ = lim.Acquire(context.Background(), 1) })
		synctest.Wait() // queued in this order
	}
	wg.Wait()
}

// wantThree is queueThree's histogram: 0 in bucket 0, 250 ms ≤ 2^18 µs,
// 500 ms ≤ 2^19 µs, 750 ms ≤ 2^20 µs.
func wantThree() []uint64 {
	want := make([]uint64, permits.WaitBuckets)
	want[0], want[18], want[19], want[20] = 1, 1, 1, 1
	return want
}

// waitPoint collects once and returns the one data point of
// sluice.limiter.wait.duration, with its unit.
func waitPoint(t *testing.T, reader *sdkmetric.ManualReader) (metricdata.HistogramDataPoint[float64], string) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if h, ok := m.Data.(metricdata.Histogram[float64]); ok && m.Name == "sluice.limiter.wait.duration" {
				if len(h.DataPoints) != 1 || h.Temporality != metricdata.CumulativeTemporality {
					t.Fatalf("%d points, %v; want 1, cumulative", len(h.DataPoints), h.Temporality)
				}
				return h.DataPoints[0], m.Unit
			}
		}
	}
	t.Fatal("no sluice.limiter.wait.duration histogram collected")
	return metricdata.HistogramDataPoint[float64]{}, ""
}

func assertWaits(t *testing.T, p metricdata.HistogramDataPoint[float64], unit string, want []uint64, sum float64) {
	t.Helper()
	const attrs = "sluice.limiter.algorithm=GCRA,sluice.limiter.name=api"
	if unit != "s" || labels(p.Attributes) != attrs {
		t.Errorf("unit %q, attributes %s; want s, %s", unit, labels(p.Attributes), attrs)
	}
	if !equal(p.Bounds, sluiceotel.WaitBounds()) || !equal(p.BucketCounts, want) {
		t.Errorf("bounds %v counts %v; want %v, %v", p.Bounds, p.BucketCounts, sluiceotel.WaitBounds(), want)
	}
	var n uint64
	for _, c := range want {
		n += c
	}
	if p.Count != n || p.Sum != sum {
		t.Errorf("count %d, sum %v; want %d, %v", p.Count, p.Sum, n, sum)
	}
}

func equal[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A WaitRecorder records each granted Acquire's wait in seconds into
// WaitHistogram's buckets, with the limiter's attributes.
func TestAWaitRecorderRecordsEachWaitInTheHistogramsBuckets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mp, reader := newReader(t)
		rec, err := sluiceotel.NewWaitRecorder(mp.Meter("test"), "api", sluiceotel.Algorithm("GCRA"))
		if err != nil {
			t.Fatal(err)
		}
		queueThree(t, rec)
		p, unit := waitPoint(t, reader)
		assertWaits(t, p, unit, wantThree(), 1.5)
	})
}

// A WaitProducer reads the WaitHistogram when the reader collects: the
// same histogram, its series started when the producer was made.
func TestAWaitProducerReadsTheHistogramAtCollection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		var h permits.WaitHistogram
		p, err := sluiceotel.NewWaitProducer(sluiceotel.Waits("api", &h, sluiceotel.Algorithm("GCRA")))
		if err != nil {
			t.Fatal(err)
		}
		reader := sdkmetric.NewManualReader(sdkmetric.WithProducer(p))
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
		defer mp.Shutdown(context.Background())
		queueThree(t, &h)
		point, unit := waitPoint(t, reader)
		assertWaits(t, point, unit, wantThree(), 1.5)
		if !point.StartTime.Equal(t0) || !point.Time.Equal(t0.Add(750*time.Millisecond)) {
			t.Errorf("start %v, time %v; want t0, t0+750ms", point.StartTime.Sub(t0), point.Time.Sub(t0))
		}
	})
}

// The recorder puts every wait in the bucket WaitHistogram counts it in,
// bounds included: each bound, a nanosecond past it, negative and huge
// waits.
func TestTheRecorderAndTheWaitHistogramAgreeOnEveryBucket(t *testing.T) {
	mp, reader := newReader(t)
	rec, err := sluiceotel.NewWaitRecorder(mp.Meter("test"), "api", sluiceotel.Algorithm("GCRA"))
	if err != nil {
		t.Fatal(err)
	}
	var h permits.WaitHistogram
	waits := []time.Duration{-time.Second, 0, 1, math.MaxInt64}
	for i := range permits.WaitBuckets - 1 {
		waits = append(waits, time.Microsecond<<i, time.Microsecond<<i+1, time.Microsecond<<i-1)
	}
	for _, d := range waits {
		rec.Waited(d)
		h.Waited(d)
	}
	p, _ := waitPoint(t, reader)
	s := h.Snapshot()
	if !equal(p.BucketCounts, s.Counts[:]) {
		t.Errorf("recorded %v\nWaitHistogram %v", p.BucketCounts, s.Counts)
	}
}

// Bad input is an error matching permits.ErrInvalidConfig.
func TestBadWaitSourcesAreConfigurationErrors(t *testing.T) {
	mp, _ := newReader(t)
	var h permits.WaitHistogram
	for name, err := range map[string]error{
		"a recorder without a meter": second(sluiceotel.NewWaitRecorder(nil, "api")),
		"a recorder without a name":  second(sluiceotel.NewWaitRecorder(mp.Meter("test"), "")),
		"no producer sources":        second(sluiceotel.NewWaitProducer()),
		"a nil histogram":            second(sluiceotel.NewWaitProducer(sluiceotel.Waits("api", nil))),
		"a source without a name":    second(sluiceotel.NewWaitProducer(sluiceotel.Waits("", &h))),
		"a zero WaitSource":          second(sluiceotel.NewWaitProducer(sluiceotel.WaitSource{})),
		"two sources of one name": second(sluiceotel.NewWaitProducer(
			sluiceotel.Waits("api", &h), sluiceotel.Waits("api", new(permits.WaitHistogram)))),
	} {
		if !errors.Is(err, permits.ErrInvalidConfig) {
			t.Errorf("%s: got %v, want an error matching ErrInvalidConfig", name, err)
		}
	}
}

func second[T any](_ T, err error) error { return err }
