package sim_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/cmd/sluice/internal/sim"
	"github.com/sluicehq/sluice/cmd/sluice/internal/traffic"
	"github.com/sluicehq/sluice/internal/downstream"
)

func downstreamRun(dur time.Duration) sim.Downstream {
	return sim.Downstream{
		Config: downstream.Config{Phases: []downstream.Phase{{Servers: 2, Queue: 1, Service: downstream.Service{Mean: 10 * time.Millisecond}}}},
		Pools: []downstream.Pool{{Name: "static", Floor: 3, Initial: 3, Ceiling: 3},
			{Name: "aimd", Controller: &actor.AIMD{}, Floor: 1, Initial: 3, Ceiling: 10}},
		Bin: sim.AutoBin, Duration: dur, Seed: 1,
	}
}

func steady(n int, gap time.Duration) []traffic.Arrival {
	a := make([]traffic.Arrival, n)
	for i := range a {
		a[i] = traffic.Arrival{At: time.Duration(i) * gap, Cost: 1}
	}
	return a
}

func TestEveryPoolIsOfferedEveryArrival(t *testing.T) {
	res, err := sim.RunDownstream(traffic.Slice(steady(20_000, 100*time.Microsecond)), downstreamRun(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if got := r.Total(); got.Offered != 20_000 || got.Served+got.Shed+got.Refused != 20_000 {
			t.Errorf("%s: %+v", r.Pool.Name, got)
		}
		// 2 s drawn in at most 500 round bins: 5 ms each.
		if r.Bin != 5*time.Millisecond || len(r.Bins) != 400 {
			t.Errorf("%s: %d bins of %v", r.Pool.Name, len(r.Bins), r.Bin)
		}
	}
}

func TestDownstreamReplayLearnsItsLength(t *testing.T) {
	res, err := sim.RunDownstream(traffic.Slice(steady(1000, time.Millisecond)), downstreamRun(0))
	if err != nil {
		t.Fatal(err)
	}
	if r := res[0]; r.Phases[0].To != 999*time.Millisecond+1 || r.Bin != 2*time.Millisecond {
		t.Errorf("run to %v in bins of %v", r.Phases[0].To, r.Bin)
	}
}
