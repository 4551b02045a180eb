package grpclimit_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/breaker"
	"github.com/sluicehq/sluice/budget"
	"github.com/sluicehq/sluice/grpclimit"
	"github.com/sluicehq/sluice/permits"
	"github.com/sluicehq/sluice/retry"
)

// conn is a ClientConn for target that never connects: the tests hand
// the interceptor an invoker of their own, and it reads only the target.
func conn(t *testing.T, target string) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient("passthrough:///"+target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

// server is a fake upstream: each attempt records its instant and answers
// with the next of answers (nil once they run out).
type server struct {
	answers []error
	at      []time.Time
}

func (s *server) invoke(ctx context.Context, _ string, _, _ any, _ *grpc.ClientConn, _ ...grpc.CallOption) error {
	s.at = append(s.at, time.Now())
	if len(s.answers) == 0 {
		return ctx.Err()
	}
	err := s.answers[0]
	s.answers = s.answers[1:]
	return err
}

func newClient(t *testing.T, lim permits.Limiter, opts ...grpclimit.ClientOption) *grpclimit.Client {
	t.Helper()
	c, err := grpclimit.NewClient(lim, append([]grpclimit.ClientOption{grpclimit.WithoutJitter}, opts...)...)
	require.NoError(t, err)
	return c
}

func refused(wait time.Duration) error { return grpclimit.Refusal("default", "k", wait).Err() }

func TestARefusalPausesItsTargetAndIsRetriedAfterItsRetryInfo(t *testing.T) {
	cc := conn(t, "a")
	synctest.Test(t, func(t *testing.T) {
		c := newClient(t, permits.Unlimited)
		up := &server{answers: []error{refused(time.Second), nil}}
		t0 := time.Now()
		require.NoError(t, c.Unary(t.Context(), checkMethod, nil, nil, cc, up.invoke))
		assert.Equal(t, []time.Time{t0, t0.Add(time.Second)}, up.at)
		st := c.Stats()
		assert.Equal(t, int64(1), st.Retries)
		assert.Equal(t, int64(1), st.Pauses)
	})
}

func TestAPausedTargetHoldsItsOtherCallsButNotOtherTargets(t *testing.T) {
	a, b := conn(t, "a"), conn(t, "b")
	synctest.Test(t, func(t *testing.T) {
		c := newClient(t, permits.Unlimited, grpclimit.WithRetry(retry.WithMaxAttempts(1)))
		up := &server{answers: []error{refused(time.Second)}}
		t0 := time.Now()
		err := c.Unary(t.Context(), checkMethod, nil, nil, a, up.invoke)
		require.Equal(t, codes.ResourceExhausted, status.Code(err), "not retried: one attempt")
		require.NoError(t, c.Unary(t.Context(), checkMethod, nil, nil, b, up.invoke))
		require.NoError(t, c.Unary(t.Context(), checkMethod, nil, nil, a, up.invoke))
		assert.Equal(t, []time.Time{t0, t0, t0.Add(time.Second)}, up.at, "b at once, a after its pause")
	})
}

func TestAPausePastTheDeadlineFailsTheCallAtOnce(t *testing.T) {
	cc := conn(t, "a")
	synctest.Test(t, func(t *testing.T) {
		c := newClient(t, permits.Unlimited, grpclimit.WithRetry(retry.WithMaxAttempts(1)))
		up := &server{answers: []error{refused(10 * time.Second)}}
		_ = c.Unary(t.Context(), checkMethod, nil, nil, cc, up.invoke)
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		t0 := time.Now()
		err := c.Unary(ctx, checkMethod, nil, nil, cc, up.invoke)
		assert.Equal(t, t0, time.Now())
		assert.Equal(t, codes.ResourceExhausted, status.Code(err))
		assert.ErrorIs(t, err, permits.ErrRateLimited)
		assert.Len(t, up.at, 1, "nothing sent")
	})
}

func TestResourceExhaustedWithoutRetryInfoIsNotRetried(t *testing.T) {
	cc := conn(t, "a")
	synctest.Test(t, func(t *testing.T) {
		c := newClient(t, permits.Unlimited)
		up := &server{answers: []error{status.Error(codes.ResourceExhausted, "message too large")}}
		err := c.Unary(t.Context(), checkMethod, nil, nil, cc, up.invoke)
		assert.Equal(t, codes.ResourceExhausted, status.Code(err))
		assert.Len(t, up.at, 1)
	})
}

func TestUnavailableIsRetriedAfterTheBackOff(t *testing.T) {
	cc := conn(t, "a")
	synctest.Test(t, func(t *testing.T) {
		c := newClient(t, permits.Unlimited, grpclimit.WithRetry(retry.WithMaxAttempts(3)))
		up := &server{answers: []error{status.Error(codes.Unavailable, "down"), status.Error(codes.Unavailable, "down")}}
		require.NoError(t, c.Unary(t.Context(), checkMethod, nil, nil, cc, up.invoke))
		require.Len(t, up.at, 3)
		assert.True(t, up.at[0].Before(up.at[2]), "in order")
	})
}

func TestAPauseLongerThanTheCapIsCappedAndNotRetried(t *testing.T) {
	cc := conn(t, "a")
	synctest.Test(t, func(t *testing.T) {
		c := newClient(t, permits.Unlimited, grpclimit.WithMaxPause(time.Second))
		up := &server{answers: []error{refused(time.Hour)}}
		t0 := time.Now()
		err := c.Unary(t.Context(), checkMethod, nil, nil, cc, up.invoke)
		assert.Equal(t, codes.ResourceExhausted, status.Code(err))
		assert.Equal(t, t0, time.Now(), "handed back at once")
		assert.Equal(t, int64(1), c.Stats().Capped)
		require.NoError(t, c.Unary(t.Context(), checkMethod, nil, nil, cc, up.invoke))
		assert.Equal(t, t0.Add(time.Second), up.at[1], "paused for the cap only")
	})
}

func TestTheLimiterPacesTheCalls(t *testing.T) {
	cc := conn(t, "a")
	synctest.Test(t, func(t *testing.T) {
		g, err := algorithms.NewGCRA(algorithms.PerSecond(2), 1)
		require.NoError(t, err)
		lim, err := actor.New(g)
		require.NoError(t, err)
		defer lim.Close()
		c := newClient(t, lim)
		up := &server{}
		t0 := time.Now()
		for range 3 {
			require.NoError(t, c.Unary(t.Context(), checkMethod, nil, nil, cc, up.invoke))
		}
		assert.Equal(t, []time.Time{t0, t0.Add(500 * time.Millisecond), t0.Add(time.Second)}, up.at)
	})
}

func TestALimitersRefusalIsResourceExhaustedAndNothingIsSent(t *testing.T) {
	cc := conn(t, "a")
	synctest.Test(t, func(t *testing.T) {
		g, err := algorithms.NewGCRA(algorithms.PerSecond(1), 1)
		require.NoError(t, err)
		lim, err := actor.New(g)
		require.NoError(t, err)
		defer lim.Close()
		c := newClient(t, lim)
		up := &server{}
		require.NoError(t, c.Unary(t.Context(), checkMethod, nil, nil, cc, up.invoke))
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		err = c.Unary(ctx, checkMethod, nil, nil, cc, up.invoke)
		assert.Equal(t, codes.ResourceExhausted, status.Code(err))
		assert.ErrorIs(t, err, permits.ErrRateLimited)
		delay, ok := grpclimit.RetryDelay(err)
		assert.True(t, ok)
		assert.Equal(t, time.Second, delay)
		assert.Len(t, up.at, 1)
	})
}

func TestAnOpenBreakerFailsFastWithItsRetryAfter(t *testing.T) {
	cc := conn(t, "a")
	synctest.Test(t, func(t *testing.T) {
		br, err := breaker.New(breaker.WithConsecutiveFailures(1), breaker.WithOpenTimeout(5*time.Second),
			breaker.WithClassifier(grpclimit.BreakerClassifier))
		require.NoError(t, err)
		c := newClient(t, permits.Unlimited, grpclimit.WithBreaker(br), grpclimit.WithRetry(retry.WithMaxAttempts(1)))
		up := &server{answers: []error{status.Error(codes.Unavailable, "down")}}
		_ = c.Unary(t.Context(), checkMethod, nil, nil, cc, up.invoke)
		t0 := time.Now()
		err = c.Unary(t.Context(), checkMethod, nil, nil, cc, up.invoke)
		assert.Equal(t, t0, time.Now())
		assert.Equal(t, codes.Unavailable, status.Code(err))
		assert.ErrorIs(t, err, breaker.ErrOpen)
		delay, ok := grpclimit.RetryDelay(err)
		assert.True(t, ok)
		assert.Equal(t, 5*time.Second, delay)
		assert.Len(t, up.at, 1, "nothing sent past the open breaker")
	})
}

func TestResourceExhaustedDoesNotOpenTheBreaker(t *testing.T) {
	assert.Equal(t, breaker.Ignored, grpclimit.BreakerClassifier(refused(time.Second)))
	assert.Equal(t, breaker.Ignored, grpclimit.BreakerClassifier(context.Canceled))
	assert.Equal(t, breaker.Failure, grpclimit.BreakerClassifier(status.Error(codes.Unavailable, "")))
}

func TestAnEmptyBudgetStopsTheRetries(t *testing.T) {
	cc := conn(t, "a")
	synctest.Test(t, func(t *testing.T) {
		b := emptyBudget(t)
		c := newClient(t, permits.Unlimited, grpclimit.WithBudget(b))
		up := &server{answers: []error{status.Error(codes.Unavailable, "down")}}
		err := c.Unary(t.Context(), checkMethod, nil, nil, cc, up.invoke)
		assert.ErrorIs(t, err, retry.ErrBudgetExhausted)
		assert.Equal(t, codes.Unavailable, status.Code(err), "the last attempt's code")
		assert.Len(t, up.at, 1)
	})
}

func TestEachAttemptHasItsTimeout(t *testing.T) {
	cc := conn(t, "a")
	synctest.Test(t, func(t *testing.T) {
		c := newClient(t, permits.Unlimited, grpclimit.WithAttemptTimeout(time.Second),
			grpclimit.WithRetryCodes(codes.DeadlineExceeded), grpclimit.WithRetry(retry.WithMaxAttempts(2)))
		var deadlines []time.Duration
		hang := func(ctx context.Context, _ string, _, _ any, _ *grpc.ClientConn, _ ...grpc.CallOption) error {
			dl, _ := ctx.Deadline()
			deadlines = append(deadlines, time.Until(dl))
			<-ctx.Done()
			return status.FromContextError(ctx.Err()).Err()
		}
		err := c.Unary(t.Context(), checkMethod, nil, nil, cc, hang)
		assert.Equal(t, codes.DeadlineExceeded, status.Code(err))
		assert.Equal(t, []time.Duration{time.Second, time.Second}, deadlines)
	})
}

func TestBadClientOptionsAreConfigurationErrors(t *testing.T) {
	for _, opts := range [][]grpclimit.ClientOption{
		{grpclimit.WithMaxPause(0)},
		{grpclimit.WithAttemptTimeout(-1)},
		{grpclimit.WithRetryCodes(codes.OK)},
		{grpclimit.WithRetry(retry.WithMaxAttempts(0))},
	} {
		_, err := grpclimit.NewClient(permits.Unlimited, opts...)
		assert.ErrorIs(t, err, permits.ErrInvalidConfig)
	}
	_, err := grpclimit.NewClient(nil)
	assert.ErrorIs(t, err, permits.ErrInvalidConfig)
}

func TestABadCostFailsTheCallUnsent(t *testing.T) {
	cc := conn(t, "a")
	c := newClient(t, permits.Unlimited)
	up := &server{}
	err := c.Unary(grpclimit.ContextWithCost(t.Context(), 0), checkMethod, nil, nil, cc, up.invoke)
	assert.True(t, errors.Is(err, permits.ErrInvalidCost))
	assert.Empty(t, up.at)
}

// emptyBudget allows no retry at all.
func emptyBudget(t *testing.T) *budget.RetryBudget {
	t.Helper()
	b, err := budget.New(budget.WithMinRetriesPerSec(0), budget.WithPercentCanRetry(0))
	require.NoError(t, err)
	return b
}
