package httplimit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/breaker"
	"github.com/sluicehq/sluice/budget"
	"github.com/sluicehq/sluice/httplimit"
	"github.com/sluicehq/sluice/permits"
	"github.com/sluicehq/sluice/retry"
)

// The Transport's behaviours in virtual time: an in-process API answers
// each request from a script, in the caller's goroutine, so that the
// client, the API and the clock share one synctest bubble.

// fakeAPI is a RoundTripper that answers from a script and records what it
// was sent. Every body it hands out counts its Close calls.
type fakeAPI struct {
	answer func(n int, r *http.Request) (*http.Response, error)

	mu     sync.Mutex
	sent   []sent
	bodies []*trackedBody
}

type sent struct {
	at   time.Time
	req  *http.Request
	body string
}

func (a *fakeAPI) RoundTrip(r *http.Request) (*http.Response, error) {
	var b []byte
	if r.Body != nil {
		b, _ = io.ReadAll(r.Body)
		_ = r.Body.Close()
	}
	a.mu.Lock()
	n := len(a.sent)
	a.sent = append(a.sent, sent{at: time.Now(), req: r, body: string(b)})
	a.mu.Unlock()
	resp, err := a.answer(n, r)
	if err != nil {
		return nil, err
	}
	if tb, ok := resp.Body.(*trackedBody); ok {
		tb.ctx = r.Context()
		a.mu.Lock()
		a.bodies = append(a.bodies, tb)
		a.mu.Unlock()
	}
	resp.Request = r
	return resp, nil
}

// times returns the instants the requests were sent at, since t0.
func (a *fakeAPI) times(t0 time.Time) []time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	var d []time.Duration
	for _, s := range a.sent {
		d = append(d, s.at.Sub(t0))
	}
	return d
}

func (a *fakeAPI) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.sent)
}

// closes returns how many times each body handed out was closed.
func (a *fakeAPI) closes() []int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	var c []int64
	for _, b := range a.bodies {
		c = append(c, b.closed.Load())
	}
	return c
}

// trackedBody is a response body that counts its Close calls and the bytes
// read from it. A body of size -1 is endless; a trickling one blocks every
// Read until its request's context ends.
type trackedBody struct {
	r        io.Reader
	trickle  bool
	ctx      context.Context
	closed   atomic.Int64
	readSize atomic.Int64
}

func (b *trackedBody) Read(p []byte) (int, error) {
	if b.trickle {
		<-b.ctx.Done()
		return 0, b.ctx.Err()
	}
	n, err := b.r.Read(p)
	b.readSize.Add(int64(n))
	return n, err
}

func (b *trackedBody) Close() error { b.closed.Add(1); return nil }

type endless struct{}

func (endless) Read(p []byte) (int, error) { return len(p), nil }

func reply(status int, body string, kv ...string) *http.Response {
	return &http.Response{StatusCode: status, Status: http.StatusText(status), Header: header(kv...),
		Body: &trackedBody{r: strings.NewReader(body)}, ContentLength: int64(len(body))}
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	return string(b)
}

// newLimiter returns a GCRA limiter that is closed when the test ends
// (inside the bubble, for a test in one).
func newLimiter(t *testing.T, r algorithms.Rate, burst int64) *actor.Limiter {
	t.Helper()
	g, err := algorithms.NewGCRA(r, burst)
	require.NoError(t, err)
	l := actor.MustNew(g)
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// fast is a limiter that never makes these tests wait: only pauses do.
func fast(t *testing.T) *actor.Limiter { return newLimiter(t, algorithms.PerSecond(1000), 10) }

// refuseThenOK answers the first request with first, the others 200 "ok".
func refuseThenOK(first func() *http.Response) func(int, *http.Request) (*http.Response, error) {
	return func(n int, _ *http.Request) (*http.Response, error) {
		if n == 0 {
			return first(), nil
		}
		return reply(http.StatusOK, "ok"), nil
	}
}

// always answers every request with a fresh copy of what make returns.
func always(make func() *http.Response) func(int, *http.Request) (*http.Response, error) {
	return func(int, *http.Request) (*http.Response, error) { return make(), nil }
}

func newTransport(t *testing.T, lim permits.Limiter, api http.RoundTripper, opts ...httplimit.TransportOption) *httplimit.Transport {
	t.Helper()
	tr, err := httplimit.NewTransport(lim, append([]httplimit.TransportOption{httplimit.WithBase(api), httplimit.WithPauseLimiter(), httplimit.WithoutJitter}, opts...)...)
	require.NoError(t, err)
	return tr
}

func do(t *testing.T, tr http.RoundTripper, method, url string, body io.Reader) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	require.NoError(t, err)
	return tr.RoundTrip(req)
}

// A 429 with Retry-After pauses the limiter for every caller: a request
// made during the pause waits for its end, in FIFO order ahead of the
// retry, and the retry comes exactly when asked.
func TestA429PausesEveryCallerUntilRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		lim := newLimiter(t, algorithms.PerSecond(1), 1)
		api := &fakeAPI{answer: func(n int, r *http.Request) (*http.Response, error) {
			if n == 0 {
				return reply(http.StatusTooManyRequests, "slow down", "Retry-After", "2"), nil
			}
			return reply(http.StatusOK, "ok "+r.URL.Path), nil
		}}
		tr := newTransport(t, lim, api)
		var wg sync.WaitGroup
		var a, b string
		wg.Go(func() {
			resp, err := do(t, tr, http.MethodGet, "http://api.test/a", nil)
			require.NoError(t, err)
			a = readAll(t, resp)
		})
		time.Sleep(time.Second)
		wg.Go(func() {
			resp, err := do(t, tr, http.MethodGet, "http://api.test/b", nil)
			require.NoError(t, err)
			b = readAll(t, resp)
		})
		wg.Wait()
		assert.Equal(t, "ok /a", a)
		assert.Equal(t, "ok /b", b)
		assert.Equal(t, []time.Duration{0, 2 * time.Second, 3 * time.Second}, api.times(t0),
			"b, made during the pause, waits for its end; a's retry, after its Retry-After, queues behind b (1/s)")
		assert.Equal(t, "/b", api.sent[1].req.URL.Path, "FIFO: b queued before a's retry")
		assert.Equal(t, []int64{1, 1, 1}, api.closes(), "the 429's body discarded and closed once, the others by the caller")
		st := tr.Stats()
		assert.Equal(t, httplimit.TransportStats{Requests: 2, Attempts: 3, Retries: 1, Throttled: 1, Pauses: 1,
			Paced:         2, // b for the pause, a's retry for the limiter
			PausesStarted: httplimit.PauseCounts{TooManyRequests: 1}, Responses: [6]int64{2: 2, 4: 1}}, st)
	})
}

// Each form a wait can take pauses for that long, and the retry comes then.
func TestTheWaitComesFromEveryForm(t *testing.T) {
	for _, c := range []struct {
		name string
		kv   func(now time.Time) []string
		want time.Duration
	}{
		{"Retry-After seconds", func(time.Time) []string { return []string{"Retry-After", "3"} }, 3 * time.Second},
		{"Retry-After date", func(now time.Time) []string {
			return []string{"Retry-After", now.Add(4 * time.Second).UTC().Format(http.TimeFormat)}
		}, 4 * time.Second},
		{"RateLimit", func(time.Time) []string { return []string{"RateLimit", `"tokens";r=0;t=5`} }, 5 * time.Second},
		{"x-ratelimit", func(time.Time) []string {
			return []string{"X-Ratelimit-Remaining-Tokens", "0", "X-Ratelimit-Reset-Tokens", "1.5s", "X-Ratelimit-Remaining-Requests", "3", "X-Ratelimit-Reset-Requests", "9s"}
		}, 1500 * time.Millisecond},
		{"a date in the past: no pause, a retry at once", func(now time.Time) []string {
			return []string{"Retry-After", now.Add(-time.Hour).UTC().Format(http.TimeFormat)}
		}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				t0 := time.Now()
				lim := fast(t)
				api := &fakeAPI{answer: refuseThenOK(func() *http.Response { return reply(http.StatusTooManyRequests, "", c.kv(time.Now())...) })}
				tr := newTransport(t, lim, api, httplimit.WithRetry(retry.WithBackoff(0, 0)))
				resp, err := do(t, tr, http.MethodGet, "http://api.test/", nil)
				require.NoError(t, err)
				assert.Equal(t, "ok", readAll(t, resp))
				assert.Equal(t, []time.Duration{0, c.want}, api.times(t0))
				_, err = lim.TryAcquire(1)
				assert.NoError(t, err, "the pause is over")
				if c.want == 0 {
					assert.Zero(t, tr.Stats().Pauses)
				}
			})
		})
	}
}

// Hostile and malformed fields get a bounded answer: never a hang, never a
// panic. A wait beyond the cap pauses for the cap only and hands the 429
// back at once, its body intact; garbage is no wait at all (the back-off
// decides); a wait within the cap is honoured.
func TestHostileFieldsAreBounded(t *testing.T) {
	for _, c := range []struct {
		name     string
		kv       []string
		retried  bool
		pausedTo time.Duration // when the limiter grants again
	}{
		{"a Retry-After of 30 years", []string{"Retry-After", "999999999"}, false, 5 * time.Second},
		{"a Retry-After of 292 years", []string{"Retry-After", "18446744073709551615"}, false, 5 * time.Second},
		{"a reset in the year 2100", []string{"X-Ratelimit-Remaining", "0", "X-Ratelimit-Reset", "4102444800"}, false, 5 * time.Second},
		{"an overflowing reset", []string{"X-Ratelimit-Remaining-Tokens", "0", "X-Ratelimit-Reset-Tokens", "99999999999999999999999999"}, false, 5 * time.Second},
		{"a negative Retry-After", []string{"Retry-After", "-30"}, true, 0},
		{"garbage everywhere", []string{"Retry-After", "tomorrow", "RateLimit", `"a";r=0;t=-1`, "X-Ratelimit-Remaining", "none", "X-Ratelimit-Reset", "-5s"}, true, 0},
		{"a Retry-After beyond 64 bits", []string{"Retry-After", "99999999999999999999999"}, false, 5 * time.Second},
		{"a wait just within the cap", []string{"Retry-After", "5"}, true, 5 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				t0 := time.Now()
				lim := fast(t)
				api := &fakeAPI{answer: refuseThenOK(func() *http.Response { return reply(http.StatusTooManyRequests, "quota", c.kv...) })}
				tr := newTransport(t, lim, api, httplimit.WithMaxPause(5*time.Second), httplimit.WithRetry(retry.WithBackoff(0, 0)))
				resp, err := do(t, tr, http.MethodGet, "http://api.test/", nil)
				require.NoError(t, err)
				body := readAll(t, resp)
				if !c.retried {
					assert.Zero(t, time.Since(t0), "the answer comes at once")
					assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
					assert.Equal(t, "quota", body, "the 429 handed back intact")
					assert.Equal(t, 1, api.count())
					assert.Equal(t, int64(1), tr.Stats().Capped)
				} else {
					assert.Equal(t, "ok", body)
					assert.Equal(t, 2, api.count())
				}
				require.NoError(t, lim.Wait(context.Background()))
				assert.Equal(t, c.pausedTo, time.Since(t0), "the limiter grants again when the capped pause ends")
			})
		})
	}
}

// When retrying is over, the last 429 goes back to the caller with its body
// intact; every one discarded before was drained and closed once.
func TestTheLast429IsHandedBackIntact(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim := fast(t)
		api := &fakeAPI{answer: func(n int, r *http.Request) (*http.Response, error) {
			return reply(http.StatusTooManyRequests, strings.Repeat("x", 100)+"#"+string(rune('0'+n)), "Retry-After", "1"), nil
		}}
		tr := newTransport(t, lim, api, httplimit.WithRetry(retry.WithMaxAttempts(3)))
		resp, err := do(t, tr, http.MethodGet, "http://api.test/", nil)
		require.NoError(t, err)
		assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
		assert.Equal(t, []int64{1, 1, 0}, api.closes(), "two discarded and closed; the last one open, for the caller")
		assert.Equal(t, strings.Repeat("x", 100)+"#2", readAll(t, resp))
		assert.Equal(t, []int64{1, 1, 1}, api.closes())
		assert.Equal(t, int64(100+2), api.bodies[0].readSize.Load(), "drained, so the connection can be reused")
	})
}

// A discarded body is drained at most 64 KiB, and for at most a second: an
// endless or a trickling body cannot hold the retry back or leak.
func TestDrainingIsBounded(t *testing.T) {
	for _, c := range []struct {
		name string
		body *trackedBody
	}{
		{"endless", &trackedBody{r: endless{}}},
		{"trickling", &trackedBody{trickle: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				t0 := time.Now()
				lim := fast(t)
				api := &fakeAPI{answer: refuseThenOK(func() *http.Response {
					return &http.Response{StatusCode: http.StatusServiceUnavailable, Header: header("Retry-After", "3"), Body: c.body}
				})}
				tr := newTransport(t, lim, api)
				resp, err := do(t, tr, http.MethodGet, "http://api.test/", nil)
				require.NoError(t, err)
				assert.Equal(t, "ok", readAll(t, resp))
				assert.Equal(t, []time.Duration{0, 3 * time.Second}, api.times(t0), "the drain counts towards the wait")
				assert.Equal(t, int64(1), c.body.closed.Load())
				assert.LessOrEqual(t, c.body.readSize.Load(), int64(64<<10))
				if c.body.trickle {
					assert.ErrorIs(t, c.body.ctx.Err(), context.Canceled, "cut off after a second")
				}
			})
		})
	}
}

// Which requests are retried: idempotent ones and replayable bodies after
// a 429; only idempotent ones after a network error; a body that cannot be
// sent again never; WithRetryNonIdempotent for the rest.
func TestWhichRequestsAreRetried(t *testing.T) {
	errReset := errors.New("connection reset by peer")
	type req struct {
		method string
		body   func() io.Reader // nil: no body
		key    bool             // an Idempotency-Key header
	}
	replayable := func() io.Reader { return strings.NewReader(`{"prompt":"hi"}`) }
	opaque := func() io.Reader { return io.MultiReader(strings.NewReader(`{"prompt":"hi"}`)) } // no GetBody
	for _, c := range []struct {
		name              string
		req               req
		anyMethod         bool
		after429, afterIO bool
	}{
		{"GET", req{method: http.MethodGet}, false, true, true},
		{"DELETE", req{method: http.MethodDelete}, false, true, true},
		{"PUT, replayable", req{method: http.MethodPut, body: replayable}, false, true, true},
		{"PUT, opaque body", req{method: http.MethodPut, body: opaque}, false, false, false},
		{"POST, replayable", req{method: http.MethodPost, body: replayable}, false, true, false},
		{"POST, no body", req{method: http.MethodPost}, false, false, false},
		{"POST, opaque body", req{method: http.MethodPost, body: opaque}, false, false, false},
		{"POST, Idempotency-Key", req{method: http.MethodPost, body: replayable, key: true}, false, true, true},
		{"POST, no body, any method", req{method: http.MethodPost}, true, true, true},
		{"POST, replayable, any method", req{method: http.MethodPost, body: replayable}, true, true, true},
		{"POST, opaque body, any method", req{method: http.MethodPost, body: opaque}, true, false, false},
	} {
		for _, failure := range []string{"429", "network"} {
			t.Run(c.name+" after "+failure, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					lim := fast(t)
					api := &fakeAPI{answer: func(n int, r *http.Request) (*http.Response, error) {
						switch {
						case n > 0:
							return reply(http.StatusOK, "ok"), nil
						case failure == "429":
							return reply(http.StatusTooManyRequests, "", "Retry-After", "1"), nil
						}
						return nil, errReset
					}}
					var opts []httplimit.TransportOption
					if c.anyMethod {
						opts = append(opts, httplimit.WithRetryNonIdempotent())
					}
					tr := newTransport(t, lim, api, opts...)
					var body io.Reader
					if c.req.body != nil {
						body = c.req.body()
					}
					r, err := http.NewRequest(c.req.method, "http://api.test/", body)
					require.NoError(t, err)
					if c.req.key {
						r.Header.Set("Idempotency-Key", "k1")
					}
					resp, err := tr.RoundTrip(r)
					want := c.after429
					if failure == "network" {
						want = c.afterIO
					}
					switch {
					case want:
						require.NoError(t, err)
						assert.Equal(t, http.StatusOK, resp.StatusCode)
						readAll(t, resp)
						require.Equal(t, 2, api.count())
						assert.Equal(t, api.sent[0].body, api.sent[1].body, "the same body sent again")
					case failure == "429":
						require.NoError(t, err)
						assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
						readAll(t, resp)
						assert.Equal(t, 1, api.count())
					default:
						assert.ErrorIs(t, err, errReset)
						assert.Equal(t, 1, api.count())
					}
				})
			})
		}
	}
}

// The caller's request is never modified, and every attempt carries its
// context: its values and its deadline.
func TestTheCallersRequestIsUntouched(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim := fast(t)
		api := &fakeAPI{answer: func(n int, r *http.Request) (*http.Response, error) {
			r.Header.Set("X-Touched-By-The-Base", "yes") // a base may write on what it is given
			if n == 0 {
				return reply(http.StatusTooManyRequests, "", "Retry-After", "1"), nil
			}
			return reply(http.StatusOK, "ok"), nil
		}}
		tr := newTransport(t, lim, api)
		type key struct{}
		ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), key{}, "v"), time.Minute)
		defer cancel()
		r, err := http.NewRequestWithContext(ctx, http.MethodPut, "http://api.test/x?q=1", bytes.NewReader([]byte("payload")))
		require.NoError(t, err)
		r.Header.Set("Authorization", "Bearer k")
		before := r.Clone(ctx)
		resp, err := tr.RoundTrip(r)
		require.NoError(t, err)
		readAll(t, resp)
		assert.Equal(t, before.Header, r.Header)
		assert.Equal(t, before.URL, r.URL)
		assert.Equal(t, before.Method, r.Method)
		assert.True(t, r.Context() == ctx)
		deadline, _ := ctx.Deadline()
		for i, s := range api.sent {
			assert.True(t, s.req != r, "attempt %d is a clone", i)
			assert.Equal(t, "v", s.req.Context().Value(key{}), "attempt %d keeps the context's values", i)
			d, ok := s.req.Context().Deadline()
			assert.True(t, ok && d.Equal(deadline), "attempt %d keeps the deadline", i)
			assert.Equal(t, "Bearer k", s.req.Header.Get("Authorization"))
			assert.Equal(t, "payload", s.body)
		}
		assert.Equal(t, resp.Request, api.sent[1].req)
	})
}

// A deadline too close for the wait a 429 asks for: the 429 goes back at
// once, not after sleeping into the deadline.
func TestADeadlineShorterThanTheWaitHandsThe429Back(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		lim := fast(t)
		api := &fakeAPI{answer: always(func() *http.Response { return reply(http.StatusTooManyRequests, "later", "Retry-After", "10") })}
		tr := newTransport(t, lim, api)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/", nil)
		resp, err := tr.RoundTrip(r)
		require.NoError(t, err)
		assert.Zero(t, time.Since(t0))
		assert.Equal(t, "later", readAll(t, resp))
		assert.Equal(t, 1, api.count())
	})
}

// The context ending during the wait ends RoundTrip at once, with its
// error; the 429 it was waiting after is closed.
func TestCancelDuringTheWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		lim := fast(t)
		api := &fakeAPI{answer: always(func() *http.Response { return reply(http.StatusTooManyRequests, "", "Retry-After", "10") })}
		tr := newTransport(t, lim, api)
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(3*time.Second, cancel)
		r, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/", nil)
		resp, err := tr.RoundTrip(r)
		assert.Nil(t, resp)
		assert.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, 3*time.Second, time.Since(t0))
		assert.Equal(t, []int64{1}, api.closes())
	})
}

// The limiter's refusal (a wait bound, a cost too large, a cost below 1) is
// returned at once: nothing is sent, and the request's body is closed, as
// a RoundTripper must.
func TestRefusalsSendNothingAndCloseTheBody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim := newLimiter(t, algorithms.PerSecond(1), 1)
		require.True(t, lim.Allow())
		api := &fakeAPI{answer: always(func() *http.Response { return reply(http.StatusOK, "ok") })}
		for _, c := range []struct {
			name string
			lim  permits.Limiter
			cost int64
			want error
		}{
			{"a wait bound", permits.MaxWait(lim, 100*time.Millisecond), 1, permits.ErrRateLimited},
			{"a cost above the capacity", lim, 2, permits.ErrCostExceedsCapacity},
			{"a cost below 1", lim, 0, permits.ErrInvalidCost},
		} {
			tr := newTransport(t, c.lim, api, httplimit.WithRequestCost(func(*http.Request) int64 { return c.cost }))
			body := &trackedBody{r: strings.NewReader("payload")}
			r, _ := http.NewRequest(http.MethodPost, "http://api.test/", body)
			start := time.Now()
			resp, err := tr.RoundTrip(r)
			assert.Nil(t, resp, c.name)
			assert.ErrorIs(t, err, c.want, c.name)
			assert.Zero(t, time.Since(start), c.name)
			assert.Equal(t, int64(1), body.closed.Load(), c.name)
		}
		assert.Zero(t, api.count())
	})
}

// The cost comes from the request's context (ContextWithCost), else 1, or
// from WithRequestCost.
func TestTheCostOfARequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tokens := newLimiter(t, algorithms.PerSecond(100), 100)
		api := &fakeAPI{answer: always(func() *http.Response { return reply(http.StatusOK, "ok") })}
		tr := newTransport(t, tokens, api)
		r, _ := http.NewRequestWithContext(httplimit.ContextWithCost(context.Background(), 70), http.MethodGet, "http://api.test/", nil)
		resp, err := tr.RoundTrip(r)
		require.NoError(t, err)
		readAll(t, resp)
		resp, err = do(t, tr, http.MethodGet, "http://api.test/", nil) // 1
		require.NoError(t, err)
		readAll(t, resp)
		_, err = tokens.TryAcquire(30)
		assert.ErrorIs(t, err, permits.ErrRateLimited, "70 + 1 taken")
		_, err = tokens.TryAcquire(29)
		assert.NoError(t, err)
		c, ok := httplimit.CostFromContext(r.Context())
		assert.True(t, ok)
		assert.Equal(t, int64(70), c)
	})
}

// The permit is settled with the cost the response reports: a sliding
// window gives back exactly what the estimate overstated, and counts what
// it understated; a request slot stays one whatever the tokens.
func TestSettleFromTheResponse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w, err := algorithms.NewSlidingWindow(algorithms.PerSecond(1000))
		require.NoError(t, err)
		tokens := actor.MustNew(w)
		t.Cleanup(func() { _ = tokens.Close() })
		requests := newLimiter(t, algorithms.PerSecond(10), 5)
		usage := []string{"300", "1200", "garbage"}
		api := &fakeAPI{answer: func(n int, r *http.Request) (*http.Response, error) {
			return reply(http.StatusOK, "ok", "X-Usage-Tokens", usage[n]), nil
		}}
		tr := newTransport(t, permits.All(permits.FixedCost(requests, 1), tokens), api,
			httplimit.WithRequestCost(func(*http.Request) int64 { return 800 }),
			httplimit.WithSettle(func(resp *http.Response) (int64, bool) {
				n, err := parseInt(resp.Header.Get("X-Usage-Tokens"))
				return n, err == nil
			}))
		resp, err := do(t, tr, http.MethodGet, "http://api.test/", nil)
		require.NoError(t, err)
		readAll(t, resp)
		assert.Equal(t, int64(700), tokenRoom(t, tokens), "800 estimated, 300 used: 500 back")
		resp, err = do(t, tr, http.MethodGet, "http://api.test/", nil)
		require.NoError(t, err)
		readAll(t, resp)
		assert.Equal(t, int64(0), tokenRoom(t, tokens), "800 estimated, 1200 used: the window counts 1500 (over its 1000: a debt)")
		time.Sleep(time.Second)
		resp, err = do(t, tr, http.MethodGet, "http://api.test/", nil)
		require.NoError(t, err)
		readAll(t, resp)
		assert.Equal(t, int64(200), tokenRoom(t, tokens), "an unreadable usage keeps the estimate")
		assert.Equal(t, int64(2), tr.Stats().Settled)
	})
}

// tokenRoom returns how many units lim would grant now, taking none.
func tokenRoom(t *testing.T, lim *actor.Limiter) int64 {
	t.Helper()
	for n := int64(1000); n > 0; n-- {
		g, err := lim.TryAcquireGrant(n)
		if err == nil {
			require.True(t, lim.Refund(g))
			return n
		}
	}
	return 0
}

// A pool's permit is held until the response's body is read to the end or
// closed, so that no more responses stream at once than the pool allows.
func TestThePoolIsHeldUntilTheBodyIsDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pool, err := actor.NewPool(1)
		require.NoError(t, err)
		defer pool.Close()
		api := &fakeAPI{answer: always(func() *http.Response { return reply(http.StatusOK, "stream") })}
		tr := newTransport(t, pool, api)
		first, err := do(t, tr, http.MethodGet, "http://api.test/1", nil)
		require.NoError(t, err)
		assert.Equal(t, int64(1), pool.Stats().InFlight)
		var second *http.Response
		var wg sync.WaitGroup
		wg.Go(func() {
			var err error
			second, err = do(t, tr, http.MethodGet, "http://api.test/2", nil)
			assert.NoError(t, err)
		})
		synctest.Wait()
		assert.Equal(t, 1, api.count(), "the second waits for the first's body")
		b, err := io.ReadAll(first.Body) // to the end, without Close
		require.NoError(t, err)
		assert.Equal(t, "stream", string(b))
		wg.Wait()
		assert.Equal(t, 2, api.count())
		require.NoError(t, first.Body.Close())
		require.NoError(t, second.Body.Close())
		assert.Equal(t, int64(0), pool.Stats().InFlight, "released once, whatever came first")
	})
}

// The retry budget bounds retries across callers: once it is spent, the
// 429 goes back to the caller.
func TestTheBudgetBoundsRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim := fast(t)
		api := &fakeAPI{answer: always(func() *http.Response { return reply(http.StatusServiceUnavailable, "down", "Retry-After", "1") })}
		b, err := budget.New(budget.WithMinRetriesPerSec(0), budget.WithPercentCanRetry(0.5))
		require.NoError(t, err)
		tr := newTransport(t, lim, api, httplimit.WithBudget(b), httplimit.WithRetry(retry.WithMaxAttempts(10)))
		for range 4 {
			resp, err := do(t, tr, http.MethodGet, "http://api.test/", nil)
			require.NoError(t, err)
			assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
			assert.Equal(t, "down", readAll(t, resp))
		}
		assert.Equal(t, int64(2), tr.Stats().Retries, "4 requests at 50%: 2 retries")
		assert.Equal(t, 6, api.count())
		for i, n := range api.closes() {
			assert.Equal(t, int64(1), n, "body %d", i)
		}
	})
}

// The breaker sees each attempt sent: a network error or a 5xx opens it, a
// 429 does not with BreakerClassifier. While it is open nothing is sent:
// its refusal is retried after its RetryAfter when there is time for it,
// and returned otherwise.
func TestTheBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim := fast(t)
		br, err := breaker.New(breaker.WithConsecutiveFailures(2), breaker.WithOpenTimeout(30*time.Second),
			breaker.WithClassifier(httplimit.BreakerClassifier))
		require.NoError(t, err)
		statuses := []int{429, 429, 429, 500, 502, 200}
		api := &fakeAPI{answer: func(n int, r *http.Request) (*http.Response, error) {
			return reply(statuses[n], "", "Retry-After", "0"), nil
		}}
		tr := newTransport(t, lim, api, httplimit.WithBreaker(br), httplimit.WithRetry(retry.WithMaxAttempts(3), retry.WithBackoff(0, 0)))
		resp, err := do(t, tr, http.MethodGet, "http://api.test/", nil)
		require.NoError(t, err)
		assert.Equal(t, 429, resp.StatusCode, "three 429s: attempts exhausted")
		readAll(t, resp)
		assert.Equal(t, breaker.Closed, br.State(), "429s are a quota, not the API's health")
		resp, err = do(t, tr, http.MethodGet, "http://api.test/", nil)
		require.NoError(t, err)
		assert.Equal(t, 500, resp.StatusCode, "a 500 is not retried")
		readAll(t, resp)
		start := time.Now()
		_, err = do(t, tr, http.MethodGet, "http://api.test/", nil)
		assert.Equal(t, breaker.Open, br.State(), "a 500 and a 502 in a row")
		assert.ErrorIs(t, err, breaker.ErrOpen, "the 502's retry meets the open breaker")
		assert.ErrorIs(t, err, httplimit.ErrNotRetried)
		var re *retry.Error
		require.ErrorAs(t, err, &re, "retries were made")
		assert.Equal(t, 2, re.Attempts)

		// Open: every call fails at once with the breaker's RetryAfter,
		// deadline or none, and sends nothing.
		sentBefore := api.count()
		for _, d := range []time.Duration{10 * time.Second, time.Hour} {
			ctx, cancel := context.WithTimeout(context.Background(), d)
			r, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/", nil)
			resp, err = tr.RoundTrip(r)
			cancel()
			assert.Nil(t, resp)
			var oe *breaker.OpenError
			require.ErrorAs(t, err, &oe)
			assert.Equal(t, 30*time.Second, oe.RetryAfter)
			wait, ok := retry.Hint(err)
			assert.True(t, ok)
			assert.Equal(t, 30*time.Second, wait)
		}
		assert.Zero(t, time.Since(start), "at once")
		assert.Equal(t, sentBefore, api.count(), "nothing sent")

		time.Sleep(30 * time.Second)
		resp, err = do(t, tr, http.MethodGet, "http://api.test/", nil)
		require.NoError(t, err, "after RetryAfter, the breaker lets a probe through")
		assert.Equal(t, 200, resp.StatusCode)
		readAll(t, resp)
		assert.Equal(t, breaker.Closed, br.State())
		assert.Equal(t, sentBefore+1, api.count())
	})
}

func parseInt(s string) (int64, error) {
	var n int64
	if s == "" {
		return 0, errors.New("empty")
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, errors.New("not a number")
		}
		n = n*10 + int64(c-'0')
	}
	return n, nil
}

// pauseRecorder is a limiter of one's own that can pause: the Transport
// finds it inside All and wrappers, as it finds actor.Limiter.
type pauseRecorder struct {
	permits.Limiter
	until []time.Time
}

func (p *pauseRecorder) Pause(until time.Time) error {
	p.until = append(p.until, until)
	return nil
}

// Every part that can pause is paused, wherever All and the wrappers put
// it; the pool, which cannot, goes on releasing and granting slots.
func TestEveryPartThatCanPauseIsPaused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		requests := newLimiter(t, algorithms.PerSecond(100), 10)
		tokens := newLimiter(t, algorithms.PerSecond(10_000), 10_000)
		pool, err := actor.NewPool(4)
		require.NoError(t, err)
		defer pool.Close()
		mine := &pauseRecorder{Limiter: permits.Unlimited}
		lim := permits.All(permits.FixedCost(requests, 1), permits.MaxWait(tokens, time.Minute),
			permits.FixedCost(pool, 1), permits.FixedCost(mine, 1))
		api := &fakeAPI{answer: always(func() *http.Response { return reply(http.StatusTooManyRequests, "", "Retry-After", "4") })}
		tr := newTransport(t, lim, api, httplimit.WithRetry(retry.WithMaxAttempts(1)))
		resp, err := do(t, tr, http.MethodGet, "http://api.test/", nil)
		require.NoError(t, err)
		readAll(t, resp)
		_, err = requests.TryAcquire(1)
		assert.ErrorIs(t, err, permits.ErrRateLimited, "requests paused")
		_, err = tokens.TryAcquire(1)
		assert.ErrorIs(t, err, permits.ErrRateLimited, "tokens paused")
		assert.Equal(t, []time.Time{t0.Add(4 * time.Second)}, mine.until)
		p, err := pool.TryAcquire(4)
		assert.NoError(t, err, "the pool is free: the 429's slot was released")
		p.Release()
		time.Sleep(4*time.Second + time.Millisecond) // (at the very instant, actor may still refuse for 1ns)
		_, err = requests.TryAcquire(1)
		assert.NoError(t, err, "the pause is over")
	})
}

func TestNewTransportValidates(t *testing.T) {
	for _, c := range []struct {
		name string
		lim  permits.Limiter
		opts []httplimit.TransportOption
	}{
		{"a nil limiter", nil, nil},
		{"a pause cap of zero", permits.Unlimited, []httplimit.TransportOption{httplimit.WithMaxPause(0)}},
		{"a negative pause cap", permits.Unlimited, []httplimit.TransportOption{httplimit.WithMaxPause(-time.Second)}},
		{"retry options retry refuses", permits.Unlimited, []httplimit.TransportOption{httplimit.WithRetry(retry.WithMaxAttempts(0))}},
		{"a nil retry option", permits.Unlimited, []httplimit.TransportOption{httplimit.WithRetry(nil)}},
	} {
		_, err := httplimit.NewTransport(c.lim, c.opts...)
		assert.ErrorIs(t, err, permits.ErrInvalidConfig, c.name)
	}
	tr, err := httplimit.NewTransport(permits.Unlimited, nil, httplimit.WithBase(nil), httplimit.WithRequestCost(nil), httplimit.WithSettle(nil))
	require.NoError(t, err, "nil options are ignored")
	assert.NotNil(t, tr)
}

// idleCloser is a base that records CloseIdleConnections.
type idleCloser struct {
	http.RoundTripper
	closed bool
}

func (c *idleCloser) CloseIdleConnections() { c.closed = true }

// Responses without a body, and protocol switches, release their permits
// at once; CloseIdleConnections reaches the base.
func TestResponsesWithoutABody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pool, err := actor.NewPool(1)
		require.NoError(t, err)
		defer pool.Close()
		conn := &trackedBody{r: strings.NewReader("")}
		upgraded := struct {
			io.ReadWriteCloser
		}{readWriteCloser{conn}}
		answers := []*http.Response{
			{StatusCode: http.StatusNoContent, Body: http.NoBody},
			{StatusCode: http.StatusSwitchingProtocols, Body: upgraded},
		}
		api := &fakeAPI{answer: func(n int, _ *http.Request) (*http.Response, error) { return answers[n], nil }}
		base := &idleCloser{RoundTripper: api}
		tr := newTransport(t, pool, base)
		resp, err := do(t, tr, http.MethodDelete, "http://api.test/", nil)
		require.NoError(t, err)
		assert.Equal(t, http.NoBody, resp.Body)
		assert.Equal(t, int64(0), pool.Stats().InFlight)
		resp, err = do(t, tr, http.MethodGet, "http://api.test/ws", nil)
		require.NoError(t, err)
		_, ok := resp.Body.(io.Writer)
		assert.True(t, ok, "a switched protocol's connection is handed over as it is")
		assert.Equal(t, int64(0), pool.Stats().InFlight)
		assert.NoError(t, resp.Request.Context().Err(), "and its context lives on")
		require.NoError(t, resp.Body.Close())
		tr.CloseIdleConnections()
		assert.True(t, base.closed)
	})
}

type readWriteCloser struct{ *trackedBody }

func (readWriteCloser) Write(p []byte) (int, error) { return len(p), nil }

// The settle function may read usage from a JSON body and put back what
// it read: the caller reads the same body.
func TestSettleFromAJSONBody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w, err := algorithms.NewSlidingWindow(algorithms.PerSecond(1000))
		require.NoError(t, err)
		tokens := actor.MustNew(w)
		t.Cleanup(func() { _ = tokens.Close() })
		api := &fakeAPI{answer: always(func() *http.Response { return reply(http.StatusOK, `{"usage":{"total_tokens":250}}`) })}
		tr := newTransport(t, tokens, api,
			httplimit.WithRequestCost(func(*http.Request) int64 { return 900 }),
			httplimit.WithSettle(func(resp *http.Response) (int64, bool) {
				b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
				_ = resp.Body.Close()
				resp.Body = io.NopCloser(bytes.NewReader(b))
				var u struct {
					Usage struct {
						TotalTokens int64 `json:"total_tokens"`
					} `json:"usage"`
				}
				return u.Usage.TotalTokens, err == nil && json.Unmarshal(b, &u) == nil
			}))
		resp, err := do(t, tr, http.MethodPost, "http://api.test/", strings.NewReader(`{}`))
		require.NoError(t, err)
		assert.Equal(t, `{"usage":{"total_tokens":250}}`, readAll(t, resp))
		assert.Equal(t, int64(750), tokenRoom(t, tokens))
		assert.Equal(t, []int64{1}, api.closes())
	})
}
