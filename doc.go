// Package sluice is a library of concurrent limiters built the actor way.
//
// Go services call things that push back: paid APIs with requests-per-second
// and tokens-per-minute quotas, databases, flaky downstreams. sluice gives
// them rate limiters, concurrency permits and resilience policies whose
// decisions are pure functions of (state, now, cost) and whose waiting is
// owned by one goroutine per limiter:
//
//   - package algorithms: the pure decisions: GCRA, token bucket, leaky
//     bucket, exact sliding window and epoch-aligned fixed window, with exact
//     integer arithmetic and nanosecond-exact RetryAt.
//   - package scheduler: the pure waiting order (strict FIFO in virtual time).
//   - package actor: the owners. One goroutine per limiter takes requests from
//     its inbox and hands permits back on each caller's reply channel: the
//     rate Limiter and the concurrency Pool.
//   - package permits: the vocabulary every limiter shares (Permit, Limiter,
//     errors), composition (All), helpers (Do, Wrap, Unlimited); package
//     permits/permitstest finds leaked permits in tests.
//   - packages budget and breaker: a retry budget and a circuit breaker on
//     constant-memory bucketed counters; package retry, the one retry loop
//     that uses them.
//
// The root package holds no code; import the package you need. The design
// and the semantics are in the repository's docs/ folder.
package sluice
