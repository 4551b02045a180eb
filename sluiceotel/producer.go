package sluiceotel

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/sluicehq/sluice/permits"
)

// Scope is the instrumentation scope of what a WaitProducer produces.
const Scope = "github.com/sluicehq/sluice/sluiceotel"

// A WaitProducer reads limiters' permits.WaitHistograms when a reader of
// the OpenTelemetry SDK collects, and returns each as a histogram data
// point of sluice.limiter.wait.duration (seconds, cumulative, WaitBounds
// as its buckets). It is the SDK's answer to the histogram that the metric
// API cannot observe asynchronously: give it to the reader,
//
//	reader := sdkmetric.NewPeriodicReader(exporter, sdkmetric.WithProducer(p))
//
// and the hot path pays only the WaitHistogram's atomic adds. A
// WaitRecorder needs only the API, but the SDK aggregates each of its
// records as it is made. Use one of the two per limiter, not both.
//
// It is safe for concurrent use.
type WaitProducer struct {
	start   time.Time // the series' StartTime
	bounds  []float64
	sources []WaitSource
}

var _ sdkmetric.Producer = (*WaitProducer)(nil)

// A WaitSource is the wait histogram of one limiter, keyed limiter or
// pool, for a WaitProducer. Make one with Waits.
type WaitSource struct {
	name string
	h    *permits.WaitHistogram
	set  attribute.Set
	err  error
}

// Waits is the wait histogram h of the limiter named name: h must be the
// one the limiter was made with (actor.WithObserver(h),
// keyed.WithObserver(h)). Algorithm sets the sluice.limiter.algorithm
// attribute, as for Limiter.
func Waits(name string, h *permits.WaitHistogram, opts ...SourceOption) WaitSource {
	set, err := waitSource(name, opts)
	if err == nil && h == nil {
		err = invalid("limiter %q: Waits needs a histogram, got nil", name)
	}
	return WaitSource{name: name, h: h, set: set, err: err}
}

// NewWaitProducer returns a WaitProducer of sources. It fails, matching
// permits.ErrInvalidConfig, for no sources, a nil histogram, an empty name
// or two sources of one name.
func NewWaitProducer(sources ...WaitSource) (*WaitProducer, error) {
	if len(sources) == 0 {
		return nil, invalid("NewWaitProducer needs at least one source")
	}
	seen := make(map[string]bool, len(sources))
	for _, s := range sources {
		switch {
		case s.err != nil:
			return nil, s.err
		case s.h == nil:
			return nil, invalid("a WaitSource made without Waits")
		case seen[s.name]:
			return nil, invalid("two wait histograms named %q: their series would be one", s.name)
		}
		seen[s.name] = true
	}
	return &WaitProducer{start: time.Now(), bounds: WaitBounds(), sources: sources}, nil
}

// Produce reads every source's histogram once.
func (p *WaitProducer) Produce(context.Context) ([]metricdata.ScopeMetrics, error) {
	now := time.Now()
	points := make([]metricdata.HistogramDataPoint[float64], len(p.sources))
	for i, s := range p.sources {
		snap := s.h.Snapshot()
		points[i] = metricdata.HistogramDataPoint[float64]{
			Attributes: s.set, StartTime: p.start, Time: now,
			Count: snap.Count, Bounds: p.bounds, BucketCounts: snap.Counts[:], Sum: snap.Sum.Seconds(),
		}
	}
	return []metricdata.ScopeMetrics{{
		Scope: instrumentation.Scope{Name: Scope},
		Metrics: []metricdata.Metrics{{Name: waitName, Description: waitDesc, Unit: waitUnit,
			Data: metricdata.Histogram[float64]{Temporality: metricdata.CumulativeTemporality, DataPoints: points}}},
	}}, nil
}
