package sluiceotel

import (
	"go.opentelemetry.io/otel/metric"

	"github.com/sluicehq/sluice/internal/metricsrc"
)

// instruments are the asynchronous instruments of one Registration, one
// per metric of internal/metricsrc (its names follow OpenTelemetry's
// conventions: dotted lower case, a namespace per kind of source, a unit
// in braces for counts of things), found by name when a source binds.
type instruments struct {
	byName map[string]metric.Int64Observable
}

// newInstruments makes the instruments on meter and returns them with the
// list RegisterCallback needs.
func newInstruments(meter metric.Meter) (*instruments, []metric.Observable, error) {
	in := &instruments{byName: map[string]metric.Int64Observable{}}
	var all []metric.Observable
	for _, m := range metricsrc.All() {
		i, err := newInstrument(meter, m)
		if err != nil {
			return nil, nil, err
		}
		in.byName[m.Name] = i
		all = append(all, i)
	}
	return in, all, nil
}

func newInstrument(meter metric.Meter, m metricsrc.Metric) (metric.Int64Observable, error) {
	unit, desc := metric.WithUnit(m.Unit), metric.WithDescription(m.Desc)
	switch m.Instrument {
	case metricsrc.Counter:
		return meter.Int64ObservableCounter(m.Name, unit, desc)
	case metricsrc.UpDown:
		return meter.Int64ObservableUpDownCounter(m.Name, unit, desc)
	default:
		return meter.Int64ObservableGauge(m.Name, unit, desc)
	}
}
