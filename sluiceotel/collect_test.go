package sluiceotel_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// newReader returns a meter provider read by hand: nothing is collected
// unless the test calls collect.
func newReader(t testing.TB) (*sdkmetric.MeterProvider, *sdkmetric.ManualReader) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	return mp, reader
}

// collect collects once and returns every data point as a line, sorted:
// "kind name{k=v,...} value", where kind is counter (a monotonic sum),
// updown (a sum that may fall) or gauge. Only sluice's metrics are kept.
func collect(t testing.TB, reader *sdkmetric.ManualReader) []string {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatalf("Collect: %v", err)
	}
	var lines []string
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			lines = append(lines, points(m)...)
		}
	}
	slices.Sort(lines)
	return lines
}

func points(m metricdata.Metrics) []string {
	var lines []string
	line := func(kind string, set attribute.Set, v int64) {
		lines = append(lines, fmt.Sprintf("%s %s{%s} %d", kind, m.Name, labels(set), v))
	}
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		kind := "updown"
		if d.IsMonotonic {
			kind = "counter"
		}
		if d.Temporality != metricdata.CumulativeTemporality {
			kind += "(delta)"
		}
		for _, p := range d.DataPoints {
			line(kind, p.Attributes, p.Value)
		}
	case metricdata.Gauge[int64]:
		for _, p := range d.DataPoints {
			line("gauge", p.Attributes, p.Value)
		}
	default:
		lines = append(lines, fmt.Sprintf("unexpected %T for %s", m.Data, m.Name))
	}
	return lines
}

func labels(set attribute.Set) string {
	var kv []string
	for _, a := range set.ToSlice() {
		kv = append(kv, string(a.Key)+"="+a.Value.String())
	}
	return strings.Join(kv, ",")
}

// assertLines fails unless got is want, line for line.
func assertLines(t *testing.T, got []string, want ...string) {
	t.Helper()
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("collected:\n\t%s\nwant:\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
}
