package sluiceotel_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/breaker"
	"github.com/sluicehq/sluice/budget"
	"github.com/sluicehq/sluice/httplimit"
	"github.com/sluicehq/sluice/keyed"
	"github.com/sluicehq/sluice/permits"
	"github.com/sluicehq/sluice/sluiceotel"
)

// docRows returns the rows of docs/observability.md's table of metrics, as
// "name instrument unit", sorted.
func docRows(t *testing.T) []string {
	doc, err := os.ReadFile("../docs/observability.md")
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for line := range strings.Lines(string(doc)) {
		cells := strings.Split(line, "|")
		if !strings.HasPrefix(line, "| `sluice.") || !strings.Contains(cells[2], "Observable") {
			continue // not a row of the table of metrics
		}
		name, instrument, unit := cells[1], cells[2], cells[3]
		rows = append(rows, strings.Join([]string{trim(name), trim(instrument), trim(unit)}, " "))
	}
	slices.Sort(rows)
	return rows
}

func trim(cell string) string { return strings.Trim(strings.TrimSpace(cell), "`") }

// The table in docs/observability.md is what Register makes: every name,
// its instrument and its unit, and no other.
func TestTheDocumentedTableIsWhatRegisterMakes(t *testing.T) {
	mp, reader := newReader(t)
	reg, err := sluiceotel.Register(mp.Meter("test"),
		sluiceotel.Limiter("lim", func() permits.Stats { return permits.Stats{} }),
		sluiceotel.Keyed("keyed", func() keyed.Stats { return keyed.Stats{} }),
		sluiceotel.Pool("pool", func() actor.PoolStats { return actor.PoolStats{} }),
		sluiceotel.Breaker(func() breaker.Snapshot { return breaker.Snapshot{} }),
		sluiceotel.Budget(func() budget.Stats { return budget.Stats{} }),
		sluiceotel.Transport("api", func() httplimit.TransportStats { return httplimit.TransportStats{} }),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Unregister()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(t.Context(), &rm); err != nil {
		t.Fatal(err)
	}
	var made []string
	for _, m := range rm.ScopeMetrics[0].Metrics {
		made = append(made, m.Name+" "+instrument(m.Data)+" "+m.Unit)
	}
	slices.Sort(made)
	if doc := docRows(t); !slices.Equal(made, doc) {
		t.Errorf("Register makes:\n\t%s\ndocs/observability.md says:\n\t%s",
			strings.Join(made, "\n\t"), strings.Join(doc, "\n\t"))
	}
}

// instrument names the asynchronous instrument that makes data like d.
func instrument(d metricdata.Aggregation) string {
	switch d := d.(type) {
	case metricdata.Sum[int64]:
		if d.IsMonotonic {
			return "Int64ObservableCounter"
		}
		return "Int64ObservableUpDownCounter"
	case metricdata.Gauge[int64]:
		return "Int64ObservableGauge"
	}
	return "?"
}

// The histogram's row in docs/observability.md names what a WaitProducer
// and a WaitRecorder make: its name and unit.
func TestTheDocumentedHistogramIsWhatTheWaitSourcesMake(t *testing.T) {
	doc, err := os.ReadFile("../docs/observability.md")
	if err != nil {
		t.Fatal(err)
	}
	var row string
	for line := range strings.Lines(string(doc)) {
		if cells := strings.Split(line, "|"); len(cells) > 5 && strings.Contains(cells[2], "Histogram") {
			row = trim(cells[1]) + " " + trim(cells[3])
		}
	}
	var h permits.WaitHistogram
	p, err := sluiceotel.NewWaitProducer(sluiceotel.Waits("api", &h))
	if err != nil {
		t.Fatal(err)
	}
	mp, reader := newReader(t)
	rec, err := sluiceotel.NewWaitRecorder(mp.Meter("test"), "api")
	if err != nil {
		t.Fatal(err)
	}
	rec.Waited(0) // a synchronous instrument reports nothing until it records
	produced, err := p.Produce(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(t.Context(), &rm); err != nil {
		t.Fatal(err)
	}
	for from, sm := range map[string][]metricdata.ScopeMetrics{"WaitProducer": produced, "WaitRecorder": rm.ScopeMetrics} {
		m := sm[0].Metrics[0]
		if made := m.Name + " " + m.Unit; made != row {
			t.Errorf("%s makes %q; docs/observability.md says %q", from, made, row)
		}
	}
}

// Every attribute a collection carries has one of the exported keys, so
// that code filtering on them (LimiterNameKey, TransportReasonKey...) is
// never out of step with what Register reports.
func TestEveryAttributeKeyIsAnExportedOne(t *testing.T) {
	exported := map[string]bool{}
	for _, k := range []attribute.Key{sluiceotel.LimiterNameKey, sluiceotel.AlgorithmKey, sluiceotel.BreakerNameKey,
		sluiceotel.BreakerStateKey, sluiceotel.BudgetNameKey, sluiceotel.TransportNameKey,
		sluiceotel.TransportReasonKey, sluiceotel.TransportClassKey} {
		exported[string(k)] = true
	}
	mp, reader := newReader(t)
	reg, err := sluiceotel.Register(mp.Meter("test"),
		sluiceotel.Limiter("lim", func() permits.Stats { return permits.Stats{} }, sluiceotel.Algorithm("GCRA")),
		sluiceotel.Breaker(func() breaker.Snapshot { return breaker.Snapshot{} }),
		sluiceotel.Budget(func() budget.Stats { return budget.Stats{} }),
		sluiceotel.Transport("api", func() httplimit.TransportStats { return httplimit.TransportStats{} }),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Unregister()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(t.Context(), &rm); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		for _, line := range points(m) {
			set := line[strings.Index(line, "{")+1 : strings.Index(line, "}")]
			for kv := range strings.SplitSeq(set, ",") {
				key, _, _ := strings.Cut(kv, "=")
				seen[key] = true
				if !exported[key] {
					t.Errorf("%s: attribute %q is not an exported key", m.Name, key)
				}
			}
		}
	}
	if len(seen) != len(exported) {
		t.Errorf("collected the keys %v; exported %v", seen, exported)
	}
}
