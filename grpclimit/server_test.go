package grpclimit_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/grpclimit"
	"github.com/sluicehq/sluice/keyed"
	"github.com/sluicehq/sluice/permits"
	"github.com/sluicehq/sluice/retry"
)

// Both ends, over a real TCP connection on loopback: the server keys by
// the peer's address, and the client reads the refusal's RetryInfo. The
// limit admits one call a minute, so that the second is refused whatever
// the machine's speed, and the client's pause cap of 1 ns makes it hand
// the refusal back at once rather than wait the minute.
func TestBothEndsOverARealServerOnLoopback(t *testing.T) {
	lim, err := keyed.NewGCRA[string](algorithms.PerMinute(1), 1)
	require.NoError(t, err)
	defer lim.Close()
	byPeer, err := grpclimit.KeyByPeer()
	require.NoError(t, err)
	s, err := grpclimit.NewServer(lim, byPeer)
	require.NoError(t, err)
	c, err := grpclimit.NewClient(permits.Unlimited, grpclimit.WithMaxPause(time.Nanosecond))
	require.NoError(t, err)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	hc := serve(t, nil, lis, interceptors(s), grpc.WithChainUnaryInterceptor(c.Unary))

	require.NoError(t, check(t.Context(), hc))
	err = check(t.Context(), hc)
	assert.Equal(t, codes.ResourceExhausted, status.Code(err))
	delay, ok := grpclimit.RetryDelay(err)
	require.True(t, ok)
	assert.Greater(t, delay, 59*time.Second, "a minute less the time since the first call")
	st := c.Stats()
	assert.Equal(t, grpclimit.ClientStats{Calls: 2, Attempts: 2, Pauses: 1, Capped: 1}, st)
	// The key was the peer's address: another key is untouched.
	_, err = lim.TryAcquire("ip:127.0.0.2", 1)
	assert.NoError(t, err)
	_, err = lim.TryAcquire("ip:127.0.0.1", 1)
	assert.ErrorIs(t, err, permits.ErrRateLimited)
}

// A refusal a stream ends with pauses the target (here for the cap, 1 ns)
// and is not retried: its messages cannot be replayed.
func TestAStreamsRefusalPausesTheTargetAndIsNotRetried(t *testing.T) {
	s := perMethod(t, algorithms.PerMinute(1), 1)
	c, err := grpclimit.NewClient(permits.Unlimited, grpclimit.WithMaxPause(time.Nanosecond))
	require.NoError(t, err)
	hc := serve(t, nil, nil, interceptors(s), grpc.WithChainStreamInterceptor(c.Stream))
	for i, want := range []codes.Code{codes.OK, codes.ResourceExhausted} {
		w, err := hc.Watch(t.Context(), nil)
		require.NoError(t, err)
		_, err = w.Recv()
		assert.Equal(t, want, status.Code(err), i)
	}
	assert.Equal(t, grpclimit.ClientStats{Calls: 2, Attempts: 2, Pauses: 1, Capped: 1}, c.Stats())
}

// Over bufconn, a refusal the server sends is retried by the client once
// the pause it asked for has passed; the server's limit admits one call
// per 20 ms, so the retry waits at most that (never asserted: only that
// it came, and after the refusal).
func TestTheClientRetriesTheServersRefusal(t *testing.T) {
	s := perMethod(t, algorithms.PerSecond(50), 1)
	var seen []time.Time
	h := &health{check: func(context.Context) error { seen = append(seen, time.Now()); return nil }}
	c, err := grpclimit.NewClient(permits.Unlimited, grpclimit.WithRetry(retry.WithMaxAttempts(5)))
	require.NoError(t, err)
	hc := serve(t, h, nil, interceptors(s), grpc.WithChainUnaryInterceptor(c.Unary))
	for range 3 {
		require.NoError(t, check(t.Context(), hc))
	}
	assert.Len(t, seen, 3, "every call reached the handler")
	st := c.Stats()
	assert.Equal(t, st.Retries, st.Pauses, "every retry followed a refusal's pause")
}
