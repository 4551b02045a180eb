package sluiceotel_test

import (
	"context"
	"fmt"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/sluiceotel"
)

// A limiter's counters, read by the SDK's reader when it collects. In a
// service the reader is an exporter's (OTLP, Prometheus); nothing runs
// between two collections.
func ExampleRegister() {
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer provider.Shutdown(context.Background())

	gcra, err := algorithms.NewGCRA(algorithms.PerMinute(60), 3)
	if err != nil {
		panic(err)
	}
	lim := actor.MustNew(gcra, actor.WithName("api"))
	defer lim.Close()
	reg, err := sluiceotel.Register(provider.Meter("example"),
		sluiceotel.Limiter("api", lim.Stats, sluiceotel.Algorithm("GCRA")))
	if err != nil {
		panic(err)
	}
	defer reg.Unregister()

	for range 5 {
		lim.Allow() // the burst of 3 is granted, the 2 others refused
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		panic(err)
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if sum, ok := m.Data.(metricdata.Sum[int64]); ok {
			fmt.Printf("%s %d %s\n", m.Name, sum.DataPoints[0].Value, m.Unit)
		}
	}
	// Output:
	// sluice.limiter.granted 3 {permit}
	// sluice.limiter.rejected 2 {request}
	// sluice.limiter.refunded 0 {permit}
	// sluice.limiter.canceled 0 {request}
	// sluice.limiter.waiting 0 {request}
}
