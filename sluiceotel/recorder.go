package sluiceotel

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/sluicehq/sluice/permits"
)

// A WaitRecorder is a permits.Observer that records each wait into a
// synchronous OpenTelemetry histogram, sluice.limiter.wait.duration in
// seconds, with WaitBounds as its buckets and the limiter's attributes.
// Give it to the limiter: actor.WithObserver(rec), keyed.WithObserver(rec).
//
// OpenTelemetry has no asynchronous histogram, so the SDK aggregates each
// Record as it is made: it costs an order of magnitude more than a
// permits.WaitHistogram per granted Acquire (BenchmarkWaited; the figures
// are in docs/observability.md). It needs only the metric API; where you make the
// SDK's readers, WaitProducer reads a WaitHistogram at collection time
// instead and costs nothing more on the hot path.
//
// It is safe for concurrent use.
type WaitRecorder struct {
	hist metric.Float64Histogram
	opts []metric.RecordOption // the attributes, as one set made once
}

var _ permits.Observer = (*WaitRecorder)(nil)

// NewWaitRecorder makes the histogram on meter for the limiter named name
// (the sluice.limiter.name attribute; Algorithm sets the other). It fails,
// matching permits.ErrInvalidConfig, for a nil meter or an empty name; an
// error of the meter is returned as it is.
func NewWaitRecorder(meter metric.Meter, name string, opts ...SourceOption) (*WaitRecorder, error) {
	if meter == nil {
		return nil, invalid("NewWaitRecorder needs a meter, got nil")
	}
	set, err := waitSource(name, opts)
	if err != nil {
		return nil, err
	}
	hist, err := meter.Float64Histogram(waitName, metric.WithUnit(waitUnit), metric.WithDescription(waitDesc),
		metric.WithExplicitBucketBoundaries(WaitBounds()...))
	if err != nil {
		return nil, err
	}
	return &WaitRecorder{hist: hist, opts: []metric.RecordOption{metric.WithAttributeSet(set)}}, nil
}

// Waited records d in seconds (a negative d as 0).
func (r *WaitRecorder) Waited(d time.Duration) {
	r.hist.Record(context.Background(), max(d, 0).Seconds(), r.opts...)
}
