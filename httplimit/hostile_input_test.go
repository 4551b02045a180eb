package httplimit_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/httplimit"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/keyed"
	"github.com/sluicehq/sluice/permits"
	"github.com/sluicehq/sluice/retry"
)

var rdNow = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

const rdMaxDur = time.Duration(math.MaxInt64 / int64(time.Second) * int64(time.Second))

// TestHostileParseRetryAfter
func TestHostileParseRetryAfter(t *testing.T) {
	cases := []struct {
		v    string
		want time.Duration
		ok   bool
	}{
		{"", 0, false},
		{"   ", 0, false},
		{"0", 0, true},
		{"5", 5 * time.Second, true},
		{" 5 ", 5 * time.Second, true},
		{"-5", 0, false},
		{"+5", 0, false},
		{"5.5", 0, false},
		{"1e3", 0, false},
		{"0x10", 0, false},
		{"five", 0, false},
		{"5, 10", 0, false},
		{"9223372036", 9223372036 * time.Second, true},
		{"9223372037", rdMaxDur, true},
		{"18446744073709551615", rdMaxDur, true},
		// delay-seconds is 1*DIGIT: larger numbers are valid and mean "a very
		// long time" (RFC 9111 1.2.2: treat an overflowing delta-seconds as
		// the greatest value representable). ParseWait's own doc: "numbers
		// too large for a time.Duration count as the largest one".
		{"18446744073709551616", rdMaxDur, true},
		{"99999999999999999999999999999", rdMaxDur, true},
		{"Sun, 06 Nov 1994 08:49:37 GMT", 0, true}, // past
		{"Fri, 31 Dec 9999 23:59:59 GMT", rdNow.AddDate(0, 0, 0).Sub(rdNow) + time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC).Sub(rdNow), true},
		{"Sun, 01 Jun 2025 12:00:10 GMT", 10 * time.Second, true},
		{"Sun, 01 Jun 2025 12:00:10 PST", 0, false},
		{"Sun, 01 Jun 2025 12:00:10", 0, false},
	}
	for _, c := range cases {
		var d time.Duration
		var ok bool
		testutil.Within(t, time.Second, c.v, func() { d, ok = httplimit.ParseRetryAfter(c.v, rdNow) })
		if d != c.want || ok != c.ok {
			t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v, %v", c.v, d, ok, c.want, c.ok)
		}
		if d < 0 {
			t.Errorf("ParseRetryAfter(%q) negative %v", c.v, d)
		}
	}
	// the zero time and far instants as "now"
	for _, now := range []time.Time{{}, time.Unix(math.MinInt64/2, 0), time.Unix(math.MaxInt64/2, 0)} {
		for _, v := range []string{"5", "Sun, 06 Nov 1994 08:49:37 GMT", "Fri, 31 Dec 9999 23:59:59 GMT"} {
			d, ok := httplimit.ParseRetryAfter(v, now)
			if !ok || d < 0 {
				t.Errorf("ParseRetryAfter(%q, %v) = %v, %v", v, now, d, ok)
			}
		}
	}
}

// TestHostileParseRetryAfterObsoleteDates: RFC 9110 5.6.7: "A recipient
// that parses a timestamp value in an HTTP header field MUST accept all
// three HTTP-date formats."
func TestHostileParseRetryAfterObsoleteDates(t *testing.T) {
	for _, v := range []string{
		"Sunday, 01-Jun-25 12:00:10 GMT", // RFC 850
		"Sun Jun  1 12:00:10 2025",       // asctime
	} {
		d, ok := httplimit.ParseRetryAfter(v, rdNow)
		if !ok || d != 10*time.Second {
			t.Errorf("ParseRetryAfter(%q) = %v, %v; want 10s, true", v, d, ok)
		}
	}
}

// TestHostileParseStructured: RateLimit and RateLimit-Policy per
// RFC 8941 and the draft.
func TestHostileParseStructured(t *testing.T) {
	type lc struct {
		in      []string
		wantErr bool
		want    []httplimit.ServiceLimit
	}
	sl := func(n string, r int64, t time.Duration) httplimit.ServiceLimit {
		return httplimit.ServiceLimit{Name: n, Remaining: r, Reset: t}
	}
	limits := []lc{
		{[]string{`"a";r=1;t=2`}, false, []httplimit.ServiceLimit{sl("a", 1, 2*time.Second)}},
		{[]string{`a;r=1`}, false, []httplimit.ServiceLimit{sl("a", 1, -1)}},
		{[]string{`"a";r=1, "b";r=0;t=5`}, false, []httplimit.ServiceLimit{sl("a", 1, -1), sl("b", 0, 5*time.Second)}},
		{[]string{`"a";r=1`, `"b";r=2`}, false, []httplimit.ServiceLimit{sl("a", 1, -1), sl("b", 2, -1)}},
		{[]string{`"a"; r=1`}, false, []httplimit.ServiceLimit{sl("a", 1, -1)}},
		{[]string{`"a";r=1;r=3`}, false, []httplimit.ServiceLimit{sl("a", 3, -1)}},
		{[]string{`"a";r=1;foo=?0;bar=:YWJj:;baz=1.5;q="x"`}, false, []httplimit.ServiceLimit{sl("a", 1, -1)}},
		{[]string{`"a";r=999999999999999`}, false, []httplimit.ServiceLimit{sl("a", 999999999999999, -1)}},
		// An Integer of up to 15 digits is an Integer (RFC 8941 3.3.1); a
		// t of that size is a valid, very long, reset.
		{[]string{`"a";r=0;t=999999999999999`}, false, []httplimit.ServiceLimit{sl("a", 0, rdMaxDur)}},
		{[]string{``}, true, nil},
		{[]string{` `}, true, nil},
		{[]string{`"a";r=-1`}, true, nil},
		{[]string{`"a";r=1.5`}, true, nil},
		{[]string{`"a";r=1000000000000000`}, true, nil},
		{[]string{`"a";r=?1`}, true, nil},
		{[]string{`"a";r="1"`}, true, nil},
		{[]string{`"a";R=1`}, true, nil},
		{[]string{`"a";t=1`}, true, nil},
		{[]string{`"a";r=1;t=-1`}, true, nil},
		{[]string{`"a";r=1,`}, true, nil},
		{[]string{`,"a";r=1`}, true, nil},
		{[]string{`"a";r=1,,"b";r=1`}, true, nil},
		{[]string{`"a" ;r=1`}, true, nil},
		{[]string{`"a";r= 1`}, true, nil},
		{[]string{`"a";r =1`}, true, nil},
		{[]string{`("a");r=1`}, true, nil},
		{[]string{`1;r=1`}, true, nil},
		{[]string{`"a`}, true, nil},
		{[]string{`"a\x";r=1`}, true, nil},
		{[]string{"\"a\u00e9\";r=1"}, true, nil},
		{[]string{"\"a\";r=1\x00"}, true, nil},
		{[]string{`"a";r=1;;t=1`}, true, nil},
		{[]string{`"a";r=1;t=1;`}, true, nil},
		{[]string{`"a";r=1 "b";r=1`}, true, nil},
		{[]string{`"a";r=1;foo=-.5`}, true, nil}, // RFC 8941 4.2.4: the first character after the sign must be a DIGIT
		{[]string{`"a";r=1;foo=:YWJj`}, true, nil},
		{[]string{`"a";r=1;foo=?2`}, true, nil},
		{[]string{strings.Repeat(`"a";r=1,`, 10000) + `"a";r=1`}, false, nil},
		{[]string{strings.Repeat("\"", 1<<16)}, true, nil},
	}
	for _, c := range limits {
		var got []httplimit.ServiceLimit
		var err error
		testutil.Within(t, 2*time.Second, fmt.Sprintf("%.40q", c.in), func() { got, err = httplimit.ParseServiceLimits(c.in...) })
		if c.wantErr {
			if err == nil {
				t.Errorf("ParseServiceLimits(%.60q) = %+v, nil; want ErrMalformed", c.in, got)
			} else if !errors.Is(err, httplimit.ErrMalformed) {
				t.Errorf("ParseServiceLimits(%.60q) err %v does not match ErrMalformed", c.in, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseServiceLimits(%.60q) = %v", c.in, err)
			continue
		}
		if c.want != nil && fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("ParseServiceLimits(%.60q) = %+v, want %+v", c.in, got, c.want)
		}
	}

	type pc struct {
		in      string
		wantErr bool
	}
	for _, c := range []pc{
		{`"default";q=100;w=60`, false},
		{`"default";q=100;qu="requests";w=60;pk=:YWJj:`, false},
		{`"default";q=0`, false},
		{`"default";q=100;w=999999999999999`, false}, // an Integer: a very long window
		{`"default";w=60`, true},
		{`"default";q=-1`, true},
		{`"default";q=1.5`, true},
		{`"default";q=100;w=0`, true},
		{`"default";q=100;w=-1`, true},
		{`"default";q=100;w=1.5`, true},
		{`"default";q=100;qu=requests`, true},
		{`"default";q=100,`, true},
		{``, true},
	} {
		got, err := httplimit.ParsePolicies(c.in)
		if c.wantErr != (err != nil) {
			t.Errorf("ParsePolicies(%q) = %+v, %v; wantErr %v", c.in, got, err, c.wantErr)
		}
		if err != nil && !errors.Is(err, httplimit.ErrMalformed) {
			t.Errorf("ParsePolicies(%q) err %v not ErrMalformed", c.in, err)
		}
	}
}

// TestHostileParseWait
func TestHostileParseWait(t *testing.T) {
	type wc struct {
		name string
		h    http.Header
		want time.Duration
		ok   bool
	}
	H := func(kv ...string) http.Header {
		h := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			h.Add(kv[i], kv[i+1])
		}
		return h
	}
	cases := []wc{
		{"none", H(), 0, false},
		{"retry-after 5", H("Retry-After", "5"), 5 * time.Second, true},
		{"retry-after past", H("Retry-After", "Sun, 06 Nov 1994 08:49:37 GMT"), 0, true},
		{"retry-after garbage falls through", H("Retry-After", "soon", "RateLimit", `"a";r=0;t=7`), 7 * time.Second, true},
		{"retry-after negative falls through", H("Retry-After", "-1"), 0, false},
		{"retry-after huge", H("Retry-After", "99999999999999999999"), rdMaxDur, true},
		{"ratelimit r=0 no t uses policy w", H("RateLimit", `"a";r=0`, "RateLimit-Policy", `"a";q=10;w=30`), 30 * time.Second, true},
		{"ratelimit r=1 ignored", H("RateLimit", `"a";r=1;t=7`), 0, false},
		{"ratelimit malformed ignored", H("RateLimit", `"a";r=0;t=7,`), 0, false},
		{"ratelimit big t", H("RateLimit", `"a";r=0;t=99999999999`), rdMaxDur, true},
		{"x-ratelimit", H("X-Ratelimit-Remaining", "0", "X-Ratelimit-Reset", "6m0s"), 6 * time.Minute, true},
		{"x-ratelimit reset negative", H("X-Ratelimit-Remaining", "0", "X-Ratelimit-Reset", "-5"), 0, false},
		{"x-ratelimit reset garbage", H("X-Ratelimit-Remaining", "0", "X-Ratelimit-Reset", "1h-5m"), 0, false},
		{"x-ratelimit reset huge", H("X-Ratelimit-Remaining", "0", "X-Ratelimit-Reset", "99999999999999999999999"), rdMaxDur, true},
		{"x-ratelimit reset huge duration", H("X-Ratelimit-Remaining", "0", "X-Ratelimit-Reset", "9999999999h"), 0, false},
		{"x-ratelimit unix past", H("X-Ratelimit-Remaining", "0", "X-Ratelimit-Reset", "1000000000"), 0, true},
		{"x-ratelimit rfc3339 far future", H("X-Ratelimit-Remaining", "0", "X-Ratelimit-Reset", "9999-12-31T23:59:59Z"), time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC).Sub(rdNow), true},
		{"x-ratelimit remaining 00", H("X-Ratelimit-Remaining", "00", "X-Ratelimit-Reset", "3"), 3 * time.Second, true},
		{"x-ratelimit remaining -0", H("X-Ratelimit-Remaining", "-0", "X-Ratelimit-Reset", "3"), 0, false},
		{"x-ratelimit suffixed", H("X-Ratelimit-Remaining-Tokens", "0", "X-Ratelimit-Reset-Tokens", "1.5s"), 1500 * time.Millisecond, true},
		{"anthropic", H("Anthropic-Ratelimit-Requests-Remaining", "0", "Anthropic-Ratelimit-Requests-Reset", "2025-06-01T12:01:00Z"), time.Minute, true},
		{"fraction too long", H("X-Ratelimit-Remaining", "0", "X-Ratelimit-Reset", "1.0000000001"), 0, false},
	}
	for _, c := range cases {
		var d time.Duration
		var ok bool
		testutil.Within(t, time.Second, c.name, func() { d, ok = httplimit.ParseWait(c.h, rdNow) })
		if d != c.want || ok != c.ok {
			t.Errorf("ParseWait(%s) = %v, %v; want %v, %v", c.name, d, ok, c.want, c.ok)
		}
		if d < 0 {
			t.Errorf("ParseWait(%s) negative", c.name)
		}
	}
	// nil header, zero now
	if d, ok := httplimit.ParseWait(nil, time.Time{}); ok || d != 0 {
		t.Errorf("ParseWait(nil) = %v %v", d, ok)
	}
}

// rdBase is a RoundTripper answering every request with a fixed response.
type rdBase struct {
	n    atomic.Int64
	resp func() *http.Response
}

func (b *rdBase) RoundTrip(r *http.Request) (*http.Response, error) {
	b.n.Add(1)
	if r.Body != nil {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	return b.resp(), nil
}

func rd429(h http.Header, body bool) func() *http.Response {
	return func() *http.Response {
		r := &http.Response{StatusCode: 429, Header: h.Clone(), ProtoMajor: 1, ProtoMinor: 1}
		if body {
			r.Body = io.NopCloser(strings.NewReader("slow down"))
		}
		return r
	}
}

func rdLimiter(t *testing.T) *actor.Limiter {
	g, err := algorithms.NewGCRA(algorithms.PerSecond(1000), 100)
	if err != nil {
		t.Fatal(err)
	}
	l := actor.MustNew(g)
	t.Cleanup(func() { l.Close() })
	return l
}

// TestHostileTransportHostileHeaders: whatever a 429 says, RoundTrip never
// panics or hangs, the pause never exceeds the cap, and the response comes
// back with its body.
func TestHostileTransportHostileHeaders(t *testing.T) {
	headers := []http.Header{
		{"Retry-After": {"99999999999999999999"}},
		{"Retry-After": {"18446744073709551615"}},
		{"Retry-After": {"-1"}},
		{"Retry-After": {"Fri, 31 Dec 9999 23:59:59 GMT"}},
		{"Retry-After": {"Thu, 01 Jan 1970 00:00:00 GMT"}},
		{"Retry-After": {"garbage", "1"}},
		{"Retry-After": {"", ""}},
		{"Retry-After": {strings.Repeat("9", 1<<16)}},
		{"Ratelimit": {`"a";r=0;t=999999999999999`}},
		{"Ratelimit": {`"a";r=0`}, "Ratelimit-Policy": {`"a";q=1;w=999999999999999`}},
		{"Ratelimit": {strings.Repeat(`"a";r=0;t=1,`, 5000) + `"a";r=0`}},
		{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"1e400"}},
		{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"99999999999999999999"}},
		{},
	}
	for i, h := range headers {
		for _, withBody := range []bool{true, false} {
			name := fmt.Sprintf("hdr %d body %v %.60v", i, withBody, h)
			// In a bubble: the bounds below are exact virtual instants,
			// not guesses at how long a round trip takes on this machine.
			synctest.Test(t, func(t *testing.T) { hostileHeaders(t, name, h, withBody) })
		}
	}
}

// hostileHeaders is one case of TestHostileTransportHostileHeaders.
func hostileHeaders(t *testing.T, name string, h http.Header, withBody bool) {
	l := rdLimiter(t)
	base := &rdBase{resp: rd429(h, withBody)}
	tr, err := httplimit.NewTransport(l, httplimit.WithBase(base), httplimit.WithPauseLimiter(), httplimit.WithoutJitter, httplimit.WithMaxPause(30*time.Millisecond),
		httplimit.WithRetry(retry.WithMaxAttempts(3), retry.WithBackoff(time.Millisecond, 2*time.Millisecond), retry.WithMaxElapsed(time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	testutil.Within(t, 5*time.Second, name, func() {
		req, _ := http.NewRequest("GET", "http://api.example/x", nil)
		start := time.Now()
		resp, err := tr.RoundTrip(req)
		el := time.Since(start)
		if err != nil {
			t.Errorf("%s: RoundTrip err %v", name, err)
			return
		}
		if resp.StatusCode != 429 {
			t.Errorf("%s: status %d", name, resp.StatusCode)
		}
		if resp.Body != nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		if el > time.Second {
			t.Errorf("%s: RoundTrip took %v with a pause cap of 30ms and a retry budget of 1s", name, el)
		}
		// after RoundTrip, the limiter is paused at most the cap
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		_, err = l.Acquire(ctx, 1)
		cancel()
		if err != nil {
			t.Errorf("%s: limiter still paused >200ms after RoundTrip with a 30ms cap: %v", name, err)
		}
	})
}

// TestHostileTransportHugeRetryAfterIsHonoured: a Retry-After too large for
// a Duration must pause (capped) and not be retried, as one of
// 18446744073709551615 is. Observed: one digit more and it is ignored,
// nothing is paused, and the 429 is retried at once.
func TestHostileTransportHugeRetryAfterIsHonoured(t *testing.T) {
	for _, v := range []string{"18446744073709551615", "18446744073709551616", "99999999999999999999999"} {
		l := rdLimiter(t)
		base := &rdBase{resp: rd429(http.Header{"Retry-After": {v}}, true)}
		tr, _ := httplimit.NewTransport(l, httplimit.WithBase(base), httplimit.WithPauseLimiter(), httplimit.WithoutJitter, httplimit.WithMaxPause(50*time.Millisecond),
			httplimit.WithRetry(retry.WithMaxAttempts(3), retry.WithBackoff(time.Millisecond, time.Millisecond)))
		testutil.Within(t, 5*time.Second, v, func() {
			req, _ := http.NewRequest("GET", "http://api.example/x", nil)
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			s := tr.Stats()
			if s.Attempts != 1 || s.Pauses != 1 || s.Capped != 1 {
				t.Errorf("Retry-After: %s: stats %+v; want 1 attempt, 1 pause, 1 capped (a wait beyond the cap is not retried)", v, s)
			}
		})
	}
}

// TestHostileTransportNilBody429: a base RoundTripper answering 429 with a
// nil Body (as hand-written fakes do; handBack copes with nil) must not
// panic when the 429 is retried.
func TestHostileTransportNilBody429(t *testing.T) {
	l := rdLimiter(t)
	base := &rdBase{resp: rd429(http.Header{"Retry-After": {"0"}}, false)}
	tr, _ := httplimit.NewTransport(l, httplimit.WithBase(base), httplimit.WithPauseLimiter(), httplimit.WithoutJitter,
		httplimit.WithRetry(retry.WithMaxAttempts(2), retry.WithBackoff(0, 0)))
	testutil.Within(t, 5*time.Second, "nil body 429", func() {
		req, _ := http.NewRequest("GET", "http://api.example/x", nil)
		resp, err := tr.RoundTrip(req)
		if err == nil && resp.Body != nil {
			resp.Body.Close()
		}
	})
}

// TestHostileTransportHostileCosts
func TestHostileTransportHostileCosts(t *testing.T) {
	l := rdLimiter(t)
	base := &rdBase{resp: func() *http.Response {
		return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader("ok")), Header: http.Header{}}
	}}
	for _, c := range []struct {
		cost int64
		want error
	}{{0, permits.ErrInvalidCost}, {-1, permits.ErrInvalidCost}, {math.MinInt64, permits.ErrInvalidCost}, {101, permits.ErrCostExceedsCapacity}, {math.MaxInt64, permits.ErrCostExceedsCapacity}} {
		tr, err := httplimit.NewTransport(l, httplimit.WithBase(base), httplimit.WithPauseLimiter(), httplimit.WithoutJitter, httplimit.WithRequestCost(nil), nil)
		if err != nil {
			t.Fatal(err)
		}
		testutil.Within(t, 2*time.Second, fmt.Sprint(c.cost), func() {
			body := &rdClosed{Reader: strings.NewReader("x")}
			req, _ := http.NewRequestWithContext(httplimit.ContextWithCost(context.Background(), c.cost), "POST", "http://api.example/x", body)
			_, err := tr.RoundTrip(req)
			if !errors.Is(err, c.want) {
				t.Errorf("cost %d: err %v, want %v", c.cost, err, c.want)
			}
			if !body.closed {
				t.Errorf("cost %d: request body not closed", c.cost)
			}
		})
	}
	if base.n.Load() != 0 {
		t.Errorf("%d requests sent with invalid costs", base.n.Load())
	}
	// NewTransport hostile options
	for _, d := range []time.Duration{0, -1, math.MinInt64} {
		if _, err := httplimit.NewTransport(l, httplimit.WithMaxPause(d)); !errors.Is(err, permits.ErrInvalidConfig) {
			t.Errorf("WithMaxPause(%v) = %v", d, err)
		}
	}
	if _, err := httplimit.NewTransport(nil); !errors.Is(err, permits.ErrInvalidConfig) {
		t.Errorf("NewTransport(nil) = %v", err)
	}
	for _, o := range []retry.Option{retry.WithMaxAttempts(0), retry.WithBackoff(-1, 0), retry.WithMaxElapsed(-1), nil} {
		if _, err := httplimit.NewTransport(l, httplimit.WithRetry(o)); !errors.Is(err, permits.ErrInvalidConfig) {
			t.Errorf("WithRetry(%v) = %v", o, err)
		}
	}
	// a closed limiter
	l2 := rdLimiter(t)
	l2.Close()
	tr, _ := httplimit.NewTransport(l2, httplimit.WithBase(base), httplimit.WithPauseLimiter(), httplimit.WithoutJitter)
	req, _ := http.NewRequest("GET", "http://api.example/x", nil)
	if _, err := tr.RoundTrip(req); !errors.Is(err, permits.ErrClosed) {
		t.Errorf("RoundTrip on closed limiter = %v", err)
	}
}

type rdClosed struct {
	*strings.Reader
	closed bool
}

func (b *rdClosed) Close() error { b.closed = true; return nil }

// TestHostileMiddleware: keys, costs, closed limiter.
func TestHostileMiddleware(t *testing.T) {
	newLim := func() *keyed.Limiter[string] {
		l, err := keyed.New(func(string) (algorithms.Algorithm, error) {
			return algorithms.NewGCRA(algorithms.PerSecond(10), 2)
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	}
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(200) })
	serve := func(h http.Handler, r *http.Request) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		testutil.Within(t, 5*time.Second, r.URL.String(), func() { h.ServeHTTP(w, r) })
		return w
	}
	huge := strings.Repeat("k", 1<<20)
	keys := map[string]httplimit.KeyFunc{
		"empty":   func(*http.Request) (string, error) { return "", nil },
		"huge":    func(*http.Request) (string, error) { return huge, nil },
		"control": func(*http.Request) (string, error) { return "a\r\nX-Injected: 1", nil },
		"first":   httplimit.FirstKey(nil, nil),
	}
	for name, kf := range keys {
		lim := newLim()
		h := httplimit.Middleware(lim, kf, nil)(ok)
		codes := []int{}
		for i := 0; i < 3; i++ {
			w := serve(h, httptest.NewRequest("GET", "/", nil))
			codes = append(codes, w.Code)
			if _, bad := w.Header()["X-Injected"]; bad {
				t.Errorf("%s: header injected", name)
			}
		}
		if name == "first" {
			if codes[0] != 400 {
				t.Errorf("FirstKey() with no functions: %v, want 400", codes)
			}
			continue
		}
		if fmt.Sprint(codes) != "[200 200 429]" {
			t.Errorf("key %s: codes %v, want [200 200 429]", name, codes)
		}
	}
	// costs
	for _, c := range []struct {
		cost int64
		code int
	}{{0, 500}, {-1, 500}, {math.MinInt64, 500}, {3, 413}, {math.MaxInt64, 413}} {
		lim := newLim()
		h := httplimit.Middleware(lim, func(*http.Request) (string, error) { return "k", nil },
			httplimit.WithCost(func(*http.Request) int64 { return c.cost }), httplimit.WithCost(nil))(ok)
		if w := serve(h, httptest.NewRequest("GET", "/", nil)); w.Code != c.code {
			t.Errorf("cost %d: code %d, want %d", c.cost, w.Code, c.code)
		}
		hw := httplimit.Middleware(lim, func(*http.Request) (string, error) { return "k", nil },
			httplimit.WithCost(func(*http.Request) int64 { return c.cost }), httplimit.WithWait(time.Second))(ok)
		if w := serve(hw, httptest.NewRequest("GET", "/", nil)); w.Code != c.code {
			t.Errorf("WithWait cost %d: code %d, want %d", c.cost, w.Code, c.code)
		}
	}
	// closed limiter: 503
	lim := newLim()
	lim.Close()
	h := httplimit.Middleware(lim, func(*http.Request) (string, error) { return "k", nil })(ok)
	if w := serve(h, httptest.NewRequest("GET", "/", nil)); w.Code != 503 {
		t.Errorf("closed limiter: %d, want 503", w.Code)
	}
	// WithMaxKeys: 503
	lk, _ := keyed.New(func(string) (algorithms.Algorithm, error) {
		return algorithms.NewGCRA(algorithms.PerSecond(10), 2)
	}, keyed.WithMaxKeys(1), keyed.WithIdleTimeout(time.Hour))
	defer lk.Close()
	n := 0
	h = httplimit.Middleware(lk, func(*http.Request) (string, error) { n++; return fmt.Sprint(n), nil })(ok)
	serve(h, httptest.NewRequest("GET", "/", nil))
	if w := serve(h, httptest.NewRequest("GET", "/", nil)); w.Code != 503 {
		t.Errorf("too many keys: %d, want 503", w.Code)
	}
	// KeyByIP with hostile RemoteAddr / XFF
	kf, err := httplimit.KeyByIP(httplimit.TrustProxies("10.0.0.0/8"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		remote, xff string
		code        int
	}{
		{"", "", 400}, {"garbage", "", 400}, {"10.0.0.1:1", strings.Repeat("10.0.0.2, ", 10000) + "1.2.3.4", 200},
		{"10.0.0.1:1", "unknown", 400}, {"10.0.0.1:1", "", 200}, {"[fe80::1%eth0]:1", "", 200}, {"[::ffff:1.2.3.4]:5", "", 200},
	} {
		lim := newLim()
		h := httplimit.Middleware(lim, kf)(ok)
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = c.remote
		if c.xff != "" {
			r.Header.Set("X-Forwarded-For", c.xff)
		}
		if w := serve(h, r); w.Code != c.code {
			t.Errorf("KeyByIP(%q, %.20q): %d, want %d", c.remote, c.xff, w.Code, c.code)
		}
	}
	for _, bits := range []int{0, -1, 129, math.MaxInt, math.MinInt} {
		if _, err := httplimit.KeyByIP(httplimit.IPv6Prefix(bits)); err == nil {
			t.Errorf("IPv6Prefix(%d) accepted", bits)
		}
	}
	if _, err := httplimit.KeyByIP(httplimit.TrustProxies("", "300.0.0.0/8", "::/129")); err == nil {
		t.Errorf("TrustProxies(garbage) accepted")
	}
}

// TestHostileMiddlewareTinyWaitGrantsFree: WithWait(1ns) with the key's
// capacity free must pass the request (it needs no wait), not answer 429.
func TestHostileMiddlewareTinyWaitGrantsFree(t *testing.T) {
	lim, _ := keyed.New(func(string) (algorithms.Algorithm, error) {
		return algorithms.NewGCRA(algorithms.PerSecond(1e6), 1e6)
	})
	defer lim.Close()
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(200) })
	for _, d := range []time.Duration{1, time.Microsecond} {
		h := httplimit.Middleware(lim, func(*http.Request) (string, error) { return "k", nil }, httplimit.WithWait(d))(ok)
		refused := 0
		for i := 0; i < 500; i++ {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
			if w.Code != 200 {
				refused++
			}
		}
		if refused > 0 {
			t.Errorf("WithWait(%v): %d of 500 requests refused with the key's capacity free", d, refused)
		}
	}
}

// TestHostileMiddlewareHeadersAgree: on a refusal, RateLimit's t equals
// Retry-After, and both are positive whole seconds.
func TestHostileMiddlewareHeadersAgree(t *testing.T) {
	lim, _ := keyed.New(func(string) (algorithms.Algorithm, error) {
		return algorithms.NewGCRA(algorithms.Rate{Count: 1, Per: time.Hour}, 1)
	})
	defer lim.Close()
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(200) })
	for _, opts := range [][]httplimit.Option{nil, {httplimit.WithWait(10 * time.Millisecond)}, {httplimit.WithWait(-1)}} {
		h := httplimit.Middleware(lim, func(*http.Request) (string, error) { return "k", nil }, opts...)(ok)
		var last *httptest.ResponseRecorder
		for i := 0; i < 2; i++ {
			last = httptest.NewRecorder()
			r := httptest.NewRequest("GET", "/", nil)
			ctx, cancel := context.WithTimeout(r.Context(), 50*time.Millisecond)
			testutil.Within(t, 5*time.Second, "agree", func() { h.ServeHTTP(last, r.WithContext(ctx)) })
			cancel()
		}
		if last.Code != 429 {
			t.Errorf("opts %v: second code %d", opts, last.Code)
			continue
		}
		ra := last.Header().Get("Retry-After")
		ls, err := httplimit.ParseServiceLimits(last.Header().Values("RateLimit")...)
		if err != nil || len(ls) != 1 {
			t.Errorf("opts %v: RateLimit %q: %v", opts, last.Header().Values("RateLimit"), err)
			continue
		}
		if fmt.Sprint(int64(ls[0].Reset/time.Second)) != ra || ra == "0" || ra == "" {
			t.Errorf("opts %v: Retry-After %q, RateLimit t %v", opts, ra, ls[0].Reset)
		}
	}
}
