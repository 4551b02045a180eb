// Package permits is the vocabulary every sluice limiter shares: the Permit a
// caller holds while it uses capacity, the Limiter interface callers depend
// on and inject, and the errors every limiter returns.
//
// It imports no other package of sluice, so that code which only consumes
// limits (a client library, a worker loop) depends on this small package and
// can be handed a real limiter in production and Unlimited in its tests.
package permits
