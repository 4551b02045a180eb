package sluiceotel_test

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/sluicehq/sluice/breaker"
	"github.com/sluicehq/sluice/sluiceotel"
)

// Transitions by from and to: Register counts them all (from the
// Snapshot); a counter of your own, fed by the breaker's hook, splits
// them by state. A storm that outruns the hook shows in Dropped, and only
// the Snapshot's count includes those.
func Example_breakerTransitionsByState() {
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer provider.Shutdown(context.Background())
	meter := provider.Meter("example")

	transitions, err := meter.Int64Counter("myservice.breaker.transitions", metric.WithUnit("{transition}"))
	if err != nil {
		panic(err)
	}
	br, err := breaker.New(breaker.WithName("upstream"), breaker.WithOnTransition(func(t breaker.Transition) {
		transitions.Add(context.Background(), 1, metric.WithAttributes(
			sluiceotel.BreakerNameKey.String(t.Name),
			attribute.String("from", t.From.String()), attribute.String("to", t.To.String())))
	}))
	if err != nil {
		panic(err)
	}

	br.ForceOpen() // closed -> open
	br.Reset()     // open -> closed
	br.ForceOpen() // closed -> open

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		panic(err)
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		for _, p := range m.Data.(metricdata.Sum[int64]).DataPoints {
			from, _ := p.Attributes.Value("from")
			to, _ := p.Attributes.Value("to")
			fmt.Printf("%s -> %s: %d\n", from.AsString(), to.AsString(), p.Value)
		}
	}
	fmt.Println("all:", br.Snapshot().Transitions)
	// Unordered output:
	// closed -> open: 2
	// open -> closed: 1
	// all: 3
}
