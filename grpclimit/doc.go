// Package grpclimit puts sluice's limits on gRPC, both ways.
//
// On the server, Server's interceptors (unary and stream) key each call by
// method, peer address (with trusted proxies read from x-forwarded-for,
// forwarded or x-real-ip metadata by the same code as httplimit's
// KeyByIP), a metadata key, or a mix (KeyByAll), over any
// permits.KeyedLimiter: keyed.Limiter in process, redislimit.Keyed across
// a fleet. A refused call gets codes.ResourceExhausted with the
// google.rpc.RetryInfo and google.rpc.QuotaFailure details (Refusal), or
// with WithWait waits its turn within its deadline.
//
// Shedder's interceptors shed load per method: an actor.AdaptivePool per
// method bounds the calls in flight by a limit that follows the
// handlers' latency and refusals, and sheds what does not fit with
// codes.Unavailable and RetryInfo (Shed).
//
// On the client, Client's interceptors pace calls with a permits.Limiter,
// honour a refusal's RetryInfo by pausing its target (ClientConn.Target)
// until then, and retry with package retry's loop, a retry budget and a
// circuit breaker, and with WithAdaptiveConcurrency bound the calls in
// flight to each target: httplimit's Transport, for gRPC, with the same
// option names.
//
// go-grpc-middleware's ratelimit interceptor takes a one-method
// Limit(ctx) error and leaves keys, RetryInfo and clients to its user;
// this package is those parts. docs/grpc.md has the details and the
// figures.
package grpclimit
