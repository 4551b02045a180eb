package breaker

import (
	"fmt"
	"time"
)

// State is the state of a Breaker.
type State int

// The states of a Breaker.
const (
	Closed   State = iota // calls run; outcomes are counted
	Open                  // calls fail fast with an *OpenError
	HalfOpen              // a limited number of probes run
)

// String returns "closed", "open" or "half-open".
func (s State) String() string {
	switch s {
	case Closed:
		return "closed"
	case Open:
		return "open"
	case HalfOpen:
		return "half-open"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Transition is a change of state, as the WithOnTransition hook receives it.
type Transition struct {
	Name     string // the breaker's name (WithName), or ""
	From, To State
	At       time.Time // when the breaker changed state
	// Dropped is how many transitions, just before this one, were never
	// delivered because the hook fell behind (see WithOnTransition). When it
	// is not zero, From need not be the To of the transition delivered
	// before.
	Dropped int64
}
