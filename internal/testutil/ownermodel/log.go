package ownermodel

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/permits"
)

// Kind is what a call was.
type Kind uint8

const (
	KindAcquire Kind = iota
	KindTry
)

// Call is one Acquire or TryAcquire as the harness saw it. Instants are
// since the script's start.
type Call struct {
	Seq      int // the order calls were made in
	Kind     Kind
	Dom      int
	Cost     int64
	Arrived  time.Duration
	Deadline time.Duration // an Acquire's context deadline; 0: none
	Canceled time.Duration // when the harness cancelled it; 0: never
	Returned time.Duration // when the call returned
	Granted  bool
	At       time.Duration // the grant's instant
	Exact    bool          // At is the owner's instant, not a late delivery
	Err      error
	Retry    time.Duration // a refused TryAcquire's RetryAfter
	HasRetry bool
	ProbeOf  int // an Acquire sent right after TryAcquire ProbeOf (Seq); 0: none
	Refunded bool
	Settled  bool
	Actual   int64 // with Settled
	grant    Grant
}

// AtOnce reports whether c was refused without queuing: a rate limit
// error, which an Acquire gets at its arrival (no WithMaxWait here).
func (c *Call) AtOnce() bool { return !c.Granted && errors.Is(c.Err, permits.ErrRateLimited) }

// Left is when c stopped waiting: its grant, its context's end, Close.
func (c *Call) Left(closed time.Duration) time.Duration {
	switch {
	case c.Granted:
		return c.At
	case c.AtOnce():
		return c.Arrived
	case errors.Is(c.Err, permits.ErrClosed):
		return closed
	case c.Canceled > 0 && (c.Deadline == 0 || c.Canceled < c.Deadline):
		return c.Canceled
	case c.Deadline > 0:
		return c.Deadline
	}
	return c.Returned
}

// Used is how many units c's grant used: its cost, or what it settled at
// when that was less; 0 once refunded.
func (c *Call) Used() int64 {
	switch {
	case !c.Granted || c.Refunded:
		return 0
	case c.Settled && c.Actual < c.Cost:
		return c.Actual
	}
	return c.Cost
}

func (c *Call) String() string {
	kind := "acquire"
	if c.Kind == KindTry {
		kind = "try"
	}
	s := fmt.Sprintf("#%d %s dom %d cost %d arrived %v", c.Seq, kind, c.Dom, c.Cost, c.Arrived)
	if c.Granted {
		s += fmt.Sprintf(" granted at %v (exact %v)", c.At, c.Exact)
	} else {
		s += fmt.Sprintf(" returned %v err %v", c.Returned, c.Err)
	}
	if c.Refunded {
		s += " refunded"
	}
	if c.Settled {
		s += fmt.Sprintf(" settled at %d", c.Actual)
	}
	return s
}

// Pause is a Pause applied at At, holding grants until Until.
type Pause struct{ At, Until time.Duration }

// RateChange is a SetRate applied at At.
type RateChange struct {
	At   time.Duration
	Dom  int
	Rate algorithms.Rate
}

// Debt is a settlement above the grant's cost, charged at At.
type Debt struct {
	At    time.Duration
	Dom   int
	Units int64
}

// Log is what one script did and saw.
type Log struct {
	Config
	Seed     uint64
	Calls    []*Call
	Pauses   []Pause
	Rates    []RateChange
	Debts    []Debt
	Stalls   [][2]time.Duration // owner stalls, start and end
	Closed   time.Duration      // Close's instant; the end of the script if never
	Refunds  int                // Refunds that reported true
	Stats    permits.Stats      // at the end, after Close
	Decision int64              // calls made to the subject
	Failure  string             // a rule broken while the script ran
	Ops      []Op               // refunds, settles, pauses, rate changes, Close
	Admitted []*Call            // on the real clock, what an Admitter told
}

// Op is a call that is not an Acquire or TryAcquire, for the dump.
type Op struct {
	At   time.Duration
	What string
	Seq  int   // the grant's call, for a refund or a settle
	Arg  int64 // a settle's actual
	Out  any   // what it returned
}

// dump is the log, for a failure message.
func (l *Log) dump() string {
	var b strings.Builder
	for _, c := range l.Calls {
		fmt.Fprintln(&b, c)
	}
	for _, o := range l.Ops {
		fmt.Fprintf(&b, "%v: %s #%d %d -> %v\n", o.At, o.What, o.Seq, o.Arg, o.Out)
	}
	for _, p := range l.Pauses {
		fmt.Fprintf(&b, "pause at %v until %v\n", p.At, p.Until)
	}
	for _, r := range l.Rates {
		fmt.Fprintf(&b, "rate of dom %d at %v: %v\n", r.Dom, r.At, r.Rate)
	}
	for _, d := range l.Debts {
		fmt.Fprintf(&b, "debt of dom %d at %v: %d\n", d.Dom, d.At, d.Units)
	}
	for _, s := range l.Stalls {
		fmt.Fprintf(&b, "stall %v..%v\n", s[0], s[1])
	}
	fmt.Fprintf(&b, "closed at %v, stats %+v\n", l.Closed, l.Stats)
	return b.String()
}
