package grpclimit

import (
	"context"
	"errors"
	"time"

	"google.golang.org/grpc"

	"github.com/sluicehq/sluice/internal/configerr"
	"github.com/sluicehq/sluice/permits"
)

// Server limits the calls a gRPC server serves: each call is keyed (by
// method, peer, metadata or a mix; KeyFunc) and costs its key one unit of
// a keyed limiter (or WithCost's units), before its handler runs. Install
// both of its interceptors:
//
//	grpc.NewServer(grpc.ChainUnaryInterceptor(s.Unary), grpc.ChainStreamInterceptor(s.Stream))
//
// A call the limit refuses gets Refusal's status (codes.ResourceExhausted
// with RetryInfo and QuotaFailure) at once, or with WithWait waits its
// turn in FIFO order among its key's calls, within its deadline. A stream
// costs once, when it opens. A Server is safe for concurrent use.
type Server struct {
	lim      permits.KeyedLimiter[string]
	key      KeyFunc
	cfg      serverConfig
	refusals *refusals
}

// NewServer returns a Server that limits calls by lim under the key that
// key returns. lim is any permits.KeyedLimiter: a *keyed.Limiter[string]
// in process, or a *redislimit.Keyed for a limit a fleet of servers
// shares. It fails, matching permits.ErrInvalidConfig, for a nil lim or
// key, or an option out of range.
func NewServer(lim permits.KeyedLimiter[string], key KeyFunc, opts ...ServerOption) (*Server, error) {
	if lim == nil || key == nil {
		return nil, configerr.Errorf("grpclimit", "a nil limiter or key function")
	}
	cfg := serverConfig{policy: "default", cost: oneUnit}
	for _, o := range opts {
		if o != nil {
			o.applyServer(&cfg)
		}
	}
	if cfg.err != nil {
		return nil, cfg.err
	}
	return &Server{lim: lim, key: key, cfg: cfg, refusals: newRefusals(cfg.policy)}, nil
}

// Unary is a grpc.UnaryServerInterceptor: it admits the call, or answers
// it with a status without calling handler.
func (s *Server) Unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	p, err := s.admit(ctx, info.FullMethod)
	if err != nil {
		return nil, err
	}
	defer p.Release()
	return handler(ctx, req)
}

// Stream is a grpc.StreamServerInterceptor: it admits the stream once, as
// it opens, or ends it with a status without calling handler.
func (s *Server) Stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	p, err := s.admit(ss.Context(), info.FullMethod)
	if err != nil {
		return err
	}
	defer p.Release()
	return handler(srv, ss)
}

// admit keys the call and asks the limiter, the status error of a call
// that is not admitted.
func (s *Server) admit(ctx context.Context, method string) (permits.Permit, error) {
	if s.cfg.exempt != nil && s.cfg.exempt(ctx, method) {
		return permits.Permit{}, nil
	}
	k, err := s.key(ctx, method)
	if err != nil {
		return permits.Permit{}, s.serverError("", err)
	}
	p, err := s.decide(ctx, k, s.cfg.cost(ctx, method))
	if err != nil {
		return permits.Permit{}, s.serverError(k, err)
	}
	return p, nil
}

// decide asks the limiter: at once, or with WithWait within the call's
// deadline and the wait's bound.
func (s *Server) decide(ctx context.Context, k string, cost int64) (permits.Permit, error) {
	if !s.cfg.wait || s.cfg.maxWait == 0 {
		return s.lim.TryAcquire(k, cost)
	}
	wctx := ctx
	if s.cfg.maxWait > 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, s.cfg.maxWait)
		defer cancel()
	}
	p, err := s.lim.Acquire(wctx, k, cost)
	if err == nil || ctx.Err() != nil || wctx.Err() == nil {
		return p, err
	}
	if _, ok := permits.RetryAfter(err); ok {
		return p, err
	}
	// The bound ended with no wait predicted: a bound of a few ns can end
	// before the limiter looks. Room free now is nobody's (TryAcquire
	// never passes a waiter); without it, a refusal whose wait nobody
	// predicted, as short as a wait can be.
	if p, err2 := s.lim.TryAcquire(k, cost); err2 == nil || !errors.Is(err2, permits.ErrRateLimited) {
		return p, err2
	}
	return p, &permits.RateLimitError{RetryAfter: time.Nanosecond, Cause: err}
}

func oneUnit(context.Context, string) int64 { return 1 }
