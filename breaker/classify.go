package breaker

import (
	"context"
	"errors"
	"fmt"
)

// Outcome is how a finished call counts.
type Outcome int8

// The outcomes of a call.
const (
	// Success resets the consecutive failures (count mode), counts as a
	// call (rate mode) and, for a probe, counts towards closing.
	Success Outcome = iota
	// Failure counts towards opening; a probe that fails reopens the
	// breaker.
	Failure
	// Ignored does not count at all: it neither resets nor adds to the
	// consecutive failures, is not a call in rate mode, and a probe that
	// ends with it frees its slot without closing the breaker. For outcomes
	// that say nothing about the downstream: the caller gave up, or a
	// 429 from a quota that is not the downstream's health.
	Ignored
)

// String returns "success", "failure" or "ignored".
func (o Outcome) String() string {
	switch o {
	case Success:
		return "success"
	case Failure:
		return "failure"
	case Ignored:
		return "ignored"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// DefaultClassifier is the classifier a Breaker uses unless told otherwise:
// context.Canceled (and errors wrapping it) is Ignored, since the caller
// gave up, which says nothing about the downstream; every other error is a
// Failure, context.DeadlineExceeded included (the downstream was too slow
// for the caller). A classifier only sees non-nil errors: nil is always a
// Success.
func DefaultClassifier(err error) Outcome {
	if errors.Is(err, context.Canceled) {
		return Ignored
	}
	return Failure
}

// isFailureClassifier adapts a WithIsFailure function: what it claims is a
// Failure, context.Canceled it does not claim is Ignored, the rest Success.
func isFailureClassifier(isFailure func(error) bool) func(error) Outcome {
	return func(err error) Outcome {
		switch {
		case isFailure(err):
			return Failure
		case errors.Is(err, context.Canceled):
			return Ignored
		}
		return Success
	}
}

// classify returns how a call that ended with err counts; slow reports that
// it took longer than the slow-call threshold, which makes a success a
// Failure. It runs the classifier, which must be called without b.mu held;
// an outcome outside the three counts as a Failure.
func (b *Breaker) classify(err error, slow bool) Outcome {
	o := Success
	if err != nil {
		o = b.cfg.classify(err)
		if o != Success && o != Ignored {
			o = Failure
		}
	}
	if slow && o == Success {
		o = Failure
	}
	return o
}
