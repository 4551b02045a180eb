package grpclimit

import (
	"time"

	"github.com/sluicehq/sluice/actor"
)

// ShedOption configures NewShedder. Options are values; a nil one is
// ignored.
type ShedOption interface{ applyShed(*shedConfig) }

type shedConfig struct {
	pool       []actor.AdaptiveOption
	maxMethods int
	wait       bool
	maxWait    time.Duration
}

type shedOptionFunc func(*shedConfig)

func (f shedOptionFunc) applyShed(c *shedConfig) { f(c) }

// WithPoolOptions sets the options of every method's pool:
// actor.WithLimits (the default is 1, 20, 1000), actor.WithMaxQueue for
// WithShedWait. The Shedder names each pool after its method.
func WithPoolOptions(opts ...actor.AdaptiveOption) ShedOption {
	return shedOptionFunc(func(c *shedConfig) { c.pool = append(c.pool, opts...) })
}

// WithMaxMethods bounds the methods that get a pool of their own (n ≥ 1;
// DefaultMaxMethods); the methods seen after the table is full share one
// more, OverflowKey's.
func WithMaxMethods(n int) ShedOption {
	return shedOptionFunc(func(c *shedConfig) { c.maxMethods = n })
}

// WithShedWait makes a call that finds its method full wait for a slot,
// in FIFO order, within its deadline and for at most max (negative: as
// long as its deadline allows; 0: never), instead of being shed at once.
// A call whose wait runs out is shed; one cancelled while it waits gets
// codes.Canceled.
func WithShedWait(max time.Duration) ShedOption {
	return shedOptionFunc(func(c *shedConfig) { c.wait, c.maxWait = true, max })
}
