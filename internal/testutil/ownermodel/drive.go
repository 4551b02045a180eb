package ownermodel

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/permits"
)

// NewSubject makes the owner under test on clock (the owners' clock:
// actor.WithClock, keyed.WithClock, redislimit.WithClock).
type NewSubject func(t *testing.T, clock *StallClock) Subject

// Play runs the script of seed against a subject made by newSubject: in
// a testing/synctest bubble (the subject is made inside it, as it must
// be), or on the real clock with RealTime. It returns the log, not yet
// checked. A rule broken while it ran (Stats between steps, a second
// refund that gave something back) is in the log's Failure.
func Play(t *testing.T, cfg Config, seed uint64, newSubject NewSubject) *Log {
	d := &driver{cfg: cfg, rng: rand.New(rand.NewPCG(seed, 2025)), cancels: map[*Call]context.CancelFunc{}}
	d.log = &Log{Config: cfg, Seed: seed}
	d.clock = NewStallClock(cfg.Stalls, seed, 3*interval(cfg.Rate), cfg.OwnerFrame)
	if cfg.RealTime {
		d.settle = func() {}
		d.play(t, newSubject)
	} else {
		d.settle = synctest.Wait
		synctest.Test(t, func(t *testing.T) { d.play(t, newSubject) })
	}
	d.finish()
	return d.log
}

// driver is one script's state. The calls' records are written by their
// goroutines under mu; the rest by the script's goroutine only.
type driver struct {
	cfg     Config
	rng     *rand.Rand
	log     *Log
	clock   *StallClock
	settle  func() // synctest.Wait in a bubble: every goroutine blocked
	s       Subject
	t0      time.Time
	mu      sync.Mutex
	wg      sync.WaitGroup
	blocked atomic.Int64 // Acquires started and not returned
	cancels map[*Call]context.CancelFunc
	closed  bool
	fail    func(format string, args ...any) // records the first failure: the script stops
}

func (d *driver) now() time.Duration { return time.Since(d.t0) }

func (d *driver) play(t *testing.T, newSubject NewSubject) {
	d.fail = func(format string, args ...any) {
		if d.log.Failure == "" {
			d.log.Failure = fmt.Sprintf(format, args...)
		}
	}
	d.t0 = time.Now()
	d.s = newSubject(t, d.clock)
	steps := d.cfg.Steps
	if steps == 0 {
		steps = 150 + d.rng.IntN(150)
	}
	for i := 0; i < steps && d.log.Failure == ""; i++ {
		d.advance()
		d.settle()
		d.checkStats(i)
		d.step(i, steps)
		d.settle()
	}
	d.close()
	d.wg.Wait()
	d.log.Stats = d.s.Stats()
	if a, ok := d.s.(Admitter); ok && d.cfg.RealTime {
		d.log.admissions(a.Admissions(d.t0), d.t0)
	}
	for _, cancel := range d.cancels {
		cancel()
	}
	d.log.Stalls = d.clock.Stalls(d.t0)
}

// advance sleeps as traffic comes: often not at all or within one unit's
// interval, sometimes for several, so that queues form and drain.
func (d *driver) advance() {
	T := int64(interval(d.cfg.Rate))
	switch x := d.rng.IntN(10); {
	case x < 2:
	case x < 7:
		time.Sleep(time.Duration(1 + d.rng.Int64N(T)))
	case x < 9:
		time.Sleep(time.Duration(1 + d.rng.Int64N(3*T)))
	default:
		time.Sleep(time.Duration(1 + d.rng.Int64N(10*T)))
	}
}

// step makes one call, chosen at random among what the subject offers.
func (d *driver) step(i, steps int) {
	switch x := d.rng.IntN(100); {
	case x < 34:
		d.acquire(d.rng.IntN(d.cfg.Domains), d.cost(), 0)
	case x < 44:
		d.cancel()
	case x < 62:
		d.try()
	case x < 72:
		d.refund()
	case x < 82:
		d.settleGrant()
	case x < 85:
		d.pause()
	case x < 88:
		d.setRate()
	case x < 99 || i < steps/2:
		d.acquire(d.rng.IntN(d.cfg.Domains), 1, 0)
	default:
		d.close()
	}
}

func (d *driver) cost() int64 {
	if d.rng.IntN(6) == 0 {
		return 1
	}
	return 1 + d.rng.Int64N(d.cfg.Burst)
}

// newCall records a call about to be made, in Seq order.
func (d *driver) newCall(kind Kind, dom int, cost int64) *Call {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := &Call{Seq: len(d.log.Calls) + 1, Kind: kind, Dom: dom, Cost: cost, Arrived: d.now(), Returned: -1}
	d.log.Calls = append(d.log.Calls, c)
	d.log.Decision++
	return c
}

// returned records what c's call returned, now.
func (d *driver) returned(c *Call, g Grant, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	c.Returned, c.Err = d.now(), err
	if err != nil {
		if r, ok := permits.RetryAfter(err); ok {
			c.Retry, c.HasRetry = r, true
		}
		return
	}
	c.Granted, c.grant, c.At, c.Exact = true, g, c.Returned, false
	if !g.At.IsZero() {
		c.At, c.Exact = g.At.Sub(d.t0), true
	}
}

// finish settles which delivered instants are exact: those a stall did
// not make late (a stalled owner delivers what fell due at its end).
func (d *driver) finish() {
	ends := map[time.Duration]bool{}
	for _, s := range d.log.Stalls {
		ends[s[1]] = true
	}
	for _, c := range d.log.Calls {
		if c.Granted && !c.Exact {
			c.Exact = !ends[c.At] && !d.cfg.RealTime
		}
	}
}
