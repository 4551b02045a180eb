// Package redislimit is a rate limit shared by many processes: GCRA whose
// state lives in Redis (or Valkey), decided by one Lua script in integer
// microseconds at Redis's clock, with the semantics of sluice's in-process
// limiter (actor.New(algorithms.NewGCRA(rate, burst))): FIFO waiting per
// process, exact RetryAfter, deadlines refused at once, cancellation that
// gives capacity back, and the errors of package permits.
//
// Each Limiter (one key) or Keyed (a key per user, per account, ...) has an
// owner goroutine. While a script call is under way it gathers every
// request that arrives, and sends them all in the next call, which decides
// them in order: granted now, reserved for an instant ahead (the caller
// then waits locally, on the owner's one timer, without asking Redis
// again), or refused because that instant is after the request's deadline.
// Under load one call decides dozens of requests. A waiter that gives up
// hands its reservation to the next waiter it covers; what nobody here can
// use goes back to Redis only if nothing was admitted behind it.
//
//	lim, err := redislimit.New(client, "quota:acme-api", algorithms.PerSecond(300), 30)
//	if err != nil { ... }
//	defer lim.Close()
//	err = permits.Do(ctx, lim, 1, func(ctx context.Context) error { return callAPI(ctx) })
//
// Window is an exact sliding window in Redis whose grants can be settled
// with what the call really cost (a tokens-per-minute quota: acquire the
// estimate, settle the usage), refunded whatever was admitted since, and
// paused for every process at once; its reservations move earlier when a
// settlement made room sooner.
//
//	tokens, err := redislimit.NewWindow(client, "quota:acme-api:tokens", algorithms.PerMinute(200_000))
//	g, err := tokens.AcquireGrant(ctx, estimate)
//	...
//	err = tokens.Settle(g, used)
//
// When Redis cannot be reached or does not answer in time, requests fail
// with an error matching ErrUnavailable (fail-closed), or with
// WithFailOpen fall back to a limiter in this process with a share of the
// rate. On a Redis Cluster, batches and that health are per master: one
// master down fails only its slots' keys. docs/distributed.md describes
// the protocol, the clock, expiry, every failure mode and Cluster.
//
// The module is separate from sluice's, so that sluice's go.mod never
// carries a Redis client; it takes the caller's go-redis v9 client.
package redislimit
