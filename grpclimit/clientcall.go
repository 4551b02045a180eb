package grpclimit

import (
	"context"
	"errors"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluicehq/sluice/breaker"
	"github.com/sluicehq/sluice/internal/pause"
	"github.com/sluicehq/sluice/permits"
	"github.com/sluicehq/sluice/retry"
)

// clientCall is the state of one call, used by one goroutine at a time
// (the retry loop runs its attempts and its hook in the caller's).
type clientCall struct {
	c        *Client
	target   string
	cost     int64
	attempts int // attempts begun, refused ones included
	// For a stream: what the open stream holds until it ends.
	keep   bool
	permit permits.Permit
	done   func(error)
	slot   targetSlot
}

// attemptError is what an attempt that may be retried returns to the
// retry loop: the server's status error, and the wait it asked for.
type attemptError struct {
	err     error
	wait    time.Duration
	hasWait bool
	jitter  time.Duration
}

func (e *attemptError) Error() string { return e.err.Error() }
func (e *attemptError) Unwrap() error { return e.err }

// RetryAfter is the server's RetryInfo with a jitter above it, so that
// package retry waits at least that long (retry.RetryAfterer).
func (e *attemptError) RetryAfter() (time.Duration, bool) { return e.wait + e.jitter, e.hasWait }

// attempt waits out the target's pause, acquires, passes the breaker and
// sends once. It returns nil, the error to hand back as it is, or an
// *attemptError to retry.
func (a *clientCall) attempt(ctx context.Context, send func(context.Context) error) error {
	c := a.c
	a.attempts++
	if err := c.waitTarget(ctx, a.target); err != nil {
		return localError(err)
	}
	p, err := c.lim.Acquire(ctx, a.cost)
	if err != nil {
		return localError(err)
	}
	slot, err := c.acquireTarget(ctx, a.target)
	if err != nil {
		giveBack(p) // nothing was sent
		return localError(err)
	}
	var done func(error)
	if c.br != nil {
		if done, err = c.br.Allow(); err != nil {
			slot.drop()
			giveBack(p)
			return localError(err)
		}
	}
	c.n.attempts.Add(1)
	err = c.send(ctx, send)
	if err == nil && a.keep {
		a.permit, a.done, a.slot = p, done, slot // the stream holds them until it ends
		return nil
	}
	if done != nil {
		done(troubleOf(err))
	}
	slot.end(err, false)
	p.Release()
	if err == nil {
		return nil
	}
	return c.answered(a.target, err)
}

// send sends one attempt, within the attempt timeout if there is one.
func (c *Client) send(ctx context.Context, send func(context.Context) error) error {
	if c.attemptLimit <= 0 {
		return send(ctx)
	}
	actx, cancel := context.WithTimeout(ctx, c.attemptLimit)
	defer cancel()
	return send(actx)
}

// answered reads what a failed attempt's status says: handed back as it
// is, or retried after its wait (an *attemptError).
func (c *Client) answered(target string, err error) error {
	st, _ := status.FromError(err)
	code := st.Code()
	wait, hasWait := RetryDelay(err)
	if !c.retried(code) || code == codes.ResourceExhausted && !hasWait {
		return err
	}
	if hasWait && wait > 0 {
		c.n.pauses.Add(1)
		if wait > c.maxPause {
			c.n.capped.Add(1)
		}
		c.pause(target, time.Now().Add(min(wait, c.maxPause)))
		if wait > c.maxPause {
			return err // asked for longer than the cap: not retried
		}
	}
	return &attemptError{err: err, wait: wait, hasWait: hasWait, jitter: c.jitter(wait)}
}

func (c *Client) retried(code codes.Code) bool { return int(code) < len(c.codes) && c.codes[code] }

// troubleOf is what the breaker is told of an attempt's outcome: the
// server's trouble as the error, anything else (an application's own
// error: NotFound, InvalidArgument) as a success.
func troubleOf(err error) error {
	switch status.Code(err) {
	case codes.OK, codes.InvalidArgument, codes.NotFound, codes.AlreadyExists, codes.PermissionDenied,
		codes.FailedPrecondition, codes.Aborted, codes.OutOfRange, codes.Unimplemented, codes.Unauthenticated:
		return nil
	}
	return err
}

// pause pauses target, or with WithPauseLimiter every part of the limiter
// that can pause, until the instant until.
func (c *Client) pause(target string, until time.Time) {
	if !c.pauseLimiter {
		c.targets.Pause(target, until)
		return
	}
	for _, p := range c.pausers {
		_ = p.Pause(until) // a closed part fails its Acquire anyway
	}
}

// waitTarget waits until target is no longer paused, and a jitter more. A
// pause that ends after ctx's deadline fails at once, with the wait, as a
// limiter's refusal does.
func (c *Client) waitTarget(ctx context.Context, target string) error {
	if c.pauseLimiter {
		return nil // the limiter carries the pause, in its FIFO order
	}
	now := time.Now()
	until, ok := c.targets.Until(target, now)
	if !ok {
		return nil
	}
	return pause.Wait(ctx, now, until, c.jitter)
}

// finish turns the retry loop's result into the call's.
func (a *clientCall) finish(err error) error {
	if err == nil {
		return nil
	}
	if re, ok := err.(*retry.Error); ok {
		var ae *attemptError
		if errors.As(re.Last, &ae) {
			re.Last = ae.err // the caller sees the attempt's own error
		}
		return re
	}
	if ae, ok := err.(*attemptError); ok {
		err = ae.err
	}
	if _, ok := status.FromError(err); !ok {
		err = localError(err) // ctx was done before the first attempt
	}
	if a.attempts > 1 {
		return &retry.Error{Reason: ErrNotRetried, Attempts: a.attempts, Last: err}
	}
	return err
}

// giveBack returns what an attempt that was not sent took: the rate parts
// as far as their refund rule allows (a settlement at zero), and the pools.
func giveBack(p permits.Permit) {
	_ = permits.Settle(p, 0)
	p.Release()
}

// localError is an error of the client's own making (a limiter's refusal,
// an open breaker, the caller's context) as a status error that still
// matches the error it wraps: ResourceExhausted or Unavailable with
// RetryInfo for a refusal that says how long, the context's code for a
// context error.
func localError(err error) error {
	var code codes.Code
	var open *breaker.OpenError
	switch {
	case errors.As(err, &open):
		code = codes.Unavailable
	case errors.Is(err, permits.ErrRateLimited):
		code = codes.ResourceExhausted
	case errors.Is(err, context.DeadlineExceeded):
		code = codes.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		code = codes.Canceled
	case errors.Is(err, permits.ErrClosed):
		code = codes.Unavailable
	default:
		code = codes.Internal
	}
	st := status.New(code, "grpclimit: "+err.Error())
	if wait, ok := retry.Hint(err); ok {
		st = withRetryInfo(st, wait)
	}
	return &statusError{st: st, err: err}
}

// statusError is a status error that wraps the error it reports.
type statusError struct {
	st  *status.Status
	err error
}

func (e *statusError) Error() string              { return e.st.Message() }
func (e *statusError) Unwrap() error              { return e.err }
func (e *statusError) GRPCStatus() *status.Status { return e.st }
