package grpclimit

import (
	"context"
	"errors"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/permits"
)

// DefaultMaxTargets is how many targets a Client's adaptive concurrency
// gives a pool of their own; the targets after them share one more.
const DefaultMaxTargets = 256

// WithAdaptiveConcurrency limits the attempts in flight to each target
// (ClientConn.Target) by an actor.AdaptivePool of its own, made at the
// target's first call with a controller from newController (one per
// target: a controller keeps state) and opts (actor.WithLimits; the
// default is 1, 20, 1000): httplimit's Transport option of the same name,
// for gRPC. An attempt waits for it in FIFO order, within its deadline,
// after the limiter and before the breaker, and holds it until its answer
// comes; the pool learns the target's latency from it, and its status as
// clientOutcome reads it. A stream holds it for its life and teaches only
// its load signals, not a latency. Close the Client to stop the pools'
// goroutines. NewClient fails, matching permits.ErrInvalidConfig, for a
// nil newController or options actor.NewAdaptivePool refuses.
func WithAdaptiveConcurrency(newController func() actor.Controller, opts ...actor.AdaptiveOption) ClientOption {
	return clientOptionFunc(func(c *clientConfig) {
		c.adaptive, c.newCtl, c.adaptiveOpts = true, newController, opts
	})
}

// clientOutcome is what a call's status says of its target's load:
// ResourceExhausted and Unavailable (a quota's refusal, a shed call) are
// Overload, DeadlineExceeded is Timeout, Canceled (the caller's doing) is
// Dropped, and OK and every other code are Success: the server answered,
// and how fast is what the controller learns from.
func clientOutcome(err error) actor.Outcome {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return actor.Timeout
	case errors.Is(err, context.Canceled):
		return actor.Dropped
	}
	switch status.Code(err) {
	case codes.ResourceExhausted, codes.Unavailable:
		return actor.Overload
	case codes.DeadlineExceeded:
		return actor.Timeout
	case codes.Canceled:
		return actor.Dropped
	}
	return actor.Success
}

// targetSlot is what an attempt holds of its target's pool (p nil: the
// Client has no pools). A value, not a pointer: an attempt costs no
// allocation for it.
type targetSlot struct {
	p     *keyPool
	pm    permits.Permit
	start time.Time
}

// acquireTarget waits for target's pool, if the Client has them.
func (c *Client) acquireTarget(ctx context.Context, target string) (targetSlot, error) {
	if c.targetPools == nil {
		return targetSlot{}, nil
	}
	p, err := c.targetPools.Get(target)
	if err != nil {
		return targetSlot{}, err
	}
	pm, err := p.Pool.Acquire(ctx, 1)
	if err != nil {
		return targetSlot{}, err
	}
	return targetSlot{p: p, pm: pm, start: time.Now()}, nil
}

// end reports an attempt's outcome, err its status error; a stream
// reports its load signals only.
func (s targetSlot) end(err error, stream bool) {
	if s.p == nil {
		return
	}
	o := clientOutcome(err)
	if stream && o == actor.Success {
		o = actor.Dropped
	}
	done(s.p, s.pm, o, s.start)
}

// drop ends an attempt that was never sent: it says nothing of the target.
func (s targetSlot) drop() {
	if s.p != nil {
		s.p.Pool.Done(s.pm, actor.Dropped)
	}
}

// TargetConcurrency returns the stats of target's adaptive pool
// (WithAdaptiveConcurrency; OverflowKey: the shared one), and false if it
// has none (yet).
func (c *Client) TargetConcurrency(target string) (actor.AdaptiveStats, bool) {
	if c.targetPools == nil {
		return actor.AdaptiveStats{}, false
	}
	return poolStats(c.targetPools, target)
}

// Close stops the goroutines of the per-target adaptive pools
// (WithAdaptiveConcurrency); a call after it fails with codes.Unavailable,
// matching permits.ErrClosed. Without that option it does nothing. It is
// idempotent and returns nil.
func (c *Client) Close() error {
	if c.targetPools != nil {
		_ = c.targetPools.Close()
	}
	return nil
}
