package actor_test

import (
	"container/heap"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/permits"
)

// The model downstream: c servers, each serving one request at a time for
// a service time uniform in [9, 11] ms, a FIFO queue of c/10 in front of
// them, and an Overload refusal (a 503) for a request that finds the
// queue full. Its capacity C is c: up to c in flight, latency does not
// rise. One goroutine drives it in virtual time (testing/synctest): Poisson
// arrivals, each a TryAcquire of the pool (a server that sheds its load),
// and completions, each a Done with the outcome; the pool's owner is the
// only other goroutine.
const (
	modelService = 10 * time.Millisecond
	modelUnit    = time.Millisecond // the spread of service times, ± around modelService
)

// phase is a stretch of the downstream at one capacity.
type phase struct {
	servers int
	dur     time.Duration
	skip    time.Duration // latencies and goodput count from then on
}

// modelRun is what one phase measured: the limit over time, the
// latencies of the requests served, and what became of the others.
type modelRun struct {
	limits    []int64         // Limit, every 10 ms
	latencies []time.Duration // from skip on
	served    int64           // from skip on
	shed      int64           // refused by the pool
	refused   int64           // refused by the downstream (Overload)
	maxLimit  int64
}

type job struct {
	pm    permits.Permit
	start time.Time
	end   time.Time
}

type jobs []*job

func (h jobs) Len() int           { return len(h) }
func (h jobs) Less(i, j int) bool { return h[i].end.Before(h[j].end) }
func (h jobs) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *jobs) Push(x any)        { *h = append(*h, x.(*job)) }
func (h *jobs) Pop() any          { o := *h; x := o[len(o)-1]; *h = o[:len(o)-1]; return x }

type downstream struct {
	p       *actor.AdaptivePool
	rng     *rand.Rand
	servers int
	busy    jobs // in service, by completion
	queue   []*job
	rate    float64   // arrivals per second
	from    time.Time // the phase's skip ends
}

func (m *downstream) service() time.Duration {
	return modelService - modelUnit + time.Duration(m.rng.Int64N(int64(2*modelUnit)))
}

// run drives the downstream through one phase, from now.
func (m *downstream) run(ph phase) modelRun {
	m.servers = ph.servers
	var r modelRun
	now := time.Now()
	end, nextLimit := now.Add(ph.dur), now
	m.from = now.Add(ph.skip)
	arrival := now.Add(m.gap())
	for {
		t := arrival
		if len(m.busy) > 0 && m.busy[0].end.Before(t) {
			t = m.busy[0].end
		}
		if t.After(end) {
			return r
		}
		for !nextLimit.After(t) {
			l := m.p.Limit()
			r.limits, r.maxLimit = append(r.limits, l), max(r.maxLimit, l)
			nextLimit = nextLimit.Add(10 * time.Millisecond)
		}
		time.Sleep(time.Until(t))
		if len(m.busy) > 0 && !m.busy[0].end.After(t) {
			m.complete(&r, t)
			continue
		}
		m.arrive(&r, t)
		arrival = t.Add(m.gap())
	}
}

func (m *downstream) gap() time.Duration {
	return time.Duration(m.rng.ExpFloat64() / m.rate * float64(time.Second))
}

func (m *downstream) arrive(r *modelRun, now time.Time) {
	pm, err := m.p.TryAcquire(1)
	switch {
	case err != nil:
		r.shed++
	case len(m.busy) < m.servers:
		heap.Push(&m.busy, &job{pm: pm, start: now, end: now.Add(m.service())})
	case len(m.queue) < max(m.servers/10, 1):
		m.queue = append(m.queue, &job{pm: pm, start: now})
	default:
		r.refused++
		m.p.Done(pm, actor.Overload)
	}
}

func (m *downstream) complete(r *modelRun, now time.Time) {
	j := heap.Pop(&m.busy).(*job)
	m.p.Done(j.pm, actor.Success)
	if !now.Before(m.from) {
		r.served++
		r.latencies = append(r.latencies, now.Sub(j.start))
	}
	if len(m.queue) > 0 && len(m.busy) < m.servers {
		next := m.queue[0]
		m.queue = m.queue[1:]
		next.end = now.Add(m.service())
		heap.Push(&m.busy, next)
	}
}

// settled is when the limit entered [0.8c, 1.2c] for good, from the
// phase's start (-1: it never did).
func (r modelRun) settled(c int) time.Duration {
	lo, hi := int64(c)*8/10, int64(c)*12/10
	i := len(r.limits)
	for i > 0 && r.limits[i-1] >= lo && r.limits[i-1] <= hi {
		i--
	}
	if i == len(r.limits) {
		return -1
	}
	return time.Duration(i) * 10 * time.Millisecond
}

// p99 is the 99th percentile of the latencies.
func (r modelRun) p99() time.Duration {
	l := slices.Clone(r.latencies)
	slices.Sort(l)
	if len(l) == 0 {
		return 0
	}
	return l[len(l)*99/100]
}

// goodput is the fraction of the downstream's capacity (c / the mean
// service time) that was served after the skip.
func (r modelRun) goodput(ph phase) float64 {
	capacity := float64(ph.servers) * float64(ph.dur-ph.skip) / float64(modelService)
	return float64(r.served) / capacity
}

func newDownstream(t *testing.T, ctl actor.Controller, rate float64) *downstream {
	p, err := actor.NewAdaptivePool(ctl, actor.WithLimits(1, 20, 400))
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	return &downstream{p: p, rng: rand.New(rand.NewPCG(29, 1)), rate: rate}
}
