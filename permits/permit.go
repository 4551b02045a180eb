package permits

import (
	"context"
	"sync/atomic"
)

// Permit is the right to use Cost units of a limiter's capacity. It is a
// small value: copy it freely. Release gives concurrency capacity back; for a
// rate limiter's permit it does nothing, since rate capacity comes back with
// time. The zero Permit has cost 0 and Release does nothing.
type Permit struct {
	cost  int64
	token *Token // nil for a rate permit; it names the owner
	gen   uint64 // token's generation when the permit was made
}

// A Permit is three words: small enough for Go to pass and return it in
// registers, which a fourth word (the owner, now kept in the token) would
// prevent on every Acquire and Release.

// Cost returns the units the permit holds.
func (p Permit) Cost() int64 { return p.cost }

// Release gives the permit's capacity back to a concurrency limiter. It is
// idempotent: only the first Release of a permit (or of any copy of it) has
// an effect. Safe for concurrent use.
func (p Permit) Release() {
	// The owner is read only by the release that wins the CAS; the token is
	// not reused before ReleasePermit returns it to its limiter.
	if t := p.token; t != nil && t.gen.CompareAndSwap(p.gen, p.gen+1) {
		t.owner.ReleasePermit(p)
	}
}

// Releaser is implemented by limiters whose permits hold capacity until they
// are released (a concurrency pool). Limiter implementations use it with
// NewPermit; callers use Permit.Release.
type Releaser interface {
	// ReleasePermit gives p's capacity back. Permit.Release calls it at most
	// once per Token.
	ReleasePermit(p Permit)
}

// Token makes a permit's Release idempotent across copies: each release
// moves the token to its next generation, and a permit releases only from
// the generation it was made in. A limiter may therefore reuse a token for
// a new permit once the old one is released; stale copies stay inert.
type Token struct {
	gen   atomic.Uint64
	owner Releaser // set by NewPermit
	// Value is for the limiter: an identity, a slot, a tracking record.
	Value any
}

// NewPermit returns a permit of cost units. A rate limiter passes a nil
// owner (Release is a no-op, and token is ignored); a concurrency limiter
// passes itself and a token not held by any unreleased permit, so that
// Release calls owner.ReleasePermit exactly once. A nil token with an owner
// allocates one.
func NewPermit(cost int64, owner Releaser, token *Token) Permit {
	if owner == nil {
		return Permit{cost: cost}
	}
	if token == nil {
		token = new(Token)
	}
	token.owner = owner
	return Permit{cost: cost, token: token, gen: token.gen.Load()}
}

// Token returns the token the permit was made with, or nil for a permit with
// no owner.
func (p Permit) Token() *Token { return p.token }

// Limiter is what callers of a limit depend on. Acquire waits, in order,
// until cost units are available or ctx ends; TryAcquire never waits. Both
// are safe for concurrent use in every implementation of sluice.
type Limiter interface {
	Acquire(ctx context.Context, cost int64) (Permit, error)
	TryAcquire(cost int64) (Permit, error)
}

// Unlimited is a Limiter that admits everything at once: inject it in tests
// of code that takes a Limiter. It still rejects cost < 1 with
// ErrInvalidCost and a done context with its error, like every limiter.
var Unlimited Limiter = unlimited{}

type unlimited struct{}

func (unlimited) Acquire(ctx context.Context, cost int64) (Permit, error) {
	if err := ctx.Err(); err != nil {
		return Permit{}, err
	}
	return unlimited{}.TryAcquire(cost)
}

func (unlimited) TryAcquire(cost int64) (Permit, error) {
	if cost < 1 {
		return Permit{}, InvalidCost(cost)
	}
	return Permit{cost: cost}, nil
}

// Claim moves p's token to its next generation, as Release does, but does
// not call the owner: it reports whether p was the live permit (false for a
// copy of a permit released already, or for a permit with no owner). It is
// for a limiter whose release takes an argument (an adaptive pool's
// outcome): it claims the permit, then gives the capacity back itself, so
// that a permit still counts once whether it is released or claimed.
func (p Permit) Claim() bool {
	return p.token != nil && p.token.gen.CompareAndSwap(p.gen, p.gen+1)
}
