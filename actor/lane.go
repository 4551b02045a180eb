package actor

import (
	"context"
	"errors"
	"fmt"
	"math"
	"unicode"
	"unicode/utf8"

	"github.com/sluicehq/sluice/internal/configerr"
	"github.com/sluicehq/sluice/internal/sat"
	"github.com/sluicehq/sluice/permits"
	"github.com/sluicehq/sluice/scheduler"
)

// Lane is one tenant's share of a Limiter (issue 14): a permits.Limiter that
// spends its parent's rate, whose waiters are granted by weighted fair
// queueing against the other lanes' instead of in one FIFO. While several
// lanes have waiters, each is granted units (cost, not requests) in
// proportion to its weight; a lane with nobody waiting banks nothing, and
// its share goes to the busy lanes at once. Inside a lane the order is
// FIFO. Priorities are strict classes above the weights: a lane is served
// only while no lane of a higher priority waits, unless the parent's
// SetPriorityFloor keeps a share for the lower ones. docs/fairness.md has
// the maths.
//
// A Lane is a handle: it costs its parent's owner nothing while nobody
// waits in it, and nothing but its own fields (BenchmarkLaneBytes) at any
// time. Cancellation, deadlines, WithMaxWait, WithMaxQueue (over every
// lane), SetRate, SetBurst, Pause, Settle, Refund and Close are the
// parent's and apply to every lane alike; what changes is when a waiter is
// predicted to be granted, since a newcomer in another lane may go first:
// see Acquire. When nobody waits in any lane, a lane decides on the
// parent's lock-free path, as the parent does.
//
// A Lane is safe for concurrent use. It lives as long as its Limiter.
type Lane struct {
	lim      *Limiter
	name     string
	weight   int
	priority int
	// owned by the limiter's owner goroutine (laneset.go)
	flow   scheduler.Flow[*call]
	shadow laneShadow
}

// MaxLaneWeight is the largest weight of a Lane: 2^20.
const MaxLaneWeight = scheduler.MaxWeight

// MaxPriority is the highest priority of a Lane: priorities run from 0, the
// lowest and the default, to MaxPriority.
const MaxPriority = scheduler.Classes - 1

// MaxLaneName is the longest name of a Lane, in bytes.
const MaxLaneName = 128

// ErrLaneExists is matched by the error of Limiter.Lane for a name already
// taken with another weight or priority.
var ErrLaneExists = errors.New("sluice: a lane of that name exists with another weight or priority")

// LaneOption configures a Lane.
type LaneOption interface{ applyLane(*laneConfig) }

type laneConfig struct{ priority int }

type laneOptionFunc func(*laneConfig)

func (f laneOptionFunc) applyLane(c *laneConfig) { f(c) }

// WithPriority puts the lane in priority class p, from 0 (the lowest, the
// default) to MaxPriority: interactive requests above batch jobs, say.
func WithPriority(p int) LaneOption {
	return laneOptionFunc(func(c *laneConfig) { c.priority = p })
}

// Lane returns the lane called name with weight weight, creating it on the
// first call; a later call with the same name, weight and priority returns
// the same lane, so that a server may look a tenant's lane up on every
// request. Requests made on the Limiter itself are a lane of weight 1 at
// priority 0 of their own.
//
// It fails with an error matching permits.ErrInvalidConfig for an empty
// name, one longer than MaxLaneName bytes, one that is not valid UTF-8 or
// holds a control character, a weight outside [1, MaxLaneWeight] or a
// priority outside [0, MaxPriority]; with ErrLaneExists for a name taken
// with another weight or priority; and with permits.ErrClosed once the
// limiter is closed. Nil options are ignored.
//
// The first lane of a limiter switches its owner from one FIFO to the fair
// order, a round trip that keeps the waiters already queued, in order, in
// the limiter's own lane. A limiter that never has a lane keeps its FIFO
// and its costs as they were.
func (l *Limiter) Lane(name string, weight int, opts ...LaneOption) (*Lane, error) {
	var cfg laneConfig
	for _, o := range opts {
		if o != nil {
			o.applyLane(&cfg)
		}
	}
	if err := checkLane(name, weight, cfg.priority); err != nil {
		return nil, err
	}
	if l.rt.o.Closed() {
		return nil, permits.ErrClosed
	}
	if s := l.rate.lanes.Load(); s != nil {
		if v, ok := s.byName.Load(name); ok {
			return v.(*Lane).same(weight, cfg.priority)
		}
	}
	s, err := l.startedLanes()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.byName.Load(name); ok {
		return v.(*Lane).same(weight, cfg.priority)
	}
	ln := &Lane{lim: l, name: name, weight: weight, priority: cfg.priority}
	ln.flow.Init(int64(weight), cfg.priority)
	s.byName.Store(name, ln)
	return ln, nil
}

func checkLane(name string, weight, priority int) error {
	switch {
	case name == "":
		return configerr.Errorf("actor", "a lane needs a name")
	case len(name) > MaxLaneName:
		return configerr.Errorf("actor", "lane name of %d bytes, at most %d", len(name), MaxLaneName)
	case !utf8.ValidString(name):
		return configerr.Errorf("actor", "lane name %q is not valid UTF-8", name)
	case weight < 1 || weight > MaxLaneWeight:
		return configerr.Errorf("actor", "lane %q: weight must be in [1, %d], got %d", name, MaxLaneWeight, weight)
	case priority < 0 || priority > MaxPriority:
		return configerr.Errorf("actor", "lane %q: priority must be in [0, %d], got %d", name, MaxPriority, priority)
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return configerr.Errorf("actor", "lane name %q holds a control character", name)
		}
	}
	return nil
}

// same returns ln if it has this weight and priority.
func (ln *Lane) same(weight, priority int) (*Lane, error) {
	if ln.weight != weight || ln.priority != priority {
		return nil, fmt.Errorf("%w: lane %q has weight %d and priority %d, asked for %d and %d",
			ErrLaneExists, ln.name, ln.weight, ln.priority, weight, priority)
	}
	return ln, nil
}

// startedLanes returns the limiter's lanes, switching its owner to them the
// first time.
func (l *Limiter) startedLanes() (*laneSet, error) {
	s := l.lanesOnce()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started {
		// Callers are prompt from now on (Limiter.prompt): a little early
		// is harmless, late would leave a newcomer for the head's timer.
		l.rate.fair.Store(true)
		c := l.rt.newCallFor(context.Background(), opLanes, 0, l.rt.stamp(), false)
		if l.rt.roundTrip(context.Background(), c, true).status == stClosed {
			return nil, permits.ErrClosed
		}
		s.started = true
	}
	return s, nil
}

// lanesOnce returns the limiter's lane set, making it the first time; the
// owner does not use it before laneSet starts it.
func (l *Limiter) lanesOnce() *laneSet {
	if s := l.rate.lanes.Load(); s != nil {
		return s
	}
	l.rate.lanes.CompareAndSwap(nil, newLaneSet(l.rate))
	return l.rate.lanes.Load()
}

// SetPriorityFloor sets the share of the grants that lanes of lower
// priorities keep while a higher one has waiters: 0, the default, is
// strict priority (a lower lane waits for as long as a higher one is
// busy); 0.1 keeps a tenth for them, so that they never starve for good.
// Shares are of cost units, nested from the top: with priorities 2, 1 and
// 0 all waiting and a floor of 0.1, priority 2 has 90% of the grants, 1
// has 9% and 0 has 1%; with only 2 and 0 waiting, 90% and 10%
// (docs/fairness.md). Within a priority, the lanes share by weight.
//
// It fails with an error matching permits.ErrInvalidConfig for a share
// outside [0, 0.5] (above a half the lower priorities would come first),
// and with permits.ErrClosed once closed. Shares are kept to a millionth,
// and a positive share below that counts as one millionth.
// Before the limiter's first lane it only records the floor: a limiter
// without lanes keeps its FIFO.
func (l *Limiter) SetPriorityFloor(share float64) error {
	if !(share >= 0 && share <= 0.5) {
		return configerr.Errorf("actor", "priority floor must be in [0, 0.5], got %v", share)
	}
	if l.rt.o.Closed() {
		return permits.ErrClosed
	}
	s := l.lanesOnce()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.priorityFloor = int64(math.Round(share * scheduler.FloorScale))
	if share > 0 {
		// A floor asked for keeps the lower priorities from starving, however
		// small: it is never rounded down to strict priority.
		s.priorityFloor = max(s.priorityFloor, 1)
	}
	if !s.started {
		return nil // startLanes applies it
	}
	c := l.rt.newCallFor(context.Background(), opFloor, s.priorityFloor, l.rt.stamp(), false)
	if l.rt.roundTrip(context.Background(), c, true).status == stClosed {
		return permits.ErrClosed
	}
	return nil
}

// laneControl applies opLanes and opFloor on the owner, at the call's own
// reading: what was due by then is granted first, in the order that held
// before the change (a wake-up that ran late leaves due heads to the next).
func (r *runtime) laneControl(c *call, now int64) {
	at := min(max(c.arrival, 0), now)
	r.catchUp(at)
	s := r.pol.(*ratePolicy).lanes.Load()
	if r.lanes == nil {
		r.startLanes(s, at)
	}
	if c.op == opFloor {
		s.fair.SetFloor(c.node.Cost, at) // the floor travels as the call's cost
	}
	r.reply(c, stGranted, 0)
}

// startLanes moves the owner from its FIFO to the fair order of s: the
// waiters queued so far go, in order, into the limiter's own lane, with
// what the FIFO knew of its head. Their predictions were exact for a FIFO;
// from now on they are lower bounds, so a waiter with WithMaxWait is
// expired by the owner when its wait runs out, as every later waiter is.
func (r *runtime) startLanes(s *laneSet, at int64) {
	r.lanes = s
	s.fair.SetFloor(s.priorityFloor, at) // written before the opLanes call was sent
	s.fair.Adopt(&r.q, &s.parent.flow)   // even when empty: the FIFO's latest grant and hold (a Pause)
	if s.fair.Len() == 0 {
		return
	}
	r.pol.removed()
	s.drainOK = false
	if r.cfg.maxWait >= 0 {
		r.expiry.clear()
		for n := s.parent.flow.Head(); n != nil; n = n.Next() {
			r.expiry.add(n.Value, sat.After(n.Arrival, r.cfg.maxWait))
		}
	}
}

// Acquire is Limiter.Acquire in this lane: it waits until cost units of the
// parent's rate are granted to it, by the fair order between lanes and FIFO
// inside this one, and fails as the parent's Acquire does.
//
// One thing differs: the owner predicts a lower bound for the grant, not
// its instant, since a newcomer in another lane may later go first. A
// deadline before that bound fails at once with a *permits.RateLimitError
// that matches context.DeadlineExceeded; a later deadline that other lanes
// push the grant past ends the wait then, with ctx.Err(). WithMaxWait is
// kept either way: a bound beyond it is refused at once, and a waiter whose
// wait runs out is refused by the owner then.
func (ln *Lane) Acquire(ctx context.Context, cost int64) (permits.Permit, error) {
	return ln.lim.acquire(ctx, cost, ln)
}

// AcquireGrant is Acquire, returning what the parent's Refund and Settle
// need (the Grant is the parent's: either may take it back).
func (ln *Lane) AcquireGrant(ctx context.Context, cost int64) (permits.Grant, error) {
	return ln.lim.acquireGrant(ctx, cost, ln)
}

// TryAcquire is Limiter.TryAcquire in this lane: a permit if cost units are
// available now and nobody waits in any lane; it passes no waiter. A
// refusal's RetryAfter, while others wait, is the time until the queue of
// every lane could be empty: for an algorithm that gives units back at a
// steady rate (GCRA, token and leaky buckets), within one interval of it
// whatever the lanes' order; for others, a lower bound.
func (ln *Lane) TryAcquire(cost int64) (permits.Permit, error) { return ln.lim.tryAcquire(cost, ln) }

// TryAcquireGrant is TryAcquire, returning the permit as a Grant.
func (ln *Lane) TryAcquireGrant(cost int64) (permits.Grant, error) {
	return ln.lim.tryAcquireGrant(cost, ln)
}

// Wait is Acquire(ctx, 1).
func (ln *Lane) Wait(ctx context.Context) error {
	_, err := ln.Acquire(ctx, 1)
	return err
}

// Allow is Limiter.Allow in this lane.
func (ln *Lane) Allow() bool { return ln.lim.allow(ln) }

// Refund is the parent's Refund: the units come back to the shared rate.
// The lane's turn is not given back (its weighted share counts what it was
// granted).
func (ln *Lane) Refund(g permits.Grant) bool { return ln.lim.Refund(g) }

// Settle is the parent's Settle.
func (ln *Lane) Settle(g permits.Grant, actual int64) error { return ln.lim.Settle(g, actual) }

// Name returns the lane's name.
func (ln *Lane) Name() string { return ln.name }

// Weight returns the lane's weight.
func (ln *Lane) Weight() int { return ln.weight }

// Priority returns the lane's priority.
func (ln *Lane) Priority() int { return ln.priority }

// Limiter returns the limiter whose rate the lane shares: SetRate, Pause,
// Stats and Close are there.
func (ln *Lane) Limiter() *Limiter { return ln.lim }

var (
	_ permits.Limiter  = (*Lane)(nil)
	_ permits.Settler  = (*Lane)(nil)
	_ permits.Refunder = (*Lane)(nil)
)
