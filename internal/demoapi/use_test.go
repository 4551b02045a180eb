package demoapi_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/sluicehq/sluice/internal/demoapi"
)

// One charge: its estimate from its arrival to its answer, its usage for
// the rest of its window, averaged over the steady part of the run.
func TestQuotaUse(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := demoapi.Config{RPS: 1, TokenLimit: 1000, TokenWindow: time.Second}
	s := demoapi.Stats{
		First: t0, Last: t0.Add(3 * time.Second),
		Charges: []demoapi.Charge{{At: t0.Add(time.Second), Estimate: 1000, Tokens: 500, AnsweredAt: t0.Add(1500 * time.Millisecond)}},
	}
	tokens, requests, steady := demoapi.QuotaUse(s, c)
	assert.Equal(t, 2*time.Second, steady, "from one window after the first arrival to the last")
	assert.InDelta(t, (1000*0.5+500*0.5)/(1000*2), tokens, 1e-9)
	assert.InDelta(t, 0.5, requests, 1e-9)

	// An overload from +2s to +2.5s takes itself and the window after it
	// out of the steady part: [+1s, +2s) is left.
	c.OverloadFor = 500 * time.Millisecond
	s.OverloadFrom, s.OverloadTo = t0.Add(2*time.Second), t0.Add(2500*time.Millisecond)
	tokens, requests, steady = demoapi.QuotaUse(s, c)
	assert.Equal(t, time.Second, steady)
	assert.InDelta(t, 0.75, tokens, 1e-9)
	assert.InDelta(t, 1.0, requests, 1e-9)

	_, _, steady = demoapi.QuotaUse(demoapi.Stats{First: t0, Last: t0}, c)
	assert.Zero(t, steady, "a run shorter than a window has no steady part")
}

func TestPercentileAndGrouped(t *testing.T) {
	assert.Zero(t, demoapi.Percentile(nil, 50))
	d := []time.Duration{3, 1, 2}
	assert.Equal(t, time.Duration(2), demoapi.Percentile(d, 50))
	assert.Equal(t, time.Duration(3), demoapi.Percentile(d, 100))
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", -1234567: "-1,234,567", 1e12: "1,000,000,000,000"} {
		assert.Equal(t, want, demoapi.Grouped(n))
	}
}
