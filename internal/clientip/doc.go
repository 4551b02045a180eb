// Package clientip finds the client of a request behind trusted proxies:
// the peer's address, or the right-most untrusted address of the header
// the proxies write (X-Forwarded-For, RFC 7239 Forwarded, X-Real-IP). It
// is the one mechanism httplimit's KeyByIP and grpclimit's KeyByPeer share,
// so that an HTTP header and a gRPC metadata key are read by the same
// argument: entries right of the client were appended by proxies we trust,
// entries left of it were written by the client and prove nothing, and are
// never parsed.
//
// Errors of Client match nothing of their own: each caller wraps them in
// its ErrNoKey. ParseTrusted's errors match permits.ErrInvalidConfig.
package clientip
