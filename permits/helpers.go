package permits

import "context"

// Do acquires cost units from lim with ctx, runs fn, and releases the
// permit when fn returns or panics. It returns the Acquire error without
// running fn, or fn's error. It is the Go form of a rate-limiting
// decorator:
//
//	err := permits.Do(ctx, lim, 1, func(ctx context.Context) error {
//		return client.Call(ctx, req)
//	}, permits.WithMaxWait(2*time.Second))
//
// WithMaxWait bounds the wait apart from ctx, so that a job is not granted
// near its deadline only to time out mid-call.
func Do(ctx context.Context, lim Limiter, cost int64, fn func(context.Context) error, opts ...Option) error {
	cfg := doConfig{maxWait: -1}
	for _, o := range opts {
		if o != nil {
			o.applyDo(&cfg)
		}
	}
	if cfg.maxWait >= 0 {
		lim = MaxWait(lim, cfg.maxWait)
	}
	p, err := lim.Acquire(ctx, cost)
	if err != nil {
		return err
	}
	defer p.Release()
	return fn(ctx)
}

// Wrap returns fn limited by lim: each call acquires cost units with its
// context, runs fn, and releases the permit when fn returns or panics. A
// failed Acquire returns T's zero value and the error, without calling fn.
//
//	complete := permits.Wrap(lim, 1, client.Complete)
//	answer, err := complete(ctx)
func Wrap[T any](lim Limiter, cost int64, fn func(context.Context) (T, error)) func(context.Context) (T, error) {
	return func(ctx context.Context) (T, error) {
		p, err := lim.Acquire(ctx, cost)
		if err != nil {
			var zero T
			return zero, err
		}
		defer p.Release()
		return fn(ctx)
	}
}

// FixedCost returns a Limiter that asks lim for n units whatever cost it is
// asked for (it still rejects a cost below 1, like every limiter): one
// request slot per call, however many tokens the call will use. Inside All
// it sets that part's cost:
//
//	lim := permits.All(permits.FixedCost(requests, 1), tokens, permits.FixedCost(pool, 1))
//	p, err := lim.Acquire(ctx, estimatedTokens)
//
// The permit it returns is lim's, so its Cost is n.
func FixedCost(lim Limiter, n int64) Limiter { return &fixedCost{lim: lim, n: n} }

type fixedCost struct {
	lim Limiter
	n   int64
}

func (f *fixedCost) Acquire(ctx context.Context, cost int64) (Permit, error) {
	if cost < 1 {
		return Permit{}, InvalidCost(cost)
	}
	return f.lim.Acquire(ctx, f.n)
}

func (f *fixedCost) TryAcquire(cost int64) (Permit, error) {
	if cost < 1 {
		return Permit{}, InvalidCost(cost)
	}
	return f.lim.TryAcquire(f.n)
}
