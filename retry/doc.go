// Package retry is the one retry loop the rest of sluice composes with:
// exponential back-off with full jitter, a cap on attempts and on the time
// spent retrying, and the three rules a hand-written loop tends to get
// wrong:
//
//   - it waits at least what the error asks for: a rate limiter's
//     *permits.RateLimitError, a *breaker.OpenError, or any error in the
//     chain that implements RetryAfterer (an HTTP response's Retry-After);
//   - it never retries what the classifier calls Permanent
//     (WithClassifier; DefaultClassifier, MarkPermanent);
//   - with a retry budget (WithBudget, package budget), every call deposits
//     once and a retry happens only if the budget allows it, so that retries
//     cannot multiply the load on a struggling downstream.
//
// It stops at once when ctx ends, and never starts a wait that would end
// past ctx's deadline or the retry time limit (WithMaxElapsed): it returns
// at once instead, with an *Error that says why (ErrOutOfTime) and wraps
// the last attempt's error. Every way of giving up is a sentinel
// (ErrAttemptsExhausted, ErrBudgetExhausted, ErrOutOfTime) matched by the
// *Error, which errors.Is and errors.As also see through to the last
// error.
//
// Do(ctx, fn, opts...) is the one-off form; New builds a Policy once for a
// hot path or a client that retries for its callers. A first attempt that
// succeeds costs a few nanoseconds beyond fn and allocates nothing.
//
// A client of an HTTP API builds on it as follows: its fn sends one
// attempt and turns a 429 or 503 into an error that carries the response
// and implements RetryAfterer from the Retry-After header; a classifier
// says which statuses and errors are Transient (and only for idempotent
// requests); the WithOnRetry hook closes the body of each response it
// discards; and on an *Error the client hands back Last's response.
//
// Time is read from package time, so tests drive Do with testing/synctest.
// See docs/resilience.md for the retry loop next to a rate limiter and a
// circuit breaker.
package retry
