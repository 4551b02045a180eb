package keyed

import (
	"time"

	"github.com/sluicehq/sluice/actor"
)

// Clock is the seam through which the owners read time and sleep: the same
// interface as actor.Clock, so that one clock serves both packages. The
// default is package time, so testing/synctest works (create the Limiter
// inside the bubble); replace it only for simulations that drive time
// themselves.
type Clock = actor.Clock

// Timer is actor.Timer: the part of *time.Timer an owner uses, with the
// semantics of Go 1.23 and later (after Reset or Stop returns, no stale
// value is received from C).
type Timer = actor.Timer

type systemClock struct{}

func (systemClock) Now() time.Time                 { return time.Now() }
func (systemClock) NewTimer(d time.Duration) Timer { return systemTimer{time.NewTimer(d)} }

type systemTimer struct{ *time.Timer }

func (t systemTimer) C() <-chan time.Time { return t.Timer.C }
