package redislimit

import (
	"time"

	"github.com/sluicehq/sluice/actor"
)

// systemClock is package time as an actor.Clock, the default.
type systemClock struct{}

func (systemClock) Now() time.Time                       { return time.Now() }
func (systemClock) NewTimer(d time.Duration) actor.Timer { return systemTimer{time.NewTimer(d)} }

type systemTimer struct{ *time.Timer }

func (t systemTimer) C() <-chan time.Time { return t.Timer.C }
