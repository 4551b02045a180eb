package sluiceotel

import (
	"context"

	"github.com/sluicehq/sluice/internal/metricsrc"
	"go.opentelemetry.io/otel/metric"
)

// A Registration is the callback Register made. Unregister removes it.
type Registration struct{ reg metric.Registration }

// Register makes sluice's instruments on meter and one callback that reads
// every source when the meter's reader collects, and never otherwise. It
// fails, matching permits.ErrInvalidConfig, for a nil meter, no sources, a
// source whose function is nil, a limiter without a name, or two sources
// of one kind with one name (whose series would be one): limiters, pools
// and keyed limiters share the sluice.limiter.name attribute, so their
// names must differ; name breakers and budgets apart with their WithName.
// An error of the meter is returned as it is.
//
// A collection calls each source's function once, on the collecting
// goroutine: a limiter's Stats loads a few atomic counters; a breaker's
// Snapshot and a budget's Stats take their lock, as any call does.
func Register(meter metric.Meter, sources ...Source) (*Registration, error) {
	if err := check(meter, sources); err != nil {
		return nil, err
	}
	in, all, err := newInstruments(meter)
	if err != nil {
		return nil, err
	}
	observe := make([]func(metric.Observer), len(sources))
	for i := range sources {
		observe[i] = sources[i].bind(&sources[i], in)
	}
	reg, err := meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		for _, f := range observe {
			f(o)
		}
		return nil
	}, all...)
	if err != nil {
		return nil, err
	}
	return &Registration{reg: reg}, nil
}

// Unregister removes the callback: the sources are no longer read, and
// their series end. A second call does nothing.
func (r *Registration) Unregister() error { return r.reg.Unregister() }

func check(meter metric.Meter, sources []Source) error {
	if meter == nil {
		return invalid("Register needs a meter, got nil")
	}
	ids := make([]metricsrc.Ident, len(sources))
	for i, s := range sources {
		ids[i] = metricsrc.Ident{Kind: s.kind, Name: s.name, Err: s.err, Made: s.bind != nil}
	}
	return metricsrc.Check("sluiceotel", "Register", ids)
}
