// Package budget provides a retry budget: a cap on retries as a share of
// recent requests, so that retries cannot multiply the load on a downstream
// that is already failing.
//
// A RetryBudget works as Finagle's RetryBudget does: every request deposits,
// every retry withdraws, and a retry is allowed while
//
//	minRetriesPerSec·ttlSeconds + percentCanRetry·deposits − withdrawals >= 1
//
// counting only the deposits and withdrawals of the last ttl. The defaults
// (ttl 10s, 10 retries per second, 20%) allow 100 retries in any ten seconds
// plus one retry for every five requests. percentCanRetry takes Finagle's
// range, 0 to 1000 retries per request. The reserve (minRetriesPerSec·ttl)
// is not a floor: withdrawals count against it, so a burst of retries can
// drive the balance below it.
//
// Stats returns what the budget has counted in its window (deposits,
// withdrawals, refusals) with the balance, for dashboards and incidents;
// WithName names it there and in package retry's errors.
//
// Unlike Finagle's, the events are counted in ten buckets of ttl/10 with
// running totals (package internal/window), so that every call does a fixed
// amount of work under a short lock and a budget takes 384 bytes whatever
// the traffic. The price is the bucket edge: an event stops counting at the
// start of its bucket plus ttl, which is between 0.9·ttl and ttl after it
// was made, never later. With ttl 10s, a deposit made 0.5s after the
// budget was created still counts at 9.999s and is gone at 10.0s.
//
// WithLogger writes a line when the budget is exhausted (a retry refused)
// and when it recovers (the next retry allowed), never per call.
//
// The budget reads package time, so tests can drive it with testing/synctest.
// Package retry spends it for you (retry.WithBudget); see docs/resilience.md
// for how a budget, a circuit breaker and a rate limiter combine there.
package budget
