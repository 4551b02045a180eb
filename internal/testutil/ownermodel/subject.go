package ownermodel

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/permits"
)

// Subject is an owner under test, as the script sees it. A domain is a
// lane (Config.Shared) or a key; a Limiter without lanes has one.
type Subject interface {
	Acquire(ctx context.Context, dom int, cost int64) (Grant, error)
	TryAcquire(dom int, cost int64) (Grant, error)
	Stats() permits.Stats
	Close() error
}

// Grant is what a subject returns for a grant.
type Grant struct {
	// At is the instant the owner granted at. The zero Time says the
	// subject cannot tell: the harness takes the delivery instant, which
	// a stalled owner makes late.
	At time.Time
	// P is the grant Refund and Settle take back, if the subject has them.
	P permits.Grant
}

// Refunder, Settler, Pauser and RateSetter are what a subject may offer
// besides; the script uses what it finds.
type (
	Refunder interface{ Refund(g Grant) bool }
	Settler  interface {
		Settle(g Grant, actual int64) error
	}
	Pauser     interface{ Pause(until time.Time) error }
	RateSetter interface {
		SetRate(dom int, rate algorithms.Rate) error
	}
)

// Config is an owner's configuration and what the script may do to it.
type Config struct {
	Rate    algorithms.Rate // the GCRA's rate, and the model's
	Burst   int64
	Domains int   // lanes or keys; 1 for a Limiter
	Shared  bool  // the domains share one rate (lanes), else one each (keys)
	Weights []int // with Shared: each lane's weight (all of one priority)
	Rates   []algorithms.Rate
	Stalls  bool // the owner stalls now and then (StallClock)
	Steps   int  // calls per script; 0: 150 to 300
	// RealTime says the script runs on the real clock (no bubble): only
	// the checks that hold at any speed are made (Check says which).
	RealTime bool
}

// interval is the time one unit takes to come back at rate r.
func interval(r algorithms.Rate) time.Duration {
	return time.Duration((int64(r.Per) + r.Count - 1) / r.Count)
}
