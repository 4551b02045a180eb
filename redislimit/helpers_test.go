package redislimit_test

import (
	"context"
	"encoding/binary"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/redislimit"
	"github.com/sluicehq/sluice/redislimit/redistest"
)

// inBubble runs f in a testing/synctest bubble against a fresh server,
// with a client made in the bubble. Limiters made with vlimiter decide on
// the bubble's clock (Redis is told the instant instead of reading TIME),
// so tests read as timelines.
func inBubble(t *testing.T, f func(t *testing.T, c *redis.Client)) {
	s := redistest.Test(t)
	synctest.Test(t, func(t *testing.T) {
		c := s.NewClient()
		t.Cleanup(func() { c.Close() })
		f(t, c)
	})
}

// vnow is the bubble's clock in µs, as Redis is told it.
func vnow() int64 { return time.Now().UnixMicro() }

// vlimiter is a Limiter on the bubble's clock, closed when t ends.
func vlimiter(t *testing.T, c redis.UniversalClient, key string, rate algorithms.Rate, burst int64, opts ...redislimit.Option) *redislimit.Limiter {
	t.Helper()
	l, err := redislimit.New(c, key, rate, burst, append([]redislimit.Option{redislimit.WithServerClock(vnow)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	return l
}

// value reads a GCRA key's value as numbers; ok is false for no key.
func value(t *testing.T, c redis.UniversalClient, key string) (w, f, n, m int64, ok bool) {
	t.Helper()
	v, err := c.Get(context.Background(), key).Result()
	if err == redis.Nil {
		return 0, 0, 0, 0, false
	}
	require.NoError(t, err)
	x := unpack(t, v)
	return x[0], x[1], x[2], x[3], true
}

// unpack reads a value as the scripts store it, four little-endian
// float64s that hold integers.
func unpack(t *testing.T, v string) [4]int64 {
	t.Helper()
	require.Len(t, v, 32, "value %q", v)
	return [4]int64(floats(t, v))
}

// floats reads little-endian float64s that hold integers, as the scripts
// pack their replies and values.
func floats(t *testing.T, v string) []int64 {
	t.Helper()
	require.Zero(t, len(v)%8, "%q", v)
	x := make([]int64, len(v)/8)
	for i := range x {
		d := math.Float64frombits(binary.LittleEndian.Uint64([]byte(v[8*i:])))
		require.Equal(t, math.Trunc(d), d, "%q", v)
		x[i] = int64(d)
	}
	return x
}

// outcome is what an Acquire started by start returned, and when.
type outcome struct {
	err error
	at  time.Duration // since the bubble's start of the test
}

// start runs acquire on its own goroutine and returns its outcome later.
func start(begin time.Time, acquire func() error) <-chan outcome {
	ch := make(chan outcome, 1)
	go func() {
		err := acquire()
		ch <- outcome{err, time.Since(begin)}
	}()
	return ch
}

// gate holds the limiter's script calls until released, one at a time.
type gate struct{ calls chan chan struct{} }

func newGate() *gate { return &gate{calls: make(chan chan struct{}, 16)} }

// hold is the WithBeforeCall hook: it waits until the test releases it.
func (g *gate) hold() {
	release := make(chan struct{})
	g.calls <- release
	<-release
}

// next returns the release of the next held call, waiting for it.
func (g *gate) next() chan struct{} { return <-g.calls }

// A hung Redis, for tests of what a call timeout bounds: the server is
// paused for pauseMs (CLIENT PAUSE) and its clients are patient (go-redis
// never times a read out), so that a caller that waited for Redis rather
// than for WithCallTimeout waits the whole pause. The tests bound their
// waits by waitedForRedis, a third of the pause and a hundred times the
// call timeouts they set: an order of magnitude either way, which no
// machine's speed turns around, and the test unpauses Redis once it has
// seen what it wanted, so a passing run never waits for the pause.
const (
	pauseMs        = 60_000
	waitedForRedis = 20 * time.Second
)

// patient is a client option: go-redis waits for the server as long as
// it takes, so that only sluice's own deadlines end a call to a hung one.
func patient(o *redis.Options) { o.ReadTimeout, o.WriteTimeout = -1, -1 }
