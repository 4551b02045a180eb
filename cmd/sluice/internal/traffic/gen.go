package traffic

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/cmd/sluice/internal/muldiv"
)

// source is one pattern's arrivals, in order of instant, one at a time.
// ok is false at the end.
type source interface {
	next() (a Arrival, ok bool, err error)
}

// generator returns the pattern's arrivals in [0, duration), drawing from
// rng, and names their keys with intern. A generated kind keeps no more
// state than its position, and with keys= their names' numbers.
func (p Pattern) generator(duration time.Duration, rng *rand.Rand, intern func(string) uint32) source {
	g := &generated{p: p, rng: rng, intern: intern}
	if p.Keys > 0 {
		g.ids = make([]uint32, p.Keys)
		if p.Zipf > 1 {
			g.zipf = rand.NewZipf(rng, p.Zipf, 1, uint64(p.Keys-1))
		}
	}
	g.from, g.until = p.From, duration
	if p.Until != 0 {
		g.until = min(p.Until, duration)
	}
	switch p.Kind {
	case Spike:
		// In order of instant; the stable sort keeps spikes given twice at
		// one instant in the order given.
		g.spikes = slices.Clone(p.Spikes)
		slices.SortStableFunc(g.spikes, func(a, b SpikeAt) int { return cmpDuration(a.At, b.At) })
	case Poisson:
		g.mean = float64(p.Rate.Per) / float64(p.Rate.Count)
		g.t = float64(g.from) + rng.ExpFloat64()*g.mean
	case OnOff:
		g.cycleEnd = onEnd(g.from, p.On, g.until)
	}
	return g
}

type generated struct {
	p           Pattern
	rng         *rand.Rand
	intern      func(string) uint32
	ids         []uint32 // keys=: key i+1's number, 0 until it first arrives
	zipf        *rand.Zipf
	from, until time.Duration
	// steady and onoff: the n-th arrival of the current stretch, which
	// starts at from (onoff: the current on-period, ending at cycleEnd).
	n        int64
	cycleEnd time.Duration
	// poisson: the next instant, in ns.
	t, mean float64
	// spike: the current spike and how many of it are out.
	spikes []SpikeAt
	si     int
	sn     int64
}

func (g *generated) cost() int64 {
	if g.p.CostMin == g.p.CostMax {
		return g.p.CostMin
	}
	return g.p.CostMin + g.rng.Int64N(g.p.CostMax-g.p.CostMin+1)
}

func (g *generated) next() (Arrival, bool, error) {
	a, ok, err := g.arrival()
	if ok && g.ids != nil {
		a.Key = g.key()
	}
	return a, ok, err
}

// key draws the next arrival's key, k1 ... kN.
func (g *generated) key() uint32 {
	var i uint64
	if g.zipf != nil {
		i = g.zipf.Uint64()
	} else {
		i = g.rng.Uint64N(uint64(len(g.ids)))
	}
	if g.ids[i] == 0 {
		g.ids[i] = g.intern("k" + strconv.FormatUint(i+1, 10))
	}
	return g.ids[i]
}

func (g *generated) arrival() (Arrival, bool, error) {
	switch g.p.Kind {
	case Spike:
		for g.si < len(g.spikes) && g.sn == g.spikes[g.si].N {
			g.si, g.sn = g.si+1, 0
		}
		if g.si == len(g.spikes) {
			return Arrival{}, false, nil
		}
		g.sn++
		return Arrival{At: g.spikes[g.si].At, Cost: g.cost()}, true, nil
	case Poisson:
		if g.t >= float64(g.until) {
			return Arrival{}, false, nil
		}
		a := Arrival{At: time.Duration(g.t), Cost: g.cost()}
		g.t += g.rng.ExpFloat64() * g.mean
		return a, true, nil
	case Steady:
		return g.steady(g.until)
	case OnOff:
		for {
			if a, ok, _ := g.steady(g.cycleEnd); ok {
				return a, true, nil
			}
			period := g.p.On + g.p.Off
			if period > g.until-g.from { // the next on-period starts past the run (or overflows)
				return Arrival{}, false, nil
			}
			g.from += period
			g.cycleEnd, g.n = onEnd(g.from, g.p.On, g.until), 0
		}
	}
	return Arrival{}, false, nil
}

// steady returns the arrival at from + n·Per/Count (exact, rounded down to
// the nanosecond) when it lands before end.
func (g *generated) steady(end time.Duration) (Arrival, bool, error) {
	if g.from >= end {
		return Arrival{}, false, nil
	}
	off := time.Duration(muldiv.Floor(g.n, int64(g.p.Rate.Per), g.p.Rate.Count))
	if off >= end-g.from {
		return Arrival{}, false, nil
	}
	g.n++
	return Arrival{At: g.from + off, Cost: g.cost()}, true, nil
}

// expected is about how many arrivals the pattern makes in [0, duration):
// exact for steady and spike, the mean for poisson, an upper bound for onoff.
func (p Pattern) expected(duration time.Duration) int64 {
	from, until := p.From, duration
	if p.Until != 0 {
		until = min(p.Until, duration)
	}
	switch {
	case p.Kind == Spike:
		var n int64
		for _, s := range p.Spikes {
			if s.At < duration {
				n = muldiv.Add(n, s.N)
			}
		}
		return n
	case until <= from || p.Kind == CSV || p.Rate.Count == 0:
		return 0
	}
	return muldiv.Ceil(int64(until-from), p.Rate.Count, int64(p.Rate.Per))
}

func cmpDuration(a, b time.Duration) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// onEnd is the end of the on-period starting at from, cut at until, without
// overflowing.
func onEnd(from, on, until time.Duration) time.Duration {
	if on > until-from {
		return until
	}
	return from + on
}
