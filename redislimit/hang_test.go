package redislimit_test

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/permits"
	"github.com/sluicehq/sluice/redislimit"
	"github.com/sluicehq/sluice/redislimit/redistest"
)

// These tests freeze the server with SIGSTOP: its connections stay open
// and it reads nothing, so go-redis (default options: a 3 s read timeout,
// then three retries) would wait 3 to 12 s. What the tests check is
// that WithCallTimeout ends every call whatever go-redis does; the only
// durations they compare are hangTimeout and the hang detector
// hangBound, ten times it and still below go-redis's first read timeout.
const (
	hangTimeout = 200 * time.Millisecond
	hangBound   = 10 * hangTimeout
)

// hung starts a server and a client of it with go-redis's defaults (or
// opts), and returns a function that freezes the server. The server is
// continued and the goroutines checked when t ends.
func hung(t *testing.T, opts ...func(*redis.Options)) (c *redis.Client, stop func()) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // first: it runs last
	s := redistest.Test(t)
	c = s.Client(t, opts...)
	t.Cleanup(s.Continue)
	return c, s.Stop
}

// hangLimiters are the three kinds of limiter, warmed up (their scripts
// loaded) and closed when t ends.
type hangLimiters struct {
	l *redislimit.Limiter
	w *redislimit.Window
	k *redislimit.Keyed
}

func newHangLimiters(t *testing.T, c redis.UniversalClient, opts ...redislimit.Option) hangLimiters {
	t.Helper()
	// Warmed first with a patient call timeout: the scripts loaded and the
	// client's connections dialled, which on a busy machine can take
	// longer than hangTimeout and is not what these tests check.
	warm := makeHangLimiters(t, c, append([]redislimit.Option{redislimit.WithCallTimeout(30 * time.Second)}, opts...))
	for _, call := range warm.calls() {
		require.NoError(t, call.f(), "warming up")
	}
	warm.close()
	h := makeHangLimiters(t, c, append([]redislimit.Option{redislimit.WithCallTimeout(hangTimeout)}, opts...))
	for _, call := range h.calls() {
		require.NoError(t, call.f())
	}
	return h
}

// makeHangLimiters makes the three limiters, closed when t ends.
func makeHangLimiters(t *testing.T, c redis.UniversalClient, opts []redislimit.Option) hangLimiters {
	t.Helper()
	l, err := redislimit.New(c, "hang:l", algorithms.PerSecond(1000), 100, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	w, err := redislimit.NewWindow(c, "hang:w", algorithms.PerSecond(1000), opts...)
	require.NoError(t, err)
	t.Cleanup(func() { w.Close() })
	k, err := redislimit.NewKeyed(c, "hang:k:", algorithms.PerSecond(1000), 100, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { k.Close() })
	return hangLimiters{l, w, k}
}

func (h hangLimiters) close() {
	h.l.Close()
	h.w.Close()
	h.k.Close()
}

type hangCall struct {
	name string
	f    func() error
}

// calls are the calls a caller makes itself, which go-redis's own
// timeouts would otherwise bound.
func (h hangLimiters) calls() []hangCall {
	ignore := func(_ permits.Permit, err error) error { return err }
	return []hangCall{
		{"Limiter.TryAcquire", func() error { return ignore(h.l.TryAcquire(1)) }},
		{"Limiter.Acquire(Background)", func() error { return ignore(h.l.Acquire(context.Background(), 1)) }},
		{"Window.TryAcquire", func() error { return ignore(h.w.TryAcquire(1)) }},
		{"Window.Acquire(Background)", func() error { return ignore(h.w.Acquire(context.Background(), 1)) }},
		{"Keyed.TryAcquire", func() error { return ignore(h.k.TryAcquire("a", 1)) }},
		{"Keyed.Acquire(Background)", func() error { return ignore(h.k.Acquire(context.Background(), "a", 1)) }},
	}
}

// timed runs f, failing t if it outlives the hang detector.
func timed(t *testing.T, name string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(hangBound):
		t.Fatalf("%s: no answer after %v on a hung server (WithCallTimeout %v)", name, hangBound, hangTimeout)
		return nil
	}
}

func TestOnAHungServerEveryCallEndsAtTheCallTimeout(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []func(*redis.Options)
	}{
		{"go-redis defaults", nil},
		{"patient client", []func(*redis.Options){patient}},
		{"ContextTimeoutEnabled", []func(*redis.Options){func(o *redis.Options) { o.ContextTimeoutEnabled = true }}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, stop := hung(t, tc.opts...)
			h := newHangLimiters(t, c, redislimit.WithProbeInterval(0))
			stop()
			for _, call := range h.calls() {
				err := timed(t, call.name, call.f)
				require.ErrorIs(t, err, redislimit.ErrUnavailable, call.name)
				var te *redislimit.TimeoutError
				if !assert.ErrorAs(t, err, &te, "%s: the call timeout ended it, or the call it waited behind", call.name) {
					continue
				}
				assert.Equal(t, hangTimeout, te.After, call.name)
			}
		})
	}
}

func TestOnAHungServerCloseReturnsWithinTheCallTimeout(t *testing.T) {
	c, stop := hung(t)
	h := newHangLimiters(t, c, redislimit.WithProbeInterval(0))
	stop()
	// A call stuck in each limiter's worker, and one waiting behind it.
	for _, call := range h.calls() {
		_ = timed(t, call.name, call.f)
	}
	for _, cl := range []struct {
		name string
		f    func() error
	}{{"Limiter", h.l.Close}, {"Window", h.w.Close}, {"Keyed", h.k.Close}} {
		require.NoError(t, timed(t, cl.name+".Close", cl.f))
	}
}

// Each call on a hung server that went out stays inside go-redis until
// the server answers or go-redis gives up; a limiter makes no other call
// while one is stuck so, and fails its requests at once instead: the
// goroutines it holds do not grow with the length of the hang.
func TestOnAHungServerNoGoroutinePilesUp(t *testing.T) {
	c, stop := hung(t)
	h := newHangLimiters(t, c, redislimit.WithProbeInterval(0))
	stop()
	hang := func(rounds int) {
		for range rounds {
			for _, call := range h.calls() {
				err := timed(t, call.name, call.f)
				require.ErrorIs(t, err, redislimit.ErrUnavailable, call.name)
			}
		}
	}
	hang(2)
	short := held()
	calls := h.l.Stats().Calls
	hang(20)
	assert.LessOrEqual(t, held(), short, "goroutines grew with the hang")
	assert.Equal(t, calls, h.l.Stats().Calls, "no call was made while one was stuck")
}

// held counts the goroutines inside redislimit or go-redis. It leaves out
// the rest, among them a goroutine of timed that has sent its answer and
// is still on its way out: runtime.NumGoroutine counts that one for a
// moment longer on a busy machine.
func held() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "github.com/redis/go-redis/") ||
			strings.Contains(g, "github.com/sluicehq/sluice/redislimit.") {
			count++
		}
	}
	return count
}
