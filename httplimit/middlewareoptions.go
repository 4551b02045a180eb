package httplimit

import (
	"net/http"
	"net/netip"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/internal/clientip"
	"github.com/sluicehq/sluice/permits"
)

// WithXRateLimitFields adds the X-RateLimit-Limit, X-RateLimit-Remaining
// and X-RateLimit-Reset fields of GitHub's and Twitter's APIs beside the
// IETF ones, for clients that read only those: the quota, what remains,
// and the Unix time in seconds, rounded up, at which the effective window
// ends (on a refusal, at which Retry-After ends). ParseWait reads them
// back. Each costs an allocation or two per response.
func WithXRateLimitFields() Option { return optionFunc(func(c *config) { c.xFields = true }) }

// WithShadow makes the middleware count every request and send the
// fields, but never refuse: a request the limit would refuse calls hook
// (with what a refusal would say) and is passed on. For rolling a limit
// out: watch what it would refuse before it does. Requests the middleware
// cannot decide on (no key, a cost too large) are answered as without it.
// A nil hook is allowed.
func WithShadow(hook func(*http.Request, Denial)) Option {
	return optionFunc(func(c *config) {
		if hook == nil {
			hook = func(*http.Request, Denial) {}
		}
		c.shadow = hook
	})
}

// WithExemptions passes the requests for which exempt returns true
// without counting them or sending fields: health checks, internal
// callers (see ExemptPeers). nil exempts nothing.
func WithExemptions(exempt func(*http.Request) bool) Option {
	return optionFunc(func(c *config) { c.exempt = exempt })
}

// ExemptPeers returns an exemption for the requests whose peer
// (Request.RemoteAddr, never a forwarded address, which a client could
// write) is in one of cidrs: a load balancer's health checks, a sidecar.
// It fails, matching ErrInvalidConfig, for an entry that is neither a
// CIDR nor an address.
func ExemptPeers(cidrs ...string) (func(*http.Request) bool, error) {
	prefixes := make([]netip.Prefix, 0, len(cidrs))
	for _, s := range cidrs {
		p, err := clientip.ParseTrusted("httplimit", s)
		if err != nil {
			return nil, err
		}
		prefixes = append(prefixes, p)
	}
	return func(r *http.Request) bool {
		a, err := clientip.ParseHostPort(r.RemoteAddr)
		return err == nil && clientip.IsTrusted(a, prefixes)
	}, nil
}

// setXFields sets the X-RateLimit-* fields for q, unless a limit stacked
// outside this one set them with less remaining (or as little, for
// longer): these fields hold one limit, and a client that reads them must
// see the one that will stop it first.
func (m *middleware) setXFields(h http.Header, q permits.Quota, refused bool) {
	t := effectiveWindow(q)
	if refused {
		t = time.Duration(retrySeconds(q.RetryAfter)) * time.Second
	}
	reset := m.cfg.now().Add(t)
	secs := reset.Unix()
	if reset.Nanosecond() > 0 {
		secs++
	}
	remaining := max(q.Remaining, 0)
	if tighter(h, remaining, secs) {
		return
	}
	h["X-Ratelimit-Limit"] = []string{strconv.FormatInt(q.Limit, 10)}
	h["X-Ratelimit-Remaining"] = []string{strconv.FormatInt(remaining, 10)}
	h["X-Ratelimit-Reset"] = []string{strconv.FormatInt(secs, 10)}
}

// tighter reports whether h already holds X-RateLimit fields of a limit
// that stops a client no later than one with remaining left until secs.
func tighter(h http.Header, remaining, secs int64) bool {
	r, rok := h["X-Ratelimit-Remaining"]
	s, sok := h["X-Ratelimit-Reset"]
	if !rok || !sok || len(r) != 1 || len(s) != 1 {
		return false
	}
	had, err1 := strconv.ParseInt(r[0], 10, 64)
	until, err2 := strconv.ParseInt(s[0], 10, 64)
	if err1 != nil || err2 != nil {
		return false
	}
	return had < remaining || had == remaining && until >= secs
}
