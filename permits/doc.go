// Package permits is the vocabulary every sluice limiter shares: the Permit a
// caller holds while it uses capacity, the Limiter interface callers depend
// on and inject, and the errors every limiter returns.
//
// It also composes limiters: All admits a request only when every limiter
// does (a request rate, a tokens-per-minute rate and a concurrency pool for
// one API) and gives back everything it took when it fails; Do and Wrap run
// a function under a limit; Unlimited is the no-op Limiter for tests.
// Package permitstest finds permits a test forgot to release.
//
// It imports no other package of sluice, so that code which only consumes
// limits (a client library, a worker loop) depends on this small package and
// can be handed a real limiter in production and Unlimited in its tests.
package permits
