package scenario_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/bench/internal/scenario"
)

// These check what the runners account for, not how fast anything is:
// timings on a shared machine are for cmd/compare to report.

func TestRunWaitGrantsEveryPermit(t *testing.T) {
	spec := scenario.WaitSpec{Goroutines: 20, Rate: algorithms.PerSecond(100_000), Burst: 5, Permits: 300}
	for _, k := range []scenario.WaiterKind{scenario.Sluice, scenario.XTime, scenario.Uber} {
		res, err := scenario.RunWait(k, spec)
		if err != nil {
			t.Fatalf("%s: %v", k.Name, err)
		}
		if res.Wall <= 0 || res.FIFOViolations < res.FIFOViolationsApart {
			t.Errorf("%s: %+v", k.Name, res)
		}
	}
	if got, want := spec.Ideal(), 2950*time.Microsecond; got != want {
		t.Errorf("Ideal() = %v, want %v", got, want)
	}
}

func TestRunStormAccountsForEveryWaiter(t *testing.T) {
	spec := scenario.StormSpec{Waiters: 200, Cancelled: 100, Rate: algorithms.PerSecond(20_000), Burst: 1, Seed: 7}
	for _, k := range []scenario.WaiterKind{scenario.Sluice, scenario.XTime} {
		res, err := scenario.RunStorm(k, spec)
		if err != nil {
			t.Fatalf("%s: %v", k.Name, err)
		}
		if res.Granted+res.Cancelled != spec.Waiters || res.Granted < spec.Waiters-spec.Cancelled {
			t.Errorf("%s: %d granted + %d cancelled, want %d waiters of which at least %d granted",
				k.Name, res.Granted, res.Cancelled, spec.Waiters, spec.Waiters-spec.Cancelled)
		}
	}
	if _, err := scenario.RunStorm(scenario.Uber, spec); err == nil {
		t.Error("a storm on a limiter without context succeeded")
	}
}

func TestHeapPerWaiterReleasesEveryone(t *testing.T) {
	for _, b := range []scenario.Blocker{scenario.ChannelBlocker, scenario.SluiceBlocker(false), scenario.SluiceBlocker(true), scenario.XTimeBlocker} {
		if v, err := scenario.HeapPerWaiter(b, 50); err != nil || v <= 0 {
			t.Errorf("%s: %v B, %v", b.Name, v, err)
		}
	}
}

func TestThroughput(t *testing.T) {
	for _, m := range scenario.Decision(scenario.AllowedRate, scenario.AllowedBurst) {
		ns, allocs, err := scenario.Throughput(m, 2, time.Millisecond)
		if err != nil || ns <= 0 || allocs < 0 {
			t.Errorf("%s: %v ns, %v allocs, %v", m.Name, ns, allocs, err)
		}
	}
}

func TestCASGCRA(t *testing.T) {
	g := scenario.NewCASGCRA(time.Hour, 3)
	n := 0
	for range 10 {
		if g.Allow() {
			n++
		}
	}
	if n != 3 {
		t.Errorf("burst 3 at one per hour allowed %d of 10 at once", n)
	}
}
