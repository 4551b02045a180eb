package httplimit

import (
	"context"
	"errors"
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
	actx, cancel := context.WithCancel(ctx) // ends what the attempt holds, when its body is done
	r, err := c.request(actx)
	if err != nil {
		cancel()
		return &attemptError{err: err}
	}
	p, err := t.lim.Acquire(ctx, c.cost)
	if err != nil {
		cancel()
		c.unsent(r)
		return &attemptError{err: err}
	}
	var done func(error)
	if t.br != nil {
		if done, err = t.br.Allow(); err != nil {
			cancel()
			c.unsent(r)
			giveBack(p)
			return &attemptError{err: err, retry: true} // nothing was sent: any request may go again
		}
	}
	if r.Body != nil && r.Body == c.req.Body {
		c.sent = true
	}
	t.n.attempts.Add(1)
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		cancel()
		if done != nil {
			done(err)
		}
		p.Release() // the rate stays spent: the request may have reached the API
		return &attemptError{err: err, retry: c.retryError && ctx.Err() == nil}
	}
	now := time.Now()
	code := resp.StatusCode
	backOff := code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable
	var se *StatusError
	if backOff || code >= 500 {
		se = &StatusError{StatusCode: code}
		if backOff {
			se.Wait, se.HasWait = ParseWait(resp.Header, now)
		}
	}
	if done != nil {
		if se != nil {
			done(se)
		} else {
			done(nil)
		}
	}
	t.settleFrom(resp, p)
	if !backOff {
		c.resp = handBack(resp, p, cancel)
		return nil
	}
	if code == http.StatusTooManyRequests {
		t.n.throttled.Add(1)
	} else {
		t.n.unavailable.Add(1)
	}
	tooLong := se.HasWait && se.Wait > t.maxPause
	if se.HasWait && se.Wait > 0 {
		t.n.pauses.Add(1)
		if tooLong {
			t.n.capped.Add(1)
		}
		t.pause(now.Add(min(se.Wait, t.maxPause)))
	}
	if !c.retryResponse || tooLong {
		c.resp = handBack(resp, p, cancel)
		return nil
	}
	return &attemptError{err: se, retry: true, resp: resp, permit: p, cancel: cancel}
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
