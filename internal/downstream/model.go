package downstream

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/sluicehq/sluice/actor"
)

// Model is one pool in front of one downstream, on a virtual clock that
// starts at 0. Offer it arrivals in order of instant with Arrive, then
// call Finish.
type Model struct {
	cfg    Config
	pool   *pool
	rng    *rand.Rand
	now    time.Duration
	phase  int // the downstream's current phase
	busy   jobs
	queue  []*job
	qhead  int
	res    *Result
	closed bool
}

// job is one admitted request.
type job struct {
	arrival time.Duration // also its grant: the pool never queues
	end     time.Duration // its completion, once a server has it
	in      int64         // in flight after its grant
	phase   int           // the phase it arrived in, which its figures go to
}

// New returns a model of pool p in front of downstream c, drawing service
// times from seed, binning its series by bin (> 0). Its errors match
// permits.ErrInvalidConfig.
func New(c Config, p Pool, bin time.Duration, seed uint64) (*Model, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	if err := p.validate(); err != nil {
		return nil, err
	}
	if p.Controller != nil {
		// The real pool checks the controller's own parameters.
		ap, err := actor.NewAdaptivePool(p.Controller, actor.WithLimits(p.Floor, p.Initial, p.Ceiling))
		if err != nil {
			return nil, fmt.Errorf("pool %q: %w", p.Name, err)
		}
		ap.Close()
	}
	if bin <= 0 {
		return nil, fmt.Errorf("downstream: the bin must be positive, got %v", bin)
	}
	m := &Model{cfg: c, pool: newPool(p), rng: rand.New(rand.NewPCG(seed, 29))}
	m.res = newResult(c, p, bin)
	return m, nil
}

// Arrive offers one request at instant at, which must not be before the
// last one's (an earlier instant counts as the last one's).
func (m *Model) Arrive(at time.Duration) {
	at = max(at, m.now)
	m.advance(at)
	ph := m.phase
	r := &m.res.Phases[ph]
	r.Offered++
	ok, in := m.pool.try()
	if !ok {
		r.Shed++
		m.res.bin(at).Shed++
		return
	}
	m.res.inFlight(at, in)
	j := &job{arrival: at, in: in, phase: ph}
	d := m.cfg.Phases[m.phase]
	switch {
	case len(m.busy) < d.Servers:
		m.serve(j, at)
	case len(m.queue)-m.qhead < d.Queue:
		m.queue = append(m.queue, j)
	default:
		r.Refused++
		m.res.bin(at).Refused++
		m.pool.done(actor.Sample{Outcome: actor.Overload, InFlight: in, At: at})
	}
}

// Finish serves what is still in flight, with no more arrivals, and
// returns the result; the series cover [0, end).
func (m *Model) Finish(end time.Duration) *Result {
	if !m.closed {
		m.closed = true
		m.advance(-1)
		m.res.finish(max(end, 1), m.pool)
	}
	return m.res
}

// advance runs every event due at or before until (-1: all of them): phase
// changes, completions and the controller's decisions, in order of instant,
// a phase change first, then completions, then a decision at one instant.
func (m *Model) advance(until time.Duration) {
	for {
		t, kind := m.next()
		if kind == none || (until >= 0 && t > until) {
			return
		}
		m.now = t
		switch kind {
		case change:
			m.phase++
			m.startQueued(t)
		case completion:
			m.complete(t)
		case decision:
			m.pool.decide()
			m.res.limit(t, m.pool.limit)
		}
	}
}

type event int

const (
	none event = iota
	change
	completion
	decision
)

// next is the earliest event and its instant. Phase changes after the
// last request of a finished run has left do not matter: it stops there.
func (m *Model) next() (time.Duration, event) {
	t, kind := time.Duration(0), none
	if m.phase+1 < len(m.cfg.Phases) && (!m.closed || len(m.busy) > 0 || m.qhead < len(m.queue)) {
		t, kind = m.cfg.Phases[m.phase+1].At, change
	}
	if len(m.busy) > 0 && (kind == none || m.busy[0].end < t) {
		t, kind = m.busy[0].end, completion
	}
	if m.pool.due >= 0 && (kind == none || m.pool.due < t) {
		t, kind = m.pool.due, decision
	}
	return t, kind
}

// serve gives j a server from now.
func (m *Model) serve(j *job, now time.Duration) {
	j.end = now + m.cfg.Phases[m.phase].Service.draw(m.rng)
	heap.Push(&m.busy, j)
}

// complete ends the job due at now and gives its server to the queue.
func (m *Model) complete(now time.Duration) {
	j := heap.Pop(&m.busy).(*job)
	rtt := now - j.arrival
	m.pool.done(actor.Sample{Outcome: actor.Success, RTT: rtt, InFlight: j.in, At: now})
	m.res.served(j.phase, now, rtt)
	m.startQueued(now)
}

// startQueued hands queued jobs to the free servers, in FIFO order.
func (m *Model) startQueued(now time.Duration) {
	for m.qhead < len(m.queue) && len(m.busy) < m.cfg.Phases[m.phase].Servers {
		j := m.queue[m.qhead]
		m.queue[m.qhead] = nil
		m.qhead++
		m.serve(j, now)
	}
	if m.qhead == len(m.queue) {
		m.queue, m.qhead = m.queue[:0], 0
	}
}

// jobs is a heap of jobs in service, by completion; ties by arrival, so
// that the order never depends on the heap's shape.
type jobs []*job

func (h jobs) Len() int { return len(h) }
func (h jobs) Less(i, j int) bool {
	if h[i].end != h[j].end {
		return h[i].end < h[j].end
	}
	return h[i].arrival < h[j].arrival
}
func (h jobs) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *jobs) Push(x any)   { *h = append(*h, x.(*job)) }
func (h *jobs) Pop() any {
	o := *h
	x := o[len(o)-1]
	*h = o[:len(o)-1]
	return x
}
