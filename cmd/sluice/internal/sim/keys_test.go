package sim_test

import (
	"cmp"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/cmd/sluice/internal/sim"
	"github.com/sluicehq/sluice/cmd/sluice/internal/spec"
	"github.com/sluicehq/sluice/cmd/sluice/internal/traffic"
	"github.com/sluicehq/sluice/keyed"
)

// byArrival sorts grants by arrival, as a real limiter's callers see them.
func byArrival(g []sim.Grant) []sim.Grant {
	g = slices.Clone(g)
	slices.SortStableFunc(g, func(a, b sim.Grant) int { return cmp.Or(cmp.Compare(a.Arrival, b.Arrival), cmp.Compare(a.At, b.At)) })
	return g
}

// TestPerKeyIsOneLimitPerKey: a per-key limit grants each key exactly what
// the same limit, alone, grants that key's arrivals; keys never wait for
// each other. Upstream and window measures see every key's grants, in
// order of instant.
func TestPerKeyIsOneLimitPerKey(t *testing.T) {
	a := arrivals(t, 20*time.Second, 3, "poisson:80/s,cost=1-3,keys=7,spread=zipf:1.3", "spike:40@3s,30@8s,keys=3")
	for _, s := range kinds {
		for _, mw := range []time.Duration{0, 40 * time.Millisecond, sim.Forever} {
			l := limit(t, s)
			one := l
			l.PerKey = true
			res := run(t, a, sim.Config{Limit: l, MaxWait: mw, Horizon: 1000 * time.Hour})
			var want []sim.Grant
			var refused int64
			split := map[uint32][]traffic.Arrival{}
			for _, x := range a {
				split[x.Key] = append(split[x.Key], x)
			}
			for _, part := range split {
				r := run(t, part, sim.Config{Limit: one, MaxWait: mw, Horizon: 1000 * time.Hour})
				want, refused = append(want, r.Grants...), refused+r.Refused
			}
			if !slices.Equal(byArrival(res.Grants), byArrival(want)) || res.Refused != refused {
				t.Fatalf("%s max wait %v: per key %d grants %d refused; one limit per key %d grants %d refused",
					s, mw, len(res.Grants), res.Refused, len(want), refused)
			}
			if !slices.IsSortedFunc(res.Grants, func(x, y sim.Grant) int { return cmp.Compare(x.At, y.At) }) {
				t.Fatalf("%s: grants out of order of instant across keys", s)
			}
			if res.Keys != len(split) {
				t.Errorf("%s: %d keys, want %d", s, res.Keys, len(split))
			}
		}
	}
}

// TestPerKeyMatchesKeyed runs the real keyed.Limiter in a synctest bubble,
// one goroutine per caller, and checks that the simulator's per-key limit
// admits the same callers at the same instants (arrivals at distinct
// instants, as in TestMatchesActor).
func TestPerKeyMatchesKeyed(t *testing.T) {
	a := arrivals(t, 10*time.Second, 5, "poisson:40/s,cost=1-3,keys=5,spread=zipf")
	if !distinct(a) {
		t.Fatal("arrivals share an instant")
	}
	for _, s := range []string{"gcra:10/s,burst=3", "token:10/s,3", "sliding:7/300ms", "fixed:7/300ms"} {
		for _, mw := range []time.Duration{0, 150 * time.Millisecond, sim.Forever} {
			l := limit(t, s)
			l.PerKey = true
			res := run(t, a, sim.Config{Limit: l, MaxWait: mw, Horizon: 1000 * time.Hour})
			if res.Refused == 0 && mw >= 0 || res.Waited == 0 && mw != 0 {
				t.Fatalf("%s max wait %v: refused %d waited %d; want some of each", s, mw, res.Refused, res.Waited)
			}
			if got := realKeyed(t, l, a, mw); !slices.Equal(byArrival(res.Grants), got) {
				t.Fatalf("%s max wait %v: the simulator granted %d, keyed.Limiter %d, or at other instants", s, mw, len(res.Grants), len(got))
			}
		}
	}
}

func realKeyed(t *testing.T, l spec.Limit, a []traffic.Arrival, maxWait time.Duration) []sim.Grant {
	t.Helper()
	return callers(t, a, func(t *testing.T) (func(traffic.Arrival) error, func()) {
		var opts []keyed.Option
		if maxWait >= 0 {
			opts = append(opts, keyed.WithMaxWait(maxWait))
		}
		lim, err := keyed.New(func(uint32) (algorithms.Algorithm, error) { return l.New() }, opts...)
		if err != nil {
			t.Fatal(err)
		}
		return func(x traffic.Arrival) error {
			_, err := lim.Acquire(context.Background(), x.Key, x.Cost)
			return err
		}, func() { lim.Close() }
	})
}

// TestTopKeysByRefusals: the keys refused most are named, the most first.
func TestTopKeysByRefusals(t *testing.T) {
	a := arrivals(t, 10*time.Second, 1, "steady:100/s,keys=20,spread=zipf:1.5")
	l := limit(t, "sliding:5/s,per=key")
	res := run(t, a, sim.Config{Limit: l, MaxWait: 0})
	if len(res.TopRefused) != sim.TopKeys {
		t.Fatalf("top keys %v, want %d", res.TopRefused, sim.TopKeys)
	}
	offered := map[uint32]int64{}
	for _, x := range a {
		offered[x.Key]++
	}
	for i := 1; i < len(res.TopRefused); i++ {
		if res.TopRefused[i].Refused > res.TopRefused[i-1].Refused {
			t.Errorf("top keys out of order: %v", res.TopRefused)
		}
	}
	// The busiest key offers far more than 5 a second: it is refused most,
	// all but at most 50 of its arrivals.
	busiest, n := uint32(0), int64(0)
	for k, c := range offered {
		if c > n {
			busiest, n = k, c
		}
	}
	if top := res.TopRefused[0]; top.Key != busiest || top.Refused < n-50 || top.Refused >= n {
		t.Errorf("top %v; want the busiest key %d first, refused all but at most 50 of its %d", top, busiest, n)
	}
}
