package retry

import (
	"context"
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// Policy is a retry configuration built once and used by many calls: the
// form for a hot path, and for a client that retries on behalf of its
// callers (an HTTP transport). Do is the one-off form.
//
// A Policy is safe for concurrent use, and holds no per-call state: the
// budget it spends is shared by design, and each Do keeps its own
// attempts, clock and jitter.
type Policy struct {
	cfg config
	seq atomic.Uint64 // numbers the Do calls, for WithJitterSeed's streams
}

// New returns a Policy configured by opts. It fails, matching
// ErrInvalidConfig, for a nil option or a setting outside its documented
// range.
func New(opts ...Option) (*Policy, error) {
	c, err := build(opts)
	if err != nil {
		return nil, err
	}
	return &Policy{cfg: c}, nil
}

// defaultPolicy serves Do without options.
var defaultPolicy = Policy{cfg: defaults()}

// Do runs fn until it succeeds or the policy says stop, with the defaults
// changed by opts: it is p.Do for a Policy built from opts. It applies and
// checks the options on every call (a few nanoseconds each), and building an
// option allocates it, so a hot path builds its options once, or better a
// Policy. An invalid option makes Do return an error matching
// ErrInvalidConfig without running fn.
func Do(ctx context.Context, fn func(context.Context) error, opts ...Option) error {
	if len(opts) == 0 {
		return defaultPolicy.Do(ctx, fn)
	}
	c, err := build(opts)
	if err != nil {
		return err
	}
	return c.do(ctx, fn, nil)
}

// Do runs fn, and runs it again after a failure while the policy allows:
//
//   - it returns nil as soon as an attempt succeeds;
//   - it returns ctx.Err() without running fn if ctx is already done;
//   - a failure the classifier calls Permanent is returned as it is, at once;
//   - otherwise it waits, then retries: the wait is the jittered back-off,
//     or longer if the error asks for more (Hint: a rate limiter's
//     RetryAfter, a breaker's, an HTTP Retry-After); it never retries
//     earlier than asked;
//   - it gives up, returning an *Error that wraps the last attempt's error,
//     when the attempts are used up (ErrAttemptsExhausted), when the wait
//     would end past ctx's deadline or the retry time limit (ErrOutOfTime,
//     at once, without waiting), when the budget refuses the retry
//     (ErrBudgetExhausted), or when ctx ends during a wait or an attempt
//     (the Reason is ctx.Err()): it stops waiting the moment ctx is done.
//
// A first attempt that succeeds costs a few nanoseconds beyond fn (no clock
// read, no allocation; bench/ has the figures), plus a budget's Deposit
// with WithBudget. A panic in fn, the classifier or the hook goes up
// unchanged. fn receives ctx itself; give each attempt a timeout inside fn
// if it needs one.
func (p *Policy) Do(ctx context.Context, fn func(context.Context) error) error {
	return p.cfg.do(ctx, fn, &p.seq)
}

// do is Do for configuration c; seq, if not nil, numbers the calls for the
// seeded jitter.
func (c *config) do(ctx context.Context, fn func(context.Context) error, seq *atomic.Uint64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if c.budget != nil {
		c.budget.Deposit()
	}
	// Every Do takes its number, whether it retries or not: the n-th Do
	// draws from stream n (WithJitterSeed).
	var stream uint64
	if c.seeded && seq != nil {
		stream = seq.Add(1) - 1
	}
	err := fn(ctx)
	if err == nil {
		return nil
	}
	return c.retry(ctx, fn, err, stream)
}

// retry is the loop after a first attempt that failed with err. It is out
// of do so that do stays small: the common case pays for none of this.
func (c *config) retry(ctx context.Context, fn func(context.Context) error, err error, stream uint64) error {
	now := time.Now()
	began := now // the retry time limit counts from here
	var j jitter
	if c.seeded {
		j.pcg, j.seeded = *rand.NewPCG(c.seed, stream), true
	}
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for attempt := 1; ; attempt++ {
		if c.classify(err) == Permanent {
			return err
		}
		if cerr := ctx.Err(); cerr != nil {
			return &Error{Reason: cerr, Attempts: attempt, Last: err}
		}
		if attempt >= c.maxAttempts {
			return &Error{Reason: ErrAttemptsExhausted, Attempts: attempt, Last: err}
		}
		wait := c.backoff(attempt, &j)
		if hint, ok := Hint(err); ok {
			wait = max(wait, hint)
		}
		// The checks that make Do give up at once, cheapest to undo first:
		// time (nothing spent), then the budget (a withdrawal).
		if attempt > 1 {
			now = time.Now()
		}
		resume := now.Add(wait)
		if c.maxElapsed > 0 && resume.Sub(began) > c.maxElapsed {
			return &Error{Reason: ErrOutOfTime, Attempts: attempt, Wait: wait, Last: err}
		}
		// An attempt that would start at the deadline would find ctx done:
		// the wait must end before it.
		if deadline, ok := ctx.Deadline(); ok && !resume.Before(deadline) {
			return &Error{Reason: ErrOutOfTime, Attempts: attempt, Wait: wait, Deadline: true, Last: err}
		}
		if c.budget != nil && !c.budget.TryWithdraw() {
			return &Error{Reason: ErrBudgetExhausted, Attempts: attempt, Budget: c.budget.Name(), Last: err}
		}
		if c.onRetry != nil {
			c.onRetry(Event{Attempt: attempt, Err: err, Wait: wait})
			// The wait runs from the checks above, so the hook's time counts
			// towards it: the retry still starts at resume, within the
			// limits, unless the hook itself runs past it.
			wait = max(time.Until(resume), 0)
		}
		if wait > 0 {
			if timer == nil {
				timer = time.NewTimer(wait)
			} else {
				timer.Reset(wait)
			}
			select {
			case <-timer.C:
			case <-ctx.Done():
				return &Error{Reason: ctx.Err(), Attempts: attempt, Last: err}
			}
		}
		// ctx may have ended with no wait to see it end (the hook cancelled
		// it, or the timer and ctx fired together): no attempt runs then.
		if cerr := ctx.Err(); cerr != nil {
			return &Error{Reason: cerr, Attempts: attempt, Last: err}
		}
		if err = fn(ctx); err == nil {
			return nil
		}
	}
}
