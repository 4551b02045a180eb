package sim_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/cmd/sluice/internal/sim"
	"github.com/sluicehq/sluice/cmd/sluice/internal/spec"
	"github.com/sluicehq/sluice/cmd/sluice/internal/traffic"
)

// TestMatchesActor runs the real limiter, actor.Limiter, in a synctest
// bubble (a perfect clock: timers fire on time), with one goroutine per
// caller sleeping until its arrival and then calling Acquire, and checks
// that the simulator admits the same callers at the same instants and
// refuses the same ones. Arrivals are at distinct instants: callers woken
// at one instant reach the owner in no set order.
func TestMatchesActor(t *testing.T) {
	for seed := uint64(1); seed <= 2; seed++ {
		a := arrivals(t, 20*time.Second, seed, "poisson:25/s,cost=1-3", "onoff:60/s,on=1s,off=6s,from=4321ns")
		if !distinct(a) {
			t.Fatalf("seed %d: arrivals share an instant", seed)
		}
		for _, s := range kinds {
			for _, mw := range []time.Duration{0, 150 * time.Millisecond, sim.Forever} {
				l := limit(t, s)
				res := run(t, a, sim.Config{Limit: l, MaxWait: mw, Horizon: 1000 * time.Hour})
				got := real(t, l, a, mw)
				if res.Refused == 0 && mw >= 0 || res.Waited == 0 && mw != 0 {
					t.Fatalf("%s max wait %v: refused %d waited %d; the traffic should make some refusals and some waits", s, mw, res.Refused, res.Waited)
				}
				if !slices.Equal(res.Grants, got) {
					i := 0
					for i < min(len(got), len(res.Grants)) && got[i] == res.Grants[i] {
						i++
					}
					t.Fatalf("seed %d %s max wait %v: the simulator and actor.Limiter part at grant %d of %d/%d",
						seed, s, mw, i, len(res.Grants), len(got))
				}
			}
		}
	}
}

func distinct(a []traffic.Arrival) bool {
	for i := 1; i < len(a); i++ {
		if a[i].At == a[i-1].At {
			return false
		}
	}
	return true
}

// real offers the arrivals to an actor.Limiter and returns its grants in
// order of arrival.
func real(t *testing.T, l spec.Limit, a []traffic.Arrival, maxWait time.Duration) []sim.Grant {
	t.Helper()
	return callers(t, a, func(t *testing.T) (func(traffic.Arrival) error, func()) {
		alg, err := l.New()
		if err != nil {
			t.Fatal(err)
		}
		// sim.Forever is -1, which actor reads as no maximum too.
		lim := actor.MustNew(alg, actor.WithMaxWait(maxWait))
		return func(x traffic.Arrival) error {
			_, err := lim.Acquire(context.Background(), x.Cost)
			return err
		}, func() { lim.Close() }
	})
}

// callers runs a real limiter in a synctest bubble (a perfect clock), one
// goroutine per caller sleeping until its arrival and then acquiring, and
// returns the grants in order of arrival. start makes the limiter inside
// the bubble: its acquire and its stop.
func callers(t *testing.T, a []traffic.Arrival, start func(t *testing.T) (acquire func(traffic.Arrival) error, stop func())) []sim.Grant {
	t.Helper()
	var grants []sim.Grant
	synctest.Test(t, func(t *testing.T) {
		acquire, stop := start(t)
		defer stop()
		begin := time.Now()
		at := make([]time.Duration, len(a))
		ok := make([]bool, len(a))
		var wg sync.WaitGroup
		for i, x := range a {
			wg.Go(func() {
				time.Sleep(x.At)
				if acquire(x) == nil {
					at[i], ok[i] = time.Since(begin), true
				}
			})
		}
		wg.Wait()
		for i, x := range a {
			if ok[i] {
				grants = append(grants, sim.Grant{Arrival: x.At, At: at[i], Cost: x.Cost})
			}
		}
	})
	return grants
}
