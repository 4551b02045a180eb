package httplimit

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/permits"
)

// Option configures Middleware. Options are values; a nil Option is
// ignored.
type Option interface{ apply(*config) }

type config struct {
	policy  string
	unit    string
	window  time.Duration
	cost    func(*http.Request) int64
	wait    bool
	maxWait time.Duration
	denied  func(http.ResponseWriter, *http.Request, Denial)
	onError func(http.ResponseWriter, *http.Request, error)
	xFields bool                        // WithXRateLimitFields
	shadow  func(*http.Request, Denial) // WithShadow; nil: enforce
	exempt  func(*http.Request) bool    // WithExemptions
	now     func() time.Time            // for X-RateLimit-Reset
	shedder *Shedder                    // WithShedder; nil: none
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithPolicy names the policy in the RateLimit fields ("default" if not
// given).
func WithPolicy(name string) Option { return optionFunc(func(c *config) { c.policy = name }) }

// WithQuotaUnit sets the qu the RateLimit-Policy field advertises: what
// the quota counts when a request's cost (WithCost) is not one request,
// "content-bytes" for a cost that is the body's size, say. The draft's
// units are "requests" (the default, left out), "content-bytes" and
// "concurrent-requests".
func WithQuotaUnit(unit string) Option { return optionFunc(func(c *config) { c.unit = unit }) }

// WithWindow sets the w the RateLimit-Policy field advertises, for
// limiters that do not say it (the windows, a limiter from another
// package); by default it is the time the key's limit takes to refill from
// empty, when the limiter reports it, and left out otherwise.
func WithWindow(d time.Duration) Option { return optionFunc(func(c *config) { c.window = d }) }

// WithCost sets what a request costs: its body size, the tokens it will
// use. The default is 1. A cost below 1 is a server error (500); a cost
// above what the key can ever admit is refused with 413.
func WithCost(cost func(*http.Request) int64) Option {
	return optionFunc(func(c *config) {
		if cost != nil {
			c.cost = cost
		}
	})
}

// WithWait makes a request that would be refused wait its turn instead, in
// FIFO order among the requests of its key, for at most max (a negative
// max: as long as its context lasts). A request whose predicted wait is
// longer is refused at once, with the Retry-After of that wait; one whose
// client goes away while it waits leaves the queue and gets no response.
func WithWait(max time.Duration) Option {
	return optionFunc(func(c *config) { c.wait, c.maxWait = true, max })
}

// WithDeniedHandler replaces the response to a refused request (429 with a
// quota-exceeded problem). The RateLimit and Retry-After fields are set
// when it is called; it writes the status and the body.
func WithDeniedHandler(h func(http.ResponseWriter, *http.Request, Denial)) Option {
	return optionFunc(func(c *config) {
		if h != nil {
			c.denied = h
		}
	})
}

// WithErrorHandler replaces the response to a request the middleware could
// not decide on: no key (400 by default), a cost above the capacity (413),
// too many keys, a closed limiter or a request WithShedder shed (503),
// anything else (500).
func WithErrorHandler(h func(http.ResponseWriter, *http.Request, error)) Option {
	return optionFunc(func(c *config) {
		if h != nil {
			c.onError = h
		}
	})
}

// Middleware returns middleware that limits each request by lim under the
// key that key returns, passing it on when granted. lim is typically a
// *keyed.Limiter[string], or a *redislimit.Keyed for a limit that a fleet
// of servers shares; when it implements permits.KeyedQuotaLimiter
// every grant and every refusal by the limit carries the RateLimit-Policy
// and RateLimit fields (a response the limit did not decide, such as a
// 413, carries none), else only refusals carry Retry-After. It panics if lim or key is nil, a
// programmer's error. The middleware is safe for concurrent use and adds,
// on the lock-free path of a keyed.Limiter, a few hundred nanoseconds per
// request (measured in bench/).
func Middleware(lim permits.KeyedLimiter[string], key KeyFunc, opts ...Option) func(http.Handler) http.Handler {
	if lim == nil || key == nil {
		panic("httplimit: Middleware with a nil limiter or key function")
	}
	cfg := config{policy: "default", cost: func(*http.Request) int64 { return 1 }, denied: deny, onError: failShed, now: time.Now}
	for _, o := range opts {
		if o != nil {
			o.apply(&cfg)
		}
	}
	m := &middleware{cfg: cfg, lim: lim, key: key, policyName: quoted(cfg.policy)}
	if cfg.unit != "" && cfg.unit != "requests" {
		m.unitParam = ";qu=" + quoted(cfg.unit)
	}
	m.ql, _ = lim.(permits.KeyedQuotaLimiter[string])
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { m.serve(w, r, next) })
	}
}

type middleware struct {
	cfg        config
	lim        permits.KeyedLimiter[string]
	ql         permits.KeyedQuotaLimiter[string]
	key        KeyFunc
	policyName string // the policy as an sf-string, formatted once
	unitParam  string // ;qu="..." when the unit is not requests
	last       atomic.Pointer[policyCache]
	limits     [64]atomic.Pointer[limitCache] // RateLimit values by r and t
}

func (m *middleware) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	if m.cfg.exempt != nil && m.cfg.exempt(r) {
		next.ServeHTTP(w, r) // not counted, no fields
		return
	}
	k, err := m.key(r)
	if err != nil {
		m.cfg.onError(w, r, err)
		return
	}
	q, err := m.decide(r, k, m.cfg.cost(r))
	if errors.Is(err, context.DeadlineExceeded) && r.Context().Err() == nil && !errors.Is(err, permits.ErrRateLimited) {
		// WithWait's bound ran out while the request waited: a refusal
		// whose wait nobody predicted.
		err = &permits.RateLimitError{RetryAfter: 1, Cause: err}
	}
	h := w.Header()
	// The fields describe a grant or a refusal by the limit; any other
	// error (a cost the key can never admit, a closed limiter) spent
	// nothing, and its quota says nothing true.
	if q.Limit > 0 && q.Remaining >= 0 && (err == nil || errors.Is(err, permits.ErrRateLimited)) {
		// Appended, not set: a limit stacked inside another (per client
		// inside a global one) adds its member to the Lists the outer one
		// began, as the draft means a List to be used, one member per
		// policy. Canonical names, used directly: Header.Add would
		// canonicalize them again on every request.
		m.setFields(h, m.policy(q), m.limit(q, err != nil))
		if m.cfg.xFields {
			m.setXFields(h, q, err != nil)
		}
	}
	if err == nil {
		m.pass(w, r, next)
		return
	}
	if wait, ok := permits.RetryAfter(err); ok {
		if m.cfg.shadow != nil {
			// Counted and told, never refused: what the limit would do.
			m.cfg.shadow(r, Denial{Key: k, Policy: m.cfg.policy, Quota: q, RetryAfter: wait, Err: err})
			m.pass(w, r, next)
			return
		}
		// Never 0: a refusal whose wait rounds to nothing still asks the
		// client to come back later, not at once.
		h["Retry-After"] = []string{strconv.FormatInt(retrySeconds(wait), 10)}
		m.cfg.denied(w, r, Denial{Key: k, Policy: m.cfg.policy, Quota: q, RetryAfter: wait, Err: err})
		return
	}
	if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
		return // the client went away while it waited: nobody reads an answer
	}
	m.cfg.onError(w, r, err)
}

// pass hands a request the limit let through to next, through the
// Shedder's route slot if there is one (WithShedder).
func (m *middleware) pass(w http.ResponseWriter, r *http.Request, next http.Handler) {
	if m.cfg.shedder == nil {
		next.ServeHTTP(w, r)
		return
	}
	m.cfg.shedder.serve(w, r, next, m.cfg.onError)
}

// decide asks the limiter, the Quota with it when the limiter tells it.
func (m *middleware) decide(r *http.Request, k string, cost int64) (permits.Quota, error) {
	if !m.cfg.wait || m.cfg.maxWait == 0 {
		return m.try(k, cost)
	}
	ctx := r.Context()
	if m.cfg.maxWait >= 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, m.cfg.maxWait)
		defer cancel()
	}
	var q permits.Quota
	var err error
	if m.ql != nil {
		_, q, err = m.ql.AcquireQuota(ctx, k, cost)
	} else {
		_, err = m.lim.Acquire(ctx, k, cost)
	}
	if err != nil && ctx.Err() != nil && r.Context().Err() == nil {
		if _, ok := permits.RetryAfter(err); !ok {
			// The bound ended with no wait predicted: a bound of a few ns
			// can end before the limiter looks, and a limiter fails a done
			// context even when it has room. Room free now is nobody's (a
			// TryAcquire never passes a waiter).
			return m.try(k, cost)
		}
	}
	return q, err
}

// try asks the limiter without waiting.
func (m *middleware) try(k string, cost int64) (permits.Quota, error) {
	if m.ql != nil {
		_, q, err := m.ql.TryAcquireQuota(k, cost)
		return q, err
	}
	_, err := m.lim.TryAcquire(k, cost)
	return permits.Quota{}, err
}

// policy formats RateLimit-Policy for q. Keys mostly share one policy, so
// the last one formatted is kept and reused.
func (m *middleware) policy(q permits.Quota) string {
	w := m.cfg.window
	if w <= 0 {
		w = q.Window
	}
	if c := m.last.Load(); c != nil && c.limit == q.Limit && c.window == w {
		return c.value
	}
	var buf [80]byte
	b := append(buf[:0], m.policyName...)
	b = append(b, ";q="...)
	b = strconv.AppendInt(b, sfInteger(q.Limit), 10)
	b = append(b, m.unitParam...)
	if s := Seconds(w); s > 0 {
		b = append(b, ";w="...)
		b = strconv.AppendInt(b, sfInteger(s), 10)
	}
	c := &policyCache{limit: q.Limit, window: w, value: string(b)}
	m.last.Store(c)
	return c.value
}

type policyCache struct {
	limit  int64
	window time.Duration
	value  string
}

// setFields appends policy and limit to the RateLimit-Policy and
// RateLimit Lists of h. When neither has a member yet (no limit outside
// this one) both fields share one allocation: each gets its own slice of
// length and capacity one, so that a limit inside appends to a copy.
func (m *middleware) setFields(h http.Header, policy, limit string) {
	ps, ls := h["Ratelimit-Policy"], h["Ratelimit"]
	if len(ps) == 0 && len(ls) == 0 {
		both := []string{policy, limit}
		h["Ratelimit-Policy"], h["Ratelimit"] = both[0:1:1], both[1:2:2]
		return
	}
	h["Ratelimit-Policy"], h["Ratelimit"] = append(ps, policy), append(ls, limit)
}

// limit formats RateLimit for q. t is the draft's effective window: after
// a grant, the time within which the client can use no more than r
// (effectiveWindow); after a refusal, the time until the refused cost
// would pass, which is Retry-After, so that the two never disagree.
func (m *middleware) limit(q permits.Quota, refused bool) string {
	var t int64
	if refused {
		t = retrySeconds(q.RetryAfter)
	} else {
		t = Seconds(effectiveWindow(q))
	}
	r := sfInteger(q.Remaining)
	t = sfInteger(t)
	// Responses in a row mostly say the same (keys of the same client
	// count, a full window's t): the value of each pair is kept, one per
	// slot, and reused, like the policy's.
	slot := &m.limits[uint64(r*31+t)%uint64(len(m.limits))]
	if c := slot.Load(); c != nil && c.r == r && c.t == t {
		return c.value
	}
	var buf [80]byte
	b := append(buf[:0], m.policyName...)
	b = append(b, ";r="...)
	b = strconv.AppendInt(b, r, 10)
	b = append(b, ";t="...)
	b = strconv.AppendInt(b, t, 10)
	c := &limitCache{r: r, t: t, value: string(b)}
	slot.Store(c)
	return c.value
}

type limitCache struct {
	r, t  int64
	value string
}

// effectiveWindow is the time within which the client can use no more
// than q.Remaining: until one more unit comes back. A window says when
// (Next: its oldest admission leaves a sliding window, a fixed one ends).
// A limit that refills at a steady rate (GCRA, the buckets) gets a unit
// back every Window/Limit and the last of what it lacks at Reset, so the
// first of them comes Reset less the others' time from now; a full one,
// once emptied, gets its first back after one unit's time. Without a
// Window, Reset.
func effectiveWindow(q permits.Quota) time.Duration {
	if q.Next > 0 {
		return q.Next
	}
	if q.Window <= 0 || q.Limit <= 0 {
		return q.Reset
	}
	per := q.Window / time.Duration(q.Limit)
	lacking := q.Limit - q.Remaining
	if lacking <= 0 {
		return per
	}
	t := q.Reset - time.Duration(lacking-1)*per
	if t <= 0 {
		return q.Reset
	}
	return min(t, q.Reset)
}

// retrySeconds is d as Retry-After's delay-seconds: rounded up, and at
// least 1.
func retrySeconds(d time.Duration) int64 { return max(Seconds(d), 1) }

func quoted(s string) string {
	var b strings.Builder
	writeString(&b, s)
	return b.String()
}
