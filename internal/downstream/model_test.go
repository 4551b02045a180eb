package downstream_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/internal/downstream"
	"github.com/sluicehq/sluice/permits"
)

const ms = time.Millisecond

func fixed(servers, queue int) downstream.Config {
	return downstream.Config{Phases: []downstream.Phase{{Servers: servers, Queue: queue, Service: downstream.Service{Mean: 10 * ms}}}}
}

func static(n int64) downstream.Pool {
	return downstream.Pool{Name: "static", Floor: n, Initial: n, Ceiling: n}
}

func model(t *testing.T, c downstream.Config, p downstream.Pool) *downstream.Model {
	t.Helper()
	m, err := downstream.New(c, p, 10*ms, 1)
	require.NoError(t, err)
	return m
}

func TestPoolShedsAboveItsLimit(t *testing.T) {
	m := model(t, fixed(10, 0), static(2))
	for range 3 {
		m.Arrive(0)
	}
	r := m.Finish(20 * ms)
	require.Equal(t, downstream.PhaseResult{From: 0, To: 20 * ms, Servers: 10, Offered: 3, Served: 2, Shed: 1, P50: 10 * ms, P99: 10 * ms},
		r.Phases[0])
	require.Equal(t, int64(2), r.Bins[0].MaxInFlight)
}

func TestFullQueueRefusesWithOverload(t *testing.T) {
	m := model(t, fixed(1, 1), static(10))
	for range 3 {
		m.Arrive(0)
	}
	r := m.Finish(30 * ms).Phases[0]
	require.Equal(t, [3]int64{2, 0, 1}, [3]int64{r.Served, r.Shed, r.Refused})
	// The queued one waited a whole service before its own.
	require.Equal(t, 20*ms, r.P99)
	require.Equal(t, 10*ms, r.P50)
}

func TestCapacityChangesAtItsInstant(t *testing.T) {
	c := fixed(1, 5)
	c.Phases = append(c.Phases, downstream.Phase{At: 5 * ms, Servers: 3, Queue: 5, Service: downstream.Service{Mean: 10 * ms}})
	m := model(t, c, static(10))
	for range 3 {
		m.Arrive(0)
	}
	r := m.Finish(20 * ms)
	// One served from 0; the two queued start when the servers come, at 5 ms.
	require.Equal(t, int64(3), r.Phases[0].Served)
	require.Equal(t, 15*ms, r.Phases[0].P99)
	require.Equal(t, 3, r.Phases[1].Servers)
}

func TestArrivalsCountInTheirPhase(t *testing.T) {
	c := fixed(1, 0)
	c.Phases = append(c.Phases, downstream.Phase{At: 50 * ms, Servers: 2, Service: downstream.Service{Mean: 10 * ms}})
	m := model(t, c, static(10))
	m.Arrive(45 * ms) // served until 55 ms, in the first phase's figures
	m.Arrive(60 * ms)
	r := m.Finish(100 * ms)
	require.Equal(t, [2]int64{1, 1}, [2]int64{r.Phases[0].Served, r.Phases[1].Served})
	require.Equal(t, [2]time.Duration{0, 50 * ms}, [2]time.Duration{r.Phases[0].From, r.Phases[1].From})
}

// recorder is a controller that keeps what it is told and answers with
// the limit plus one.
type recorder struct{ seen []actor.Sample }

func (r *recorder) Update(s actor.Sample, limit int64) int64 {
	r.seen = append(r.seen, s)
	return limit + 1
}

func TestControllerDecidesAMillisecondAfterTheFirstSample(t *testing.T) {
	rec := &recorder{}
	m := model(t, fixed(1, 0), downstream.Pool{Name: "rec", Controller: rec, Floor: 1, Initial: 1, Ceiling: 2})
	m.Arrive(0)      // served until 10 ms
	m.Arrive(5 * ms) // shed: the limit is 1
	m.Arrive(11 * ms)
	m.Arrive(11 * ms) // the decision at 11 ms came first: the limit is 2, and the one server refuses it
	r := m.Finish(30 * ms)
	require.Equal(t, [2]int64{1, 1}, [2]int64{r.Phases[0].Shed, r.Phases[0].Refused})
	require.Equal(t, actor.Sample{Outcome: actor.Success, RTT: 10 * ms, InFlight: 1, At: 10 * ms}, rec.seen[0])
	require.Equal(t, int64(2), r.MaxLimit, "the pool clamps the controller's answer to the ceiling")
	require.Equal(t, int64(1), r.Changes)
}

func TestOverloadIsASampleWithNoLatency(t *testing.T) {
	rec := &recorder{}
	m := model(t, fixed(1, 0), downstream.Pool{Name: "rec", Controller: rec, Floor: 1, Initial: 5, Ceiling: 9})
	m.Arrive(0)
	m.Arrive(ms)
	m.Finish(20 * ms)
	require.Equal(t, actor.Sample{Outcome: actor.Overload, InFlight: 2, At: ms}, rec.seen[0])
}

func TestSameSeedSameRun(t *testing.T) {
	run := func(seed uint64) *downstream.Result {
		c := downstream.Config{Phases: []downstream.Phase{{Servers: 20, Queue: 2, Service: downstream.Service{Mean: 10 * ms, Spread: ms}}}}
		m, err := downstream.New(c, downstream.Pool{Name: "vegas", Controller: &actor.Vegas{}, Floor: 1, Initial: 5, Ceiling: 100}, 10*ms, seed)
		require.NoError(t, err)
		for i := range 20_000 {
			m.Arrive(time.Duration(i) * 50 * time.Microsecond)
		}
		return m.Finish(time.Second)
	}
	a, b := run(1), run(1)
	require.Equal(t, a, b)
	require.NotEqual(t, a.Bins, run(2).Bins)
}

func TestAdaptivePoolFindsTheCapacity(t *testing.T) {
	c := downstream.Config{Phases: []downstream.Phase{{Servers: 50, Queue: 5, Service: downstream.Service{Mean: 10 * ms, Spread: ms}}}}
	for _, ctl := range []actor.Controller{&actor.AIMD{}, &actor.Vegas{}, &actor.Gradient2{}} {
		m, err := downstream.New(c, downstream.Pool{Name: "a", Controller: ctl, Floor: 1, Initial: 5, Ceiling: 400}, 100*ms, 1)
		require.NoError(t, err)
		for i := range 200_000 { // 10 000 a second, twice the capacity, for 20 s
			m.Arrive(time.Duration(i) * 100 * time.Microsecond)
		}
		r := m.Finish(20 * time.Second)
		last := r.Bins[len(r.Bins)-1].Limit
		require.GreaterOrEqual(t, last, int64(40), "%T", ctl)
		require.LessOrEqual(t, last, int64(100), "%T", ctl)
		require.Greater(t, r.Phases[0].Goodput(), 0.9*5000, "%T", ctl)
	}
}

func TestBadConfigIsInvalidConfig(t *testing.T) {
	svc := downstream.Service{Mean: 10 * ms}
	for name, tc := range map[string]struct {
		c downstream.Config
		p downstream.Pool
	}{
		"no phases":        {downstream.Config{}, static(1)},
		"late first phase": {downstream.Config{Phases: []downstream.Phase{{At: ms, Servers: 1, Service: svc}}}, static(1)},
		"phases out of order": {downstream.Config{Phases: []downstream.Phase{{Servers: 1, Service: svc},
			{At: 2 * ms, Servers: 1, Service: svc}, {At: 2 * ms, Servers: 1, Service: svc}}}, static(1)},
		"no servers":          {downstream.Config{Phases: []downstream.Phase{{Service: svc}}}, static(1)},
		"negative queue":      {downstream.Config{Phases: []downstream.Phase{{Servers: 1, Queue: -1, Service: svc}}}, static(1)},
		"no service time":     {downstream.Config{Phases: []downstream.Phase{{Servers: 1}}}, static(1)},
		"spread above mean":   {downstream.Config{Phases: []downstream.Phase{{Servers: 1, Service: downstream.Service{Mean: ms, Spread: 2 * ms}}}}, static(1)},
		"floor above initial": {fixed(1, 0), downstream.Pool{Floor: 5, Initial: 4, Ceiling: 9}},
		"bad controller":      {fixed(1, 0), downstream.Pool{Controller: &actor.AIMD{Backoff: 2}, Floor: 1, Initial: 1, Ceiling: 9}},
	} {
		_, err := downstream.New(tc.c, tc.p, ms, 1)
		require.ErrorIs(t, err, permits.ErrInvalidConfig, name)
	}
}

func TestChartDrawsEveryPoolInEveryPanel(t *testing.T) {
	var rs []*downstream.Result
	for _, n := range []int64{1, 2} {
		m := model(t, fixed(1, 0), static(n))
		m.Arrive(0)
		rs = append(rs, m.Finish(50*ms))
	}
	var a, b bytes.Buffer
	require.NoError(t, downstream.SVG(&a, "t<1>", fixed(1, 0), rs))
	require.NoError(t, downstream.SVG(&b, "t<1>", fixed(1, 0), rs))
	require.Equal(t, a.String(), b.String())
	// Four panels, a line per pool in each, and capacity in the first two.
	require.Equal(t, 4*2+2, strings.Count(a.String(), "<polyline"))
	require.Contains(t, a.String(), "t&lt;1&gt;")
	require.Error(t, downstream.SVG(&a, "", fixed(1, 0), nil))
}
