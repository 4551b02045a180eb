package ownermodel

import (
	"context"
	"errors"
	"fmt"

	"github.com/sluicehq/sluice/permits"
)

// Counts is what Check verified, for a test's log and its floor on how
// much a script exercised.
type Counts struct {
	Grants, Waited, AtOnce, Canceled, Refunds int
	RetryAfters                               int   // RetryAfters checked
	ShareUnits                                int64 // units under the shares check
}

// Check holds l to every rule of the package doc. On the real clock
// (RealTime) only the model, the bound and Stats are checked: the order
// of arrivals and the instants of a refusal are the machine's.
func (l *Log) Check() (Counts, error) {
	var n Counts
	if l.Failure != "" {
		return n, errors.New(l.Failure)
	}
	checks := []func() error{l.checkModel, l.checkBound, l.checkStats}
	if !l.RealTime {
		checks = append(checks, l.checkFIFO, l.checkPauses)
	}
	for _, f := range checks {
		if err := f(); err != nil {
			return n, err
		}
	}
	if !l.RealTime {
		var err error
		if n.RetryAfters, err = l.checkRetryAfter(); err != nil {
			return n, err
		}
		if n.ShareUnits, err = l.checkShares(); err != nil {
			return n, err
		}
	}
	for _, c := range l.Calls {
		switch {
		case c.Granted:
			n.Grants++
			if c.At > c.Arrived {
				n.Waited++
			}
		case c.AtOnce():
			n.AtOnce++
		case canceled(c.Err):
			n.Canceled++
		}
	}
	n.Refunds = l.Refunds
	return n, nil
}

// canceled reports whether err is a waiter's context ending.
func canceled(err error) bool {
	return !errors.Is(err, permits.ErrRateLimited) &&
		(errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded))
}

// want is the Stats the calls of l add up to: Waiting is blocked, the
// Acquires not returned.
func (l *Log) want(blocked int) permits.Stats {
	var s permits.Stats
	for _, c := range l.Calls {
		if c.Returned < 0 {
			continue // not returned yet
		}
		switch {
		case c.Granted:
			s.Granted++
		case errors.Is(c.Err, permits.ErrRateLimited):
			s.Rejected++
		case canceled(c.Err):
			s.Canceled++
		}
	}
	s.Refunded = uint64(l.Refunds)
	s.Waiting = blocked
	return s
}

// checkStats: the Stats read once every call returned are exactly what
// the harness saw (on the real clock, Canceled at most that).
func (l *Log) checkStats() error {
	w := l.want(0)
	if l.RealTime && l.Stats.Canceled <= w.Canceled {
		// On the real clock a short deadline may pass before the Acquire
		// is made: it fails with ctx.Err() at once, never a waiter.
		w.Canceled = l.Stats.Canceled
	}
	if l.Stats != w {
		return fmt.Errorf("stats: %+v at quiescence, the calls add up to %+v", l.Stats, w)
	}
	return nil
}
