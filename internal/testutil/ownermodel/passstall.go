package ownermodel

import (
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/actor"
)

// PassStall reads package time (so synctest drives it), but once armed,
// the next reading made by a goroutine with frame in its stack sleeps for
// d first: an owner descheduled in the middle of one step of its
// wake-up, named by the function's frame ("Schedule(": the fresh reading
// at a wake-up's end). It stalls once per Arm.
type PassStall struct {
	frame []byte
	d     time.Duration
	armed atomic.Bool
}

// NewPassStall returns a clock that stalls the reading made in frame for
// d, once per Arm.
func NewPassStall(frame string, d time.Duration) *PassStall {
	return &PassStall{frame: []byte(frame), d: d}
}

// Arm makes the next reading in the frame stall.
func (c *PassStall) Arm() { c.armed.Store(true) }

// Now is time.Now, after the armed stall if this reading is the one.
func (c *PassStall) Now() time.Time {
	if c.armed.Load() && inOwner(c.frame) && c.armed.CompareAndSwap(true, false) {
		time.Sleep(c.d)
	}
	return time.Now()
}

// NewTimer is time.NewTimer.
func (c *PassStall) NewTimer(d time.Duration) actor.Timer { return timer{time.NewTimer(d)} }

var _ actor.Clock = (*PassStall)(nil)
