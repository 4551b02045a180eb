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

// Admitter is a subject that tells, after the script, every admission
// its owner made, at the owner's own clock (redislimit: Redis TIME, from
// its grant hook). On the real clock (RealTime) the model and the bound
// are checked on these, since a call's own instants are the machine's.
type Admitter interface {
	Admissions(t0 time.Time) []Admission
}

// Admission is one admission an Admitter saw.
type Admission struct {
	At   time.Time
	Cost int64
}

// Config is an owner's configuration and what the script may do to it.
type Config struct {
	Rate    algorithms.Rate // the GCRA's rate, and the model's
	Burst   int64
	Domains int   // lanes or keys; 1 for a Limiter
	Shared  bool  // the domains share one rate (lanes), else one each (keys)
	Weights []int // with Shared: each lane's weight (all of one priority)
	Rates   []algorithms.Rate
	Stalls  bool // the owner stalls now and then (StallClock)
	// Resolution is how finely the owner places grants: 0 for exact
	// instants; redislimit's, a microsecond (Redis counts in whole µs,
	// rounded up), so two grants d apart were admitted less than d +
	// Resolution apart.
	Resolution time.Duration
	// RetryLowerBound says a TryAcquire's RetryAfter behind waiters is
	// documented as a lower bound only (lanes: on the queue being empty,
	// docs/fairness.md; redislimit: the wait behind this process's
	// reservations); only a refusal behind nobody is then held to the
	// wait it announces.
	RetryLowerBound bool
	// StallsDelay says the owner decides at its own reading rather than
	// at the caller's stamp (redislimit: at Redis's clock, when the
	// script runs), so that a stall makes a wait longer.
	StallsDelay bool
	// OwnerFrame names the owner goroutine's loop in a stack, for the
	// stalls; "": internal/owner's.
	OwnerFrame string
	Steps      int // calls per script; 0: 150 to 300
	// RealTime says the script runs on the real clock (no bubble): only
	// the checks that hold at any speed are made (Check says which).
	RealTime bool
}

// interval is the time one unit takes to come back at rate r.
func interval(r algorithms.Rate) time.Duration {
	return time.Duration((int64(r.Per) + r.Count - 1) / r.Count)
}
