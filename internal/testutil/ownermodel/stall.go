package ownermodel

import (
	"bytes"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/actor"
)

// StallClock reads package time (so synctest drives it), but now and then
// a reading by an owner goroutine sleeps first: a scheduler that
// descheduled the owner, a GC pause. Callers' readings never stall. Safe
// for concurrent use; keyed's shards share one.
type StallClock struct {
	on      bool
	max     time.Duration // a stall lasts 1ns to max
	mu      sync.Mutex
	rng     *rand.Rand
	spans   [][2]time.Time
	stalled atomic.Int32 // owners asleep in a stall now
	frame   []byte
}

// NewStallClock returns a clock that stalls one owner reading in 40 when
// on, for up to max. An owner is a goroutine with frame in its stack
// ("" : internal/owner's loop, where actor's and keyed's owners run).
func NewStallClock(on bool, seed uint64, max time.Duration, frame string) *StallClock {
	c := &StallClock{on: on, max: max, rng: rand.New(rand.NewPCG(seed, 25)), frame: ownerFrame}
	if frame != "" {
		c.frame = []byte(frame)
	}
	return c
}

// Now is time.Now, after a stall now and then in an owner.
func (c *StallClock) Now() time.Time {
	if c.on && inOwner(c.frame) {
		if d := c.draw(); d > 0 {
			start := time.Now()
			c.stalled.Add(1)
			time.Sleep(d)
			c.stalled.Add(-1)
			c.mu.Lock()
			c.spans = append(c.spans, [2]time.Time{start, time.Now()})
			c.mu.Unlock()
		}
	}
	return time.Now()
}

func (c *StallClock) draw() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rng.IntN(40) != 0 {
		return 0
	}
	return time.Duration(1 + c.rng.Int64N(int64(c.max)))
}

// Stalling reports whether an owner is in a stall now.
func (c *StallClock) Stalling() bool { return c.stalled.Load() > 0 }

// Stalls returns the stalls so far, since t0.
func (c *StallClock) Stalls(t0 time.Time) [][2]time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([][2]time.Duration, len(c.spans))
	for i, s := range c.spans {
		out[i] = [2]time.Duration{s[0].Sub(t0), s[1].Sub(t0)}
	}
	return out
}

// NewTimer is time.NewTimer.
func (c *StallClock) NewTimer(d time.Duration) actor.Timer { return timer{time.NewTimer(d)} }

type timer struct{ *time.Timer }

func (t timer) C() <-chan time.Time { return t.Timer.C }

// ownerFrame is in the stack of every owner goroutine of actor and keyed
// (internal/owner's loop).
var ownerFrame = []byte("internal/owner.(*Owner[...]).run(")

// inOwner reports whether the calling goroutine has frame in its stack.
func inOwner(frame []byte) bool {
	buf := make([]byte, 4096)
	return bytes.Contains(buf[:runtime.Stack(buf, false)], frame)
}

var _ actor.Clock = (*StallClock)(nil)
