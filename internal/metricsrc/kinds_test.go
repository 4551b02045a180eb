package metricsrc_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sluicehq/sluice/breaker"
	"github.com/sluicehq/sluice/httplimit"
	"github.com/sluicehq/sluice/internal/metricsrc"
	"github.com/sluicehq/sluice/permits"
)

// Every metric has one name in its kind's namespace, a unit, a
// description, and a Prometheus name that only its style changes.
func TestEveryMetricIsNamedOnceInItsKindsNamespace(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range metricsrc.All() {
		assert.False(t, seen[m.Name], "%s twice", m.Name)
		seen[m.Name] = true
		assert.True(t, strings.HasPrefix(m.Name, "sluice."), m.Name)
		assert.NotEmpty(t, m.Unit, m.Name)
		assert.NotEmpty(t, m.Desc, m.Name)
		assert.Equal(t, len(m.Label) == 0, len(m.Values) == 0, "%s: a label has values", m.Name)
		want := strings.ReplaceAll(m.Name, ".", "_")
		if m.Instrument == metricsrc.Counter {
			want += "_total"
		}
		assert.Equal(t, want, m.PromName())
	}
	assert.Len(t, seen, 23, "limiter 5, keys 1, pool 2, breaker 2, budget 4, transport 9, and no other")
}

// A reading split by a label reads each series from its own field.
func TestASplitReadingReadsEachSeriesFromItsField(t *testing.T) {
	st := httplimit.TransportStats{Responses: [6]int64{7, 1, 2, 3, 4, 5},
		PausesStarted: httplimit.PauseCounts{TooManyRequests: 8, ServiceUnavailable: 9, Other: 10}}
	got := map[string][]int64{}
	for _, r := range metricsrc.Transport.Readings {
		for i := range max(len(r.Values), 1) {
			got[r.Name] = append(got[r.Name], r.Read(st, i))
		}
	}
	assert.Equal(t, []int64{1, 2, 3, 4, 5, 7}, got["sluice.transport.responses"], "1xx to 5xx, then other")
	assert.Equal(t, []int64{8, 9, 10}, got["sluice.transport.pauses"])
	state := metricsrc.Breaker.Readings[0]
	for i, want := range []breaker.State{breaker.Closed, breaker.Open, breaker.HalfOpen} {
		assert.Equal(t, want.String(), state.Values[i])
		assert.Equal(t, int64(1), state.Read(breaker.Snapshot{State: want}, i))
	}
}

// A source the caller names needs a name; one named by its value reads
// it once; both need a stats function.
func TestASourceIsNamedByItsCallerOrByItsValue(t *testing.T) {
	name, err := metricsrc.Named("sluiceotel", metricsrc.Breaker, "", func() breaker.Snapshot { return breaker.Snapshot{Name: "api"} })
	assert.NoError(t, err)
	assert.Equal(t, "api", name)
	_, err = metricsrc.Named("sluiceotel", metricsrc.Breaker, "", nil)
	assert.ErrorIs(t, err, permits.ErrInvalidConfig)
	_, err = metricsrc.Named("sluiceotel", metricsrc.Transport, "", func() httplimit.TransportStats { return httplimit.TransportStats{} })
	assert.ErrorIs(t, err, permits.ErrInvalidConfig)
	_, err = metricsrc.Named[permits.Stats]("sluiceprom", metricsrc.Limiter, "api", nil)
	assert.ErrorIs(t, err, permits.ErrInvalidConfig)
	assert.Contains(t, err.Error(), "sluiceprom")
}
