// Package httplimit limits HTTP servers per client and speaks the
// standard RateLimit header fields.
//
// Middleware wraps an http.Handler with a keyed limit (package keyed, or
// any permits.KeyedLimiter[string]): each request is keyed by a KeyFunc
// (the client's address with KeyByIP, a header, an API key) and costs what
// WithCost says (1 by default). Every response carries the fields of
// draft-ietf-httpapi-ratelimit-headers,
//
//	RateLimit-Policy: "default";q=100;w=60
//	RateLimit: "default";r=50;t=30
//
// and a refused request gets 429 Too Many Requests with Retry-After in
// whole seconds, rounded up, and an RFC 9457 problem+json body. With
// WithWait a request waits its turn instead, in FIFO order per key, for at
// most the given time and never past its context.
//
// The fields are formatted and parsed in headers.go (FormatPolicy,
// ParseServiceLimits, ParseRetryAfter, ...), so that a client can read
// what a server says. docs/http.md has the details and the edges.
//
// Shedder is load shedding by route: NewShedder gives each route (a
// KeyFunc, KeyByRoute's ServeMux patterns typically) an adaptive pool
// whose limit follows the handler's latency and its 503s, and a request
// that finds its route full gets 503 Service Unavailable with Retry-After
// (the route's average handler time, in whole seconds) and a problem body
// before the handler runs. Use it alone (Handler) or inside Middleware
// (WithShedder), where the rate limit decides first, so a client over its
// quota takes no slot. The routes past WithMaxRoutes share one overflow
// pool. docs/http.md says which outcomes count as load.
//
// Transport is the client's side: an http.RoundTripper that acquires each
// request's cost from a limiter (a permits.All of a request rate, a token
// rate and a pool, for an LLM API) before sending it, settles the permit
// with the usage the response reports, and on 429, 502, 503, 504 or 529
// pauses the response's host (or, WithPauseLimiter, the whole limiter)
// for as long as the API asks (ParseWait reads Retry-After, the RateLimit
// fields and the x-ratelimit-* forms) and retries, with a jitter above the
// wait and never below it, through package retry with a retry budget,
// optionally behind a circuit breaker whose refusals fail fast.
// docs/client.md is the recipe.
package httplimit
