package httplimit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/permits"
	"github.com/sluicehq/sluice/retry"
)

// One RoundTrip of a Transport: its attempts, and what each holds until its
// response is handed back or discarded.

// What a discarded response's body may cost before it is closed unread:
// draining lets the connection be reused, and is bounded so that a huge or
// trickling body cannot hold a retry back.
const (
	maxDrain     = 64 << 10
	drainTimeout = time.Second
)

// call is the state of one RoundTrip, used by one goroutine at a time (the
// retry loop runs its attempts and its hook in RoundTrip's goroutine).
type call struct {
	t    *Transport
	req  *http.Request
	cost int64
	// Whether the request may be sent again after a 429 or 503, and after
	// a network error.
	retryResponse, retryError bool
	sent                      bool           // req.Body was handed to the base
	resp                      *http.Response // the response to hand back, when an attempt ends the loop
	attempts                  int            // attempts begun, refused ones included
}

// attemptError is what an attempt that did not end the loop returns to the
// retry loop. Its retry field is what the classifier answers.
type attemptError struct {
	err   error // the attempt's own error, or a *StatusError
	retry bool
	// For a 429 or 503 that may be retried: the response, with what it
	// holds until it is handed back or discarded.
	resp      *http.Response
	permit    permits.Permit
	cancel    context.CancelFunc
	discarded bool
}

func (e *attemptError) Error() string { return e.err.Error() }
func (e *attemptError) Unwrap() error { return e.err }

// attempt acquires, passes the breaker, sends one clone of the request and
// reads what the response says. It returns nil when the response is to be
// handed back (c.resp), and an *attemptError otherwise.
func (c *call) attempt(ctx context.Context) error {
	t := c.t
	c.attempts++
	actx, cancel := context.WithCancelCause(ctx) // ends what the attempt holds, when its body is done
	end := func() { cancel(nil) }
	r, err := c.request(actx)
	if err != nil {
		end()
		return &attemptError{err: err}
	}
	p, hp, err := c.wait(ctx, r)
	if err != nil {
		end()
		c.unsent(r)
		return &attemptError{err: err}
	}
	var done func(error)
	if t.br != nil {
		if done, err = t.br.Allow(); err != nil {
			t.n.breakerRejected.Add(1)
			end()
			c.unsent(r)
			giveBack(p)
			hp.end(nil, errNotSent)
			// Nothing was sent, but waiting out an open breaker's
			// RetryAfter (or a half-open one's timeout) inside RoundTrip
			// would hold the caller for as long: the refusal goes back at
			// once, with the breaker's RetryAfter.
			return &attemptError{err: err}
		}
	}
	if r.Body != nil && r.Body == c.req.Body {
		c.sent = true
	}
	resp, err := c.send(r, cancel)
	hp.end(resp, err) // the host's latency is its time to the headers
	if err != nil {
		end()
		if done != nil {
			done(err)
		}
		p.Release() // the rate stays spent: the request may have reached the API
		return &attemptError{err: err, retry: c.retryError && ctx.Err() == nil}
	}
	return c.answered(resp, p, done, end)
}

// wait waits for what r needs before it is sent: its host's pause, the
// limiter and its host's pool, in that order, and tells the Transport how
// long that took. On an error it gives back what it took.
func (c *call) wait(ctx context.Context, r *http.Request) (permits.Permit, *hostPermit, error) {
	t := c.t
	// The clone is made before, so that the instant waitHost reads (it
	// reads one anyway) starts the wait: one clock read more per attempt,
	// not two.
	start, err := t.waitHost(ctx, c.req)
	if err != nil {
		return permits.Permit{}, nil, err
	}
	p, err := t.lim.Acquire(ctx, c.cost)
	if err != nil {
		return permits.Permit{}, nil, err
	}
	hp, err := t.acquireHost(ctx, r)
	if err != nil {
		giveBack(p)
		return permits.Permit{}, nil, err
	}
	t.waited(time.Since(start))
	return p, hp, nil
}

// send sends r through the base, within the attempt timeout if there is
// one: past it, cancel ends the attempt with ErrAttemptTimeout.
func (c *call) send(r *http.Request, cancel context.CancelCauseFunc) (*http.Response, error) {
	t := c.t
	t.n.attempts.Add(1)
	if t.attemptLimit <= 0 {
		return t.base.RoundTrip(r)
	}
	timeout := fmt.Errorf("%w after %v: %w", ErrAttemptTimeout, t.attemptLimit, context.DeadlineExceeded)
	stop := time.AfterFunc(t.attemptLimit, func() { cancel(timeout) })
	resp, err := t.base.RoundTrip(r)
	if !stop.Stop() && err != nil {
		return nil, timeout
	}
	return resp, err
}

// answered reads what the response says: handed back (nil), or retried
// after its wait (an *attemptError).
func (c *call) answered(resp *http.Response, p permits.Permit, done func(error), end context.CancelFunc) error {
	t := c.t
	now := time.Now()
	code := resp.StatusCode
	t.n.responded(code)
	retried := t.statuses[code]
	var se *StatusError
	if retried || code >= 500 {
		se = &StatusError{StatusCode: code}
		se.Wait, se.HasWait = ParseWait(resp.Header, now)
		se.jitter = t.jitter(se.Wait)
	}
	if done != nil {
		if se != nil {
			done(se)
		} else {
			done(nil)
		}
	}
	t.settleFrom(resp, p)
	if !retried {
		c.resp = handBack(resp, p, end)
		return nil
	}
	switch {
	case code == http.StatusTooManyRequests:
		t.n.throttled.Add(1)
	case code >= 500:
		t.n.unavailable.Add(1)
	}
	tooLong := se.HasWait && se.Wait > t.maxPause
	if se.HasWait && se.Wait > 0 {
		t.n.pauses.Add(1)
		if tooLong {
			t.n.capped.Add(1)
		}
		t.pause(c.req, se, now, min(se.Wait, t.maxPause))
	}
	// A 502 or 504 says the request may have reached the API: retried
	// only where a network error would be.
	may := c.retryResponse
	if code == http.StatusBadGateway || code == http.StatusGatewayTimeout {
		may = c.retryError
	}
	if !may || tooLong {
		c.resp = handBack(resp, p, end)
		return nil
	}
	return &attemptError{err: se, retry: true, resp: resp, permit: p, cancel: end}
}

// request returns the clone of c.req for the next attempt, with a body
// from GetBody once the original was sent.
func (c *call) request(ctx context.Context) (*http.Request, error) {
	r := c.req.Clone(ctx)
	if c.sent && hasBody(c.req) {
		if c.req.GetBody == nil {
			return nil, errors.New("httplimit: the request's body cannot be sent again") // not retried: unreachable
		}
		b, err := c.req.GetBody()
		if err != nil {
			return nil, err
		}
		r.Body = b
	}
	return r, nil
}

// unsent closes the body of r, an attempt's request that was not sent, if
// GetBody made it; the original body is closed by finish.
func (c *call) unsent(r *http.Request) {
	if r.Body != nil && r.Body != c.req.Body {
		_ = r.Body.Close()
	}
}

// finish turns the retry loop's result into RoundTrip's, and closes the
// caller's body if it was never sent.
func (c *call) finish(err error) (*http.Response, error) {
	if !c.sent && c.req.Body != nil {
		_ = c.req.Body.Close()
	}
	if err == nil {
		return c.resp, nil
	}
	if errors.Is(err, retry.ErrBudgetExhausted) {
		c.t.n.refusedRetries.Add(1)
	}
	var a *attemptError
	if !errors.As(err, &a) {
		return nil, err // ctx was done before the first attempt, or the cost is invalid
	}
	if a.resp != nil && !a.discarded {
		if c.req.Context().Err() == nil {
			// Retrying is over (attempts, budget, time): the last 429 or
			// 503 goes back as it came.
			return handBack(a.resp, a.permit, a.cancel), nil
		}
		a.discard()
	}
	if re, ok := err.(*retry.Error); ok {
		re.Last = a.err // the caller sees the attempt's own error
		return nil, re
	}
	if c.attempts > 1 {
		return nil, &retry.Error{Reason: ErrNotRetried, Attempts: c.attempts, Last: a.err}
	}
	return nil, a.err
}

// settleFrom settles p with the cost the response says was used.
func (t *Transport) settleFrom(resp *http.Response, p permits.Permit) {
	if t.settle == nil {
		return
	}
	actual, ok := t.settle(resp)
	if !ok {
		return
	}
	if err := permits.Settle(p, actual); err != nil {
		t.n.settleFails.Add(1)
		return
	}
	t.n.settled.Add(1)
}

// giveBack returns what an attempt that was not sent took: the rate parts
// as far as their refund rule allows (a settlement at zero), and the pools.
func giveBack(p permits.Permit) {
	_ = permits.Settle(p, 0)
	p.Release()
}

// discard drains and closes the response of a 429 or 503 that is retried,
// and releases what it held.
func (e *attemptError) discard() {
	if e.resp == nil || e.discarded {
		return
	}
	e.discarded = true
	if body := e.resp.Body; body != nil { // a RoundTripper may leave it nil, as http.Client allows
		stop := time.AfterFunc(drainTimeout, e.cancel) // a body that trickles is cut off
		_, _ = io.CopyN(io.Discard, body, maxDrain)
		stop.Stop()
		_ = body.Close()
	}
	e.permit.Release()
	e.cancel()
}

// handBack returns resp with a body that releases p and ends the attempt's
// context once it is read to the end, fails, or is closed.
func handBack(resp *http.Response, p permits.Permit, cancel context.CancelFunc) *http.Response {
	switch resp.Body.(type) {
	case nil:
		p.Release()
		cancel()
		return resp
	case io.Writer:
		// A protocol switch (101) hands over the connection, which lives on
		// beyond this request: its context must not end.
		p.Release()
		return resp
	}
	if resp.Body == http.NoBody {
		p.Release()
		cancel()
		return resp
	}
	resp.Body = &body{rc: resp.Body, permit: p, cancel: cancel}
	return resp
}

// body is a response body that releases its permit when it is done.
type body struct {
	rc     io.ReadCloser
	permit permits.Permit
	cancel context.CancelFunc
	done   atomic.Bool
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err != nil {
		b.finish()
	}
	return n, err
}

func (b *body) Close() error {
	err := b.rc.Close()
	b.finish()
	return err
}

// finish runs once, whichever of EOF, a read error or Close comes first;
// after the end of the body or its Close, the end of the context can no
// longer cut the connection off.
func (b *body) finish() {
	if b.done.CompareAndSwap(false, true) {
		b.permit.Release()
		b.cancel()
	}
}
