package retry

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/breaker"
	"github.com/sluicehq/sluice/internal/configerr"
	"github.com/sluicehq/sluice/permits"
)

var (
	// ErrInvalidConfig is permits.ErrInvalidConfig, the one error that every
	// configuration error of sluice matches.
	//
	// Deprecated: match permits.ErrInvalidConfig, the same error.
	ErrInvalidConfig = configerr.ErrInvalid
	// ErrAttemptsExhausted is matched by the *Error of a Do that made its
	// last attempt (WithMaxAttempts) and failed.
	ErrAttemptsExhausted = errors.New("retry: attempts exhausted")
	// ErrBudgetExhausted is matched by the *Error of a Do whose retry the
	// retry budget refused (WithBudget).
	ErrBudgetExhausted = errors.New("retry: retry budget exhausted")
	// ErrOutOfTime is matched by the *Error of a Do that gave up at once
	// because the wait before its next attempt would end past ctx's deadline
	// or past the time Do may spend retrying (WithMaxElapsed). When the
	// deadline was the limit, the error matches context.DeadlineExceeded
	// too.
	ErrOutOfTime = errors.New("retry: no time left for the wait")
)

// Error is the error of a Do that gave up before a success. It matches its
// Reason and the last attempt's error with errors.Is and errors.As, so
// errors.Is(err, ErrBudgetExhausted) and errors.Is(err, io.EOF) can both
// hold, and errors.As(err, &openErr) finds a *breaker.OpenError that the
// last attempt returned.
type Error struct {
	// Reason is why Do stopped: ErrAttemptsExhausted, ErrBudgetExhausted,
	// ErrOutOfTime, or ctx's error (context.Canceled or
	// context.DeadlineExceeded) when ctx ended during a wait or an attempt.
	Reason error
	// Attempts is how many times fn ran.
	Attempts int
	// Wait is, for ErrOutOfTime, the wait the next attempt required: at
	// least what the last error asked for (see Hint).
	Wait time.Duration
	// Deadline reports, for ErrOutOfTime, that ctx's deadline was the limit
	// (rather than WithMaxElapsed); the error then matches
	// context.DeadlineExceeded.
	Deadline bool
	// Budget is the name of the retry budget that refused, for
	// ErrBudgetExhausted (budget.WithName).
	Budget string
	// Last is the error of the last attempt.
	Last error
}

func (e *Error) Error() string {
	s := e.Reason.Error()
	switch {
	case e.Reason == ErrOutOfTime && e.Deadline:
		s += " (" + e.Wait.String() + ", past ctx's deadline)"
	case e.Reason == ErrOutOfTime:
		s += " (" + e.Wait.String() + ", past the retry time limit)"
	case e.Reason == ErrBudgetExhausted && e.Budget != "":
		s += " (" + strconv.Quote(e.Budget) + ")"
	}
	return fmt.Sprintf("%s after %d attempt%s: %v", s, e.Attempts, plural(e.Attempts), e.Last)
}

// Unwrap returns the Reason, the last attempt's error and, when ctx's
// deadline was the limit, context.DeadlineExceeded.
func (e *Error) Unwrap() []error {
	if e.Deadline {
		return []error{e.Reason, context.DeadlineExceeded, e.Last}
	}
	return []error{e.Reason, e.Last}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// RetryAfterer is implemented by errors that say how long to wait before
// trying again: an HTTP response's Retry-After, a server's backoff hint. Do
// finds it anywhere in an error's tree (every error it wraps, errors.Join's
// included) and waits at least the longest such hint. ok is false when the
// error has no such hint.
type RetryAfterer interface {
	RetryAfter() (d time.Duration, ok bool)
}

// Hint returns the longest wait err asks for, and whether it asks for one:
// the largest of a RetryAfterer's RetryAfter, permits.RetryAfter(err) (a
// rate limiter's refusal) and a *breaker.OpenError's RetryAfter found in
// err's chain. A negative hint counts as zero.
func Hint(err error) (time.Duration, bool) {
	var d time.Duration
	found := false
	// What errors.As finds (an error's own As method included), then every
	// error of the tree, not only the first of each kind errors.As
	// would stop at: a wrapper without a hint may wrap one that has it,
	// and errors.Join may join several.
	var ra RetryAfterer
	if errors.As(err, &ra) {
		if h, ok := ra.RetryAfter(); ok {
			d, found = max(d, h), true
		}
	}
	var oe *breaker.OpenError
	if errors.As(err, &oe) && oe != nil {
		d, found = max(d, oe.RetryAfter), true
	}
	eachError(err, func(e error) {
		if ra, ok := e.(RetryAfterer); ok {
			if h, ok := ra.RetryAfter(); ok {
				d, found = max(d, h), true
			}
		}
		if h, ok := permits.RetryAfter(e); ok {
			d, found = max(d, h), true
		}
		if oe, ok := e.(*breaker.OpenError); ok && oe != nil {
			d, found = max(d, oe.RetryAfter), true
		}
	})
	return d, found
}

// eachError calls f for err and every error it wraps, depth first.
func eachError(err error, f func(error)) {
	for err != nil {
		f(err)
		switch u := err.(type) {
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				eachError(e, f)
			}
			return
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		default:
			return
		}
	}
}

// permanentError marks an error that must not be retried. It matches
// errPermanent, so that the classifier finds the mark with errors.Is, which
// unlike errors.As needs no pointer to escape.
type permanentError struct{ err error }

var errPermanent = errors.New("retry: permanent")

func (e *permanentError) Error() string        { return e.err.Error() }
func (e *permanentError) Unwrap() error        { return e.err }
func (e *permanentError) Is(target error) bool { return target == errPermanent }

// MarkPermanent wraps err so that DefaultClassifier calls it Permanent:
// Do returns it, still wrapped (errors.Is and errors.As see through it),
// without retrying. MarkPermanent(nil) is nil.
func MarkPermanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err}
}
