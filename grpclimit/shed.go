package grpclimit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/internal/configerr"
	"github.com/sluicehq/sluice/permits"
)

// Shedder is server-side load shedding: it bounds the calls in flight on
// each method by an actor.AdaptivePool of the method's own, whose limit a
// controller moves from the handlers' latency and their Unavailable and
// ResourceExhausted answers (docs/adaptive.md), and sheds what does not
// fit, before the handler runs, with codes.Unavailable and RetryInfo
// (Shed). Install both interceptors, after Server's when there is a rate
// limit too, so that a call over its quota never takes a slot:
//
//	grpc.NewServer(grpc.ChainUnaryInterceptor(s.Unary, shed.Unary), grpc.ChainStreamInterceptor(s.Stream, shed.Stream))
//
// A stream holds a slot for its life. The table holds at most
// WithMaxMethods methods (DefaultMaxMethods); the methods seen after it
// is full share one more pool (OverflowKey). A Shedder is safe for
// concurrent use; Close it to stop its pools' goroutines.
type Shedder struct {
	methods *pools
	wait    bool
	maxWait time.Duration
}

// DefaultMaxMethods is how many methods a Shedder gives a pool of their
// own unless WithMaxMethods says otherwise.
const DefaultMaxMethods = 256

var errNilController = configerr.Errorf("grpclimit", "an adaptive pool needs a controller constructor, got nil")

// NewShedder returns a Shedder that gives each method a pool with a
// controller from newController (one per method: a controller keeps
// state). It fails, matching permits.ErrInvalidConfig, for a nil
// newController, a bound below 1, or pool options actor.NewAdaptivePool
// refuses.
func NewShedder(newController func() actor.Controller, opts ...ShedOption) (*Shedder, error) {
	cfg := shedConfig{maxMethods: DefaultMaxMethods}
	for _, o := range opts {
		if o != nil {
			o.applyShed(&cfg)
		}
	}
	if cfg.maxMethods < 1 {
		return nil, configerr.Errorf("grpclimit", "WithMaxMethods must be at least 1, got %d", cfg.maxMethods)
	}
	t, err := newPools("grpclimit", newController, cfg.pool, cfg.maxMethods)
	if err != nil {
		return nil, err
	}
	return &Shedder{methods: t, wait: cfg.wait, maxWait: cfg.maxWait}, nil
}

// Unary is a grpc.UnaryServerInterceptor: it runs handler in a slot of
// the method's pool, or sheds the call without calling it.
func (s *Shedder) Unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	p, pm, err := s.admit(ctx, info.FullMethod)
	if err != nil {
		return nil, err
	}
	start, o := time.Now(), actor.Dropped // a panic: a handler's bug, not the method's load
	defer func() { done(p, pm, o, start) }()
	resp, err := handler(ctx, req)
	o = serverOutcome(ctx, err)
	return resp, err
}

// Stream is a grpc.StreamServerInterceptor: the stream holds a slot of its
// method's pool until its handler returns. Its outcome teaches the
// controller a load signal (Overload, Timeout) but never a latency: a
// stream's life is its caller's choice, not the server's service time.
func (s *Shedder) Stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	ctx := ss.Context()
	p, pm, err := s.admit(ctx, info.FullMethod)
	if err != nil {
		return err
	}
	o := actor.Dropped
	defer func() { p.Pool.Done(pm, o) }()
	err = handler(srv, ss)
	if o = serverOutcome(ctx, err); o == actor.Success {
		o = actor.Dropped
	}
	return err
}

// admit takes a slot of method's pool: at once, or with WithShedWait in
// FIFO order within the call's deadline and the bound.
func (s *Shedder) admit(ctx context.Context, method string) (*keyPool, permits.Permit, error) {
	p, err := s.methods.Get(method)
	if err != nil {
		return nil, permits.Permit{}, status.Error(codes.Unavailable, "grpclimit: "+err.Error())
	}
	var pm permits.Permit
	if !s.wait || s.maxWait == 0 {
		pm, err = p.Pool.TryAcquire(1)
	} else {
		wctx := ctx
		if s.maxWait > 0 {
			var cancel context.CancelFunc
			wctx, cancel = context.WithTimeout(ctx, s.maxWait)
			defer cancel()
		}
		pm, err = p.Pool.Acquire(wctx, 1)
	}
	switch {
	case err == nil:
		return p, pm, nil
	case ctx.Err() != nil:
		return nil, pm, status.FromContextError(ctx.Err()).Err()
	case errors.Is(err, permits.ErrRateLimited), errors.Is(err, context.DeadlineExceeded):
		return nil, pm, Shed(method, p.Pool.Limit(), retryDelay(p)).Err()
	}
	return nil, pm, status.Error(codes.Unavailable, "grpclimit: "+err.Error())
}

// retryDelay is the wait a shed call is told: the method's average call
// time, at least a millisecond. A slot frees when a call in flight ends,
// about one call time away; sooner, the client would meet a full method
// again.
func retryDelay(p *keyPool) time.Duration {
	return max(p.Latency(), time.Millisecond)
}

// Shed returns the status of a call shed because method had limit calls
// in flight: codes.Unavailable, as gRPC's status code guide has it for "a
// transient condition, which can be corrected by retrying with a
// backoff", the code clients' retry policies retry and another replica
// may not have (ResourceExhausted is a quota's: the client's own), and
// google.rpc.RetryInfo with wait (at least 1 ns).
func Shed(method string, limit int64, wait time.Duration) *status.Status {
	st := status.New(codes.Unavailable, fmt.Sprintf("grpclimit: %s has %d calls in flight, its limit now; retry after %v", method, limit, wait))
	return withRetryInfo(st, wait)
}

// serverOutcome is what a handler's result says of its method's load:
//   - the caller gone (its context cancelled), or Canceled: Dropped;
//   - its deadline past, or DeadlineExceeded: Timeout;
//   - Unavailable or ResourceExhausted, the handler's own refusals:
//     Overload;
//   - Unknown, Internal, DataLoss (a bug, a panic a recovery interceptor
//     turned into a status): Dropped, as httplimit's Shedder reads a 500;
//     their speed says nothing of the load;
//   - OK and every other code (an application's NotFound): Success.
func serverOutcome(ctx context.Context, err error) actor.Outcome {
	switch cerr := ctx.Err(); {
	case errors.Is(cerr, context.DeadlineExceeded):
		return actor.Timeout
	case cerr != nil:
		return actor.Dropped
	}
	switch status.Code(err) {
	case codes.Unknown, codes.Internal, codes.DataLoss:
		return actor.Dropped
	}
	return clientOutcome(err)
}

// Close stops the goroutines of the method pools; a call after it gets
// codes.Unavailable. It is idempotent and returns nil.
func (s *Shedder) Close() error {
	_ = s.methods.Close()
	return nil
}

// MethodConcurrency returns the stats of the pool of fullMethod
// (OverflowKey: the shared one), and false if it has none (yet).
func (s *Shedder) MethodConcurrency(fullMethod string) (actor.AdaptiveStats, bool) {
	return poolStats(s.methods, fullMethod)
}

// Methods returns how many methods have a pool of their own.
func (s *Shedder) Methods() int { return s.methods.Len() }
