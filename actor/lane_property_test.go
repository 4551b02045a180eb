package actor_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/permits"
	"github.com/sluicehq/sluice/scheduler"
)

// The lanes' property test (issue 14) plays random scripts of arrivals in
// random lanes (weights, priorities, a floor), cancellations, deadlines,
// TryAcquires, WithMaxWait and a Close against a Limiter, and against a
// model: the pure fair order (scheduler.Fair, itself checked against a
// plain reference) over a fresh copy of the same algorithm, driven event by
// event in time order. Every grant must come at the model's instant, and
// every other outcome must be the model's.
//
// The owner's predictions are lower bounds, so the model cannot say when an
// Acquire behind others must be refused at once; the test takes the
// limiter's word for those and checks that it is sound: as things stood
// (nobody arriving or leaving after), the grant would indeed have come
// after the deadline, or waited longer than WithMaxWait.
//
// Instants keep the owner from facing two events it could take in either
// order: arrivals on even microseconds, cancellations, deadlines,
// TryAcquires and Close on distinct odd ones, expiries 500ns past a
// microsecond, and the algorithms' intervals a few nanoseconds past a
// round number, so that no grant falls on any of those.

type laneEvent struct {
	at       time.Duration
	kind     evKind
	id       int // arrival id, for evArrive, evCancel and the deadline
	lane     int // -1: the limiter itself
	cost     int64
	deadline time.Duration // evArrive: 0, or the context's deadline
	dead     bool          // a deadline reached, for a queued arrival
}

type laneScript struct {
	weights, priorities []int
	floor               float64
	maxWait             time.Duration // < 0: none
	events              []laneEvent
}

func randomLaneScript(rng *rand.Rand, capacity int64) laneScript {
	var s laneScript
	for range 1 + rng.IntN(5) {
		s.weights = append(s.weights, 1+rng.IntN(5))
		s.priorities = append(s.priorities, rng.IntN(3))
	}
	s.floor = []float64{0, 0, 0.1, 0.3}[rng.IntN(4)]
	s.maxWait = -1
	if rng.IntN(3) == 0 {
		s.maxWait = time.Duration(10+rng.IntN(30))*time.Millisecond + 500
	}
	used := map[time.Duration]bool{}
	instant := func(odd bool, upTo int) time.Duration {
		for {
			at := time.Duration(2*rng.IntN(upTo)) * time.Microsecond
			if odd {
				at += time.Microsecond
			}
			if !used[at] {
				used[at] = true
				return at
			}
		}
	}
	n := 10 + rng.IntN(40)
	for id := range n {
		at := instant(false, 50_000) // within 100ms: queues form
		ev := laneEvent{at: at, kind: evArrive, id: id, lane: rng.IntN(len(s.weights)+1) - 1, cost: 1 + rng.Int64N(capacity)}
		if rng.IntN(3) == 0 {
			for {
				ev.deadline = at + time.Duration(1+2*rng.IntN(15_000))*time.Microsecond
				if !used[ev.deadline] {
					used[ev.deadline] = true
					break
				}
			}
			s.events = append(s.events, laneEvent{at: ev.deadline, kind: evCancel, id: id, dead: true})
		}
		s.events = append(s.events, ev)
		if rng.IntN(3) == 0 {
			for range 1000 { // a deadline a µs away leaves no instant for a cancel
				c := at + time.Duration(1+2*rng.IntN(40_000))*time.Microsecond
				if !used[c] && (ev.deadline == 0 || c < ev.deadline) {
					used[c] = true
					s.events = append(s.events, laneEvent{at: c, kind: evCancel, id: id})
					break
				}
			}
		}
	}
	for range rng.IntN(10) {
		s.events = append(s.events, laneEvent{at: instant(true, 100_000), kind: evTry, lane: rng.IntN(len(s.weights)+1) - 1, cost: 1 + rng.Int64N(capacity)})
	}
	if rng.IntN(2) == 0 {
		s.events = append(s.events, laneEvent{at: instant(true, 150_000), kind: evClose})
	}
	slices.SortStableFunc(s.events, func(a, b laneEvent) int { return int(a.at - b.at) })
	return s
}

// laneModel is the fair order over a copy of the algorithm, in ns since t0.
type laneModel struct {
	t0      time.Time
	alg     algorithms.Algorithm
	f       scheduler.Fair[int]
	flows   []*scheduler.Flow[int] // [0]: the limiter's own; [i+1]: lane i
	nodes   map[int]*scheduler.Node[int]
	flowOf  map[int]*scheduler.Flow[int]
	expires map[int]int64 // queued arrivals with WithMaxWait: when they expire
	out     map[int]outcome
	tries   []bool
	closed  bool
}

func newLaneModel(alg algorithms.Algorithm, t0 time.Time, s laneScript) *laneModel {
	m := &laneModel{t0: t0, alg: alg, nodes: map[int]*scheduler.Node[int]{}, flowOf: map[int]*scheduler.Flow[int]{},
		expires: map[int]int64{}, out: map[int]outcome{}}
	m.f.SetFloor(int64(math.Round(s.floor*scheduler.FloorScale)), 0)
	m.flows = append(m.flows, new(scheduler.Flow[int]))
	m.flows[0].Init(1, 0)
	for i, w := range s.weights {
		fl := new(scheduler.Flow[int])
		fl.Init(int64(w), s.priorities[i])
		m.flows = append(m.flows, fl)
	}
	return m
}

func (m *laneModel) Decide(at, cost int64) (bool, int64) {
	d := m.alg.AllowAt(m.t0.Add(time.Duration(at)), cost)
	if d.Allowed {
		return true, 0
	}
	return false, int64(d.RetryAt.Sub(m.t0))
}

func (m *laneModel) Granted(n *scheduler.Node[int], at int64) {
	m.out[n.Value] = outcome{granted: true, at: time.Duration(at)}
	delete(m.expires, n.Value)
}

// remove takes a queued arrival out, then lets the owner go on from then,
// as it does after every batch.
func (m *laneModel) remove(id int, at int64, o outcome) {
	m.f.Remove(m.nodes[id], m.flowOf[id], at)
	delete(m.expires, id)
	m.out[id] = o
	m.f.Grant(at, m)
}

// advance grants and expires, in time order, whatever falls due by to.
func (m *laneModel) advance(to int64) {
	for {
		next, who := int64(math.MaxInt64), -1
		for id, e := range m.expires {
			if e < next || e == next && id < who {
				next, who = e, id
			}
		}
		if next > to {
			m.f.Grant(to, m)
			return
		}
		m.f.Grant(next-1, m)
		if _, still := m.expires[who]; still {
			m.remove(who, next, outcome{at: time.Duration(next), err: errExpired})
		}
	}
}

// errExpired stands for a waiter refused when its WithMaxWait ran out.
var errExpired = errors.New("expired while queued")

// play runs the script's events before stop through the model, with the
// limiter's word (got) for the refusals at once behind a queue, and
// returns the model.
func playLaneModel(alg algorithms.Algorithm, t0 time.Time, s laneScript, got map[int]outcome, stop int) *laneModel {
	m := newLaneModel(alg, t0, s)
	for k, ev := range s.events {
		if k == stop {
			break
		}
		at := int64(ev.at)
		if m.closed {
			switch ev.kind {
			case evArrive:
				m.out[ev.id] = outcome{err: permits.ErrClosed}
			case evTry:
				m.tries = append(m.tries, false)
			}
			continue
		}
		m.advance(at)
		switch ev.kind {
		case evArrive:
			if m.f.Len() == 0 {
				d := alg.AllowAt(t0.Add(ev.at), ev.cost)
				if d.Allowed {
					m.out[ev.id] = outcome{granted: true, at: ev.at}
					continue
				}
				// Nobody waits: the algorithm's RetryAt is the exact
				// grant, and the bounds are checked against it.
				retry := d.RetryAt.Sub(t0)
				if s.maxWait >= 0 && retry-ev.at > s.maxWait {
					m.out[ev.id] = outcome{at: ev.at, err: errMaxWaitRefused}
					continue
				}
				if ev.deadline != 0 && retry > ev.deadline {
					m.out[ev.id] = outcome{at: ev.at, err: errDeadlineRefused}
					continue
				}
			} else if g := got[ev.id]; !g.granted && g.at == ev.at && errors.Is(g.err, permits.ErrRateLimited) {
				m.out[ev.id] = g // refused at once behind the queue: checked apart
				continue
			}
			n := &scheduler.Node[int]{Value: ev.id, Cost: ev.cost, Arrival: at}
			fl := m.flows[ev.lane+1]
			m.nodes[ev.id], m.flowOf[ev.id] = n, fl
			if s.maxWait >= 0 {
				m.expires[ev.id] = at + int64(s.maxWait)
			}
			m.f.Push(n, fl)
			m.f.Grant(at, m)
		case evCancel:
			n, ok := m.nodes[ev.id]
			if !ok || !m.flowOf[ev.id].Contains(n) {
				continue
			}
			err := context.Canceled
			if ev.dead {
				err = context.DeadlineExceeded
			}
			m.remove(ev.id, at, outcome{at: ev.at, err: err})
		case evTry:
			m.tries = append(m.tries, m.f.Len() == 0 && alg.AllowAt(t0.Add(ev.at), ev.cost).Allowed)
		case evClose:
			for n, _ := m.f.Pop(); n != nil; n, _ = m.f.Pop() {
				m.out[n.Value] = outcome{err: permits.ErrClosed}
			}
			m.closed, m.expires = true, nil
		}
	}
	return m
}

// errMaxWaitRefused stands for an Acquire refused at once by WithMaxWait.
var errMaxWaitRefused = &permits.RateLimitError{RetryAfter: 1}

// runLanes plays the script against a real Limiter in a synctest bubble.
func runLanes(t *testing.T, alg algorithms.Algorithm, s laneScript) (arrivals map[int]outcome, tries []bool) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		l := actor.MustNew(alg, actor.WithMaxWait(s.maxWait))
		defer l.Close()
		require.NoError(t, l.SetPriorityFloor(s.floor))
		lanes := make([]*actor.Lane, len(s.weights))
		for i, w := range s.weights {
			var err error
			lanes[i], err = l.Lane(fmt.Sprint("lane-", i), w, actor.WithPriority(s.priorities[i]))
			require.NoError(t, err)
		}
		acquire := func(lane int) func(context.Context, int64) (permits.Grant, error) {
			if lane < 0 {
				return l.AcquireGrant
			}
			return lanes[lane].AcquireGrant
		}
		try := func(lane int, cost int64) error {
			if lane < 0 {
				_, err := l.TryAcquire(cost)
				return err
			}
			_, err := lanes[lane].TryAcquire(cost)
			return err
		}
		a := newScriptArrivals(t0)
		for _, ev := range s.events {
			if ev.kind != evArrive {
				continue
			}
			a.start(ev.id, ev.at, ev.deadline, func(ctx context.Context) outcome {
				g, err := acquire(ev.lane)(ctx, ev.cost)
				if err != nil {
					return outcome{err: err, at: time.Since(t0)}
				}
				return outcome{granted: true, at: g.At.Sub(t0)}
			})
		}
		for _, ev := range s.events {
			time.Sleep(time.Until(t0.Add(ev.at)))
			switch ev.kind {
			case evCancel:
				if !ev.dead {
					a.cancel[ev.id]()
				}
			case evTry:
				tries = append(tries, try(ev.lane, ev.cost) == nil)
			case evClose:
				require.NoError(t, l.Close())
			}
		}
		arrivals = a.wait()
	})
	return arrivals, tries
}

func TestLanesPropertyAgainstModel(t *testing.T) {
	configs := []struct {
		name string
		make func() algorithms.Algorithm
		cap  int64
	}{
		{"gcra 1000 per 2.000001s burst 3", func() algorithms.Algorithm {
			g, _ := algorithms.NewGCRA(algorithms.Rate{Count: 1000, Per: 2_000_001 * time.Microsecond}, 3)
			return g
		}, 3},
		{"token bucket 4 at 250 per 1.000003s", func() algorithms.Algorithm {
			b, _ := algorithms.NewTokenBucket(algorithms.Rate{Count: 250, Per: 1_000_003 * time.Microsecond}, 4)
			return b
		}, 4},
		{"sliding window 5 per 20.000007ms", func() algorithms.Algorithm {
			w, _ := algorithms.NewSlidingWindow(algorithms.Rate{Count: 5, Per: 20*time.Millisecond + 7})
			return w
		}, 5},
	}
	seeds := int(testutil.Volume(80, 2000))
	for _, cfg := range configs {
		t.Run(cfg.name, func(t *testing.T) {
			var waited, atOnce, expired, pushedPast, decisions int
			for seed := uint64(1); seed <= uint64(seeds); seed++ {
				rng := rand.New(rand.NewPCG(seed, 14))
				s := randomLaneScript(rng, cfg.cap)
				decisions += len(s.events)
				got, gotTries := runLanes(t, cfg.make(), s)
				t0 := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC) // where every bubble starts
				m := playLaneModel(cfg.make(), t0, s, got, -1)
				m.advance(math.MaxInt64 / 2)
				fail := func(format string, args ...any) {
					t.Helper()
					t.Fatalf("seed %d (weights %v, priorities %v, floor %v, max wait %v): %s\nscript: %+v",
						seed, s.weights, s.priorities, s.floor, s.maxWait, fmt.Sprintf(format, args...), s.events)
				}
				for k, ev := range s.events {
					if ev.kind != evArrive {
						continue
					}
					g, w := got[ev.id], m.out[ev.id]
					switch {
					case w == g && !g.granted && g.at == ev.at && errors.Is(g.err, permits.ErrRateLimited):
						// Refused at once behind the queue: sound only if,
						// as things stood, the grant was too late.
						atOnce++
						h := playLaneModel(cfg.make(), t0, s, got, k)
						h.advance(int64(ev.at))
						n := &scheduler.Node[int]{Value: ev.id, Cost: ev.cost, Arrival: int64(ev.at)}
						h.f.Push(n, h.flows[ev.lane+1])
						h.expires = map[int]int64{}
						// Grant on, wake-up by wake-up, until its turn: one
						// grant at a far instant would make every later
						// head's turn come after it, never.
						for now := int64(ev.at); ; {
							wake := h.f.Grant(now, h)
							if _, done := h.out[ev.id]; done || wake == 0 {
								break
							}
							now = wake
						}
						o, granted := h.out[ev.id]
						at := o.at
						if tooLate := !granted || ev.deadline != 0 && at > ev.deadline || s.maxWait >= 0 && at-ev.at > s.maxWait; !tooLate {
							fail("arrival %d refused at once (%v), but as things stood it was granted at %v (deadline %v)", ev.id, g.err, at, ev.deadline)
						}
					case w.err == errDeadlineRefused || w.err == errMaxWaitRefused:
						var rl *permits.RateLimitError
						if !errors.As(g.err, &rl) || (w.err == errDeadlineRefused) != errors.Is(g.err, context.DeadlineExceeded) || g.at != ev.at {
							fail("arrival %d: got %v at %v, want a refusal at once (%v)", ev.id, g, g.at, w.err)
						}
					case w.err == errExpired:
						expired++
						if !errors.Is(g.err, permits.ErrRateLimited) || g.at != w.at {
							fail("arrival %d: got %v at %v, want its expiry at %v", ev.id, g, g.at, w.at)
						}
					case w.granted != g.granted || w.granted && w.at != g.at || !w.granted && (!errors.Is(g.err, w.err) || w.at != 0 && w.at != g.at):
						fail("arrival %d (lane %d, cost %d): got %v at %v, model says %v", ev.id, ev.lane, ev.cost, g, g.at, w)
					}
					if g.granted && g.at > ev.at {
						waited++
					}
					if errors.Is(g.err, context.DeadlineExceeded) && !errors.Is(g.err, permits.ErrRateLimited) {
						pushedPast++
					}
				}
				require.Equal(t, m.tries, gotTries, "seed %d: TryAcquire outcomes", seed)
			}
			testutil.ReportDecisions(t, int64(decisions))
			t.Logf("%d grants after waiting, %d refusals at once behind a queue, %d expiries, %d deadlines reached while queued", waited, atOnce, expired, pushedPast)
			require.Greater(t, waited, seeds*5, "the scripts must exercise the queue")
			require.Positive(t, atOnce, "refusals at once behind a queue")
		})
	}
}
