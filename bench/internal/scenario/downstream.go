package scenario

import (
	"container/heap"
	"math/rand/v2"
	"slices"
	"time"
)

// The model downstream of the adaptive side by side, as in actor's
// adaptive_model_test.go: c servers, each serving one request at a time
// for a service time uniform in [9, 11] ms, a FIFO queue of c/10 in front
// of them, and a refusal for load (a 503) for a request that finds the
// queue full. Its capacity C is c: up to c in flight, latency does not
// rise. One goroutine drives it, on time.Now and time.Sleep, so that in a
// testing/synctest bubble it runs in virtual time: Poisson arrivals, each a
// TryAcquire of the limiter under test (a server shedding its load), and
// completions, each ending the permit with its outcome.
const (
	ModelService = 10 * time.Millisecond
	modelSpread  = time.Millisecond // service times are ModelService ± this
	limitEvery   = 10 * time.Millisecond
)

// AdaptiveLimiter is one subject of the model: TryAcquire never waits and
// returns the function that ends the permit (overload: the downstream
// refused for load), Limit the current limit.
type AdaptiveLimiter interface {
	TryAcquire() (end func(overload bool), ok bool)
	Limit() int
	Close()
}

// Phase is a stretch of the downstream at one capacity.
type Phase struct {
	Servers int
	Dur     time.Duration
	Skip    time.Duration // latencies and goodput count from then on
}

// PhaseResult is what one phase measured.
type PhaseResult struct {
	Settled  time.Duration // when the limit entered [0.8C, 1.2C] for good; -1: never
	Goodput  float64       // served after Skip, over C / ModelService
	P99      time.Duration // of the requests served after Skip
	Shed     int64         // refused by the limiter
	Refused  int64         // refused by the downstream
	MaxLimit int
}

type modelJob struct {
	end        func(bool)
	start, due time.Time
}

type modelJobs []*modelJob

func (h modelJobs) Len() int           { return len(h) }
func (h modelJobs) Less(i, j int) bool { return h[i].due.Before(h[j].due) }
func (h modelJobs) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *modelJobs) Push(x any)        { *h = append(*h, x.(*modelJob)) }
func (h *modelJobs) Pop() any          { o := *h; x := o[len(o)-1]; *h = o[:len(o)-1]; return x }

// Downstream is the model, driven by one goroutine through its phases.
type Downstream struct {
	l       AdaptiveLimiter
	gaps    *rand.Rand // the arrivals' gaps
	serve   *rand.Rand // the service times, one per service started in the phase
	seed    uint64
	phases  uint64  // phases run so far
	rate    float64 // arrivals per second
	servers int
	busy    modelJobs
	queue   []*modelJob
}

// NewDownstream returns the model in front of l, offered rate requests a
// second; seed fixes its arrivals and service times. Each has a stream of
// its own (common random numbers), the service times one per phase:
// every subject is offered the same arrivals and its n-th service of a
// phase takes as long as every other's, so that a difference in goodput
// is the limiter's, not the dice's. With one stream for both, the service
// times a subject drew depended on its decisions, and its goodput moved
// by ±0.05 points from seed to seed, more than the differences the side
// by side is read for; with one service stream for every phase, a subject
// that served more in one phase read the next phase's from elsewhere.
func NewDownstream(l AdaptiveLimiter, rate float64, seed uint64) *Downstream {
	return &Downstream{l: l, rate: rate, seed: seed, gaps: rand.New(rand.NewPCG(seed, 29))}
}

// phaseRun gathers one phase's measurements.
type phaseRun struct {
	limits    []int
	latencies []time.Duration
	served    int64
	from      time.Time
	res       PhaseResult
}

// Run drives the downstream through ph, from now, and returns what it
// measured.
func (m *Downstream) Run(ph Phase) PhaseResult {
	m.servers = ph.Servers
	m.serve = rand.New(rand.NewPCG(m.seed, 30+m.phases))
	m.phases++
	now := time.Now()
	r := &phaseRun{from: now.Add(ph.Skip)}
	end, nextLimit, arrival := now.Add(ph.Dur), now, now.Add(m.gap())
	for {
		t := arrival
		if len(m.busy) > 0 && m.busy[0].due.Before(t) {
			t = m.busy[0].due
		}
		if t.After(end) {
			return r.result(ph)
		}
		for !nextLimit.After(t) {
			l := m.l.Limit()
			r.limits, r.res.MaxLimit = append(r.limits, l), max(r.res.MaxLimit, l)
			nextLimit = nextLimit.Add(limitEvery)
		}
		time.Sleep(time.Until(t))
		if len(m.busy) > 0 && !m.busy[0].due.After(t) {
			m.complete(r, t)
			continue
		}
		m.arrive(r, t)
		arrival = t.Add(m.gap())
	}
}

func (m *Downstream) gap() time.Duration {
	return time.Duration(m.gaps.ExpFloat64() / m.rate * float64(time.Second))
}

func (m *Downstream) service() time.Duration {
	return ModelService - modelSpread + time.Duration(m.serve.Int64N(int64(2*modelSpread)))
}

func (m *Downstream) arrive(r *phaseRun, now time.Time) {
	end, ok := m.l.TryAcquire()
	switch {
	case !ok:
		r.res.Shed++
	case len(m.busy) < m.servers:
		heap.Push(&m.busy, &modelJob{end: end, start: now, due: now.Add(m.service())})
	case len(m.queue) < max(m.servers/10, 1):
		m.queue = append(m.queue, &modelJob{end: end, start: now})
	default:
		r.res.Refused++
		end(true)
	}
}

func (m *Downstream) complete(r *phaseRun, now time.Time) {
	j := heap.Pop(&m.busy).(*modelJob)
	j.end(false)
	if !now.Before(r.from) {
		r.served++
		r.latencies = append(r.latencies, now.Sub(j.start))
	}
	if len(m.queue) > 0 && len(m.busy) < m.servers {
		next := m.queue[0]
		m.queue = m.queue[1:]
		next.due = now.Add(m.service())
		heap.Push(&m.busy, next)
	}
}

func (r *phaseRun) result(ph Phase) PhaseResult {
	res := r.res
	res.Settled = settled(r.limits, ph.Servers)
	capacity := float64(ph.Servers) * float64(ph.Dur-ph.Skip) / float64(ModelService)
	res.Goodput = float64(r.served) / capacity
	if l := r.latencies; len(l) > 0 {
		slices.Sort(l)
		res.P99 = l[len(l)*99/100]
	}
	return res
}

// settled is when limits, one every limitEvery, entered [0.8c, 1.2c] for
// good (-1: they never did, or not by the end).
func settled(limits []int, c int) time.Duration {
	lo, hi := c*8/10, c*12/10
	i := len(limits)
	for i > 0 && limits[i-1] >= lo && limits[i-1] <= hi {
		i--
	}
	if i == len(limits) {
		return -1
	}
	return time.Duration(i) * limitEvery
}
