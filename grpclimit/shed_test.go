package grpclimit_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/grpclimit"
	"github.com/sluicehq/sluice/permits"
)

func aimd() actor.Controller { return &actor.AIMD{} }

// fixedShedder is a Shedder whose every method's limit is n and stays n.
func fixedShedder(t *testing.T, n int64, opts ...grpclimit.ShedOption) *grpclimit.Shedder {
	t.Helper()
	s, err := grpclimit.NewShedder(aimd, append(opts, grpclimit.WithPoolOptions(actor.WithLimits(n, n, n)))...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// sleepy answers after d with what answer holds (nil: OK).
func sleepy(d time.Duration, answer *atomic.Pointer[error]) grpc.UnaryHandler {
	return func(context.Context, any) (any, error) {
		time.Sleep(d)
		if e := answer.Load(); e != nil {
			return nil, *e
		}
		return "ok", nil
	}
}

// drive runs workers loops of calls through s for d; a shed call is
// retried 1 ms later, so that virtual time moves.
func drive(s *grpclimit.Shedder, h grpc.UnaryHandler, workers int, d time.Duration) (shed int64) {
	var n atomic.Int64
	end := time.Now().Add(d)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for time.Now().Before(end) {
				if _, err := s.Unary(context.Background(), nil, checkInfo, h); err != nil {
					if _, ok := grpclimit.RetryDelay(err); ok {
						n.Add(1)
						time.Sleep(time.Millisecond)
					}
				}
			}
		})
	}
	wg.Wait()
	return n.Load()
}

func TestShedderLimitFallsOnUnavailableAndRisesOnSuccess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := grpclimit.NewShedder(aimd, grpclimit.WithPoolOptions(actor.WithLimits(1, 20, 100)))
		require.NoError(t, err)
		defer s.Close()
		var answer atomic.Pointer[error]
		busy := status.Error(codes.Unavailable, "busy")
		answer.Store(&busy)
		h := sleepy(10*time.Millisecond, &answer)

		drive(s, h, 20, time.Second)
		low, ok := s.MethodConcurrency(checkMethod)
		require.True(t, ok)
		assert.Less(t, low.Size, int64(20), "the handler's Unavailable lowered the limit")

		answer.Store(nil)
		shed := drive(s, h, 60, 2*time.Second)
		high, _ := s.MethodConcurrency(checkMethod)
		t.Logf("limit %d after overload, %d after success; %d shed", low.Size, high.Size, shed)
		assert.Greater(t, high.Size, low.Size+10, "successes with the method full raised it")
		assert.Positive(t, shed)
	})
}

func TestShedderShedsPastTheLimitWithUnavailableAndRetryInfo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := fixedShedder(t, 2)
		var answer atomic.Pointer[error]
		h := sleepy(300*time.Millisecond, &answer)
		_, err := s.Unary(t.Context(), nil, checkInfo, h) // the method's call time: 300 ms
		require.NoError(t, err)
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() {
				_, err := s.Unary(t.Context(), nil, checkInfo, h)
				assert.NoError(t, err)
			})
		}
		synctest.Wait()
		_, err = s.Unary(t.Context(), nil, checkInfo, h)
		assert.Equal(t, codes.Unavailable, status.Code(err))
		delay, ok := grpclimit.RetryDelay(err)
		require.True(t, ok)
		assert.Equal(t, 300*time.Millisecond, delay, "one call time: when a slot frees")
		_, err = s.Unary(t.Context(), nil, &grpc.UnaryServerInfo{FullMethod: "/other/M"}, okHandler)
		assert.NoError(t, err, "another method has slots of its own")
		wg.Wait()
		st, _ := s.MethodConcurrency(checkMethod)
		assert.Equal(t, uint64(1), st.Rejected)
		assert.Zero(t, st.InFlight)
	})
}

func TestShedderRetryInfoIsAMillisecondAtLeast(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := fixedShedder(t, 1)
		var answer atomic.Pointer[error]
		var wg sync.WaitGroup
		wg.Go(func() { _, _ = s.Unary(t.Context(), nil, checkInfo, sleepy(time.Second, &answer)) })
		synctest.Wait()
		_, err := s.Unary(t.Context(), nil, checkInfo, okHandler)
		delay, ok := grpclimit.RetryDelay(err)
		require.True(t, ok)
		assert.Equal(t, time.Millisecond, delay, "no call time yet to go by")
		wg.Wait()
	})
}

func TestShedderReportsEachOutcome(t *testing.T) {
	for _, c := range []struct {
		code             codes.Code
		samples, signals int64
	}{
		{codes.OK, 1, 0}, {codes.NotFound, 1, 0},
		{codes.Unavailable, 1, 1}, {codes.ResourceExhausted, 1, 1}, {codes.DeadlineExceeded, 1, 1},
		{codes.Internal, 0, 0}, {codes.Unknown, 0, 0}, {codes.Canceled, 0, 0},
	} {
		t.Run(c.code.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := fixedShedder(t, 4)
				_, _ = s.Unary(t.Context(), nil, checkInfo, func(context.Context, any) (any, error) {
					return nil, status.Error(c.code, "answer")
				})
				time.Sleep(10 * time.Millisecond) // the owner gathers outcomes for 1 ms
				st, _ := s.MethodConcurrency(checkMethod)
				assert.Equal(t, c.samples, st.Samples)
				assert.Equal(t, c.signals, st.Signals)
			})
		})
	}
}

func TestShedderACallerGoneIsDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := fixedShedder(t, 1)
		ctx, cancel := context.WithCancel(t.Context())
		_, _ = s.Unary(ctx, nil, checkInfo, func(ctx context.Context, _ any) (any, error) {
			cancel()
			return nil, status.Error(codes.Unavailable, "gone") // what a handler may say
		})
		time.Sleep(10 * time.Millisecond)
		st, _ := s.MethodConcurrency(checkMethod)
		assert.Zero(t, st.Samples)
	})
}

func TestShedderAPanicGivesTheSlotBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := fixedShedder(t, 1)
		assert.Panics(t, func() {
			_, _ = s.Unary(t.Context(), nil, checkInfo, func(context.Context, any) (any, error) { panic("bug") })
		})
		_, err := s.Unary(t.Context(), nil, checkInfo, okHandler)
		assert.NoError(t, err, "the slot came back")
	})
}

func TestShedWaitAdmitsWithinTheBoundAndShedsPastIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, c := range []struct {
			wait time.Duration
			want codes.Code
		}{{time.Second, codes.OK}, {50 * time.Millisecond, codes.Unavailable}, {-1, codes.OK}} {
			s := fixedShedder(t, 1, grpclimit.WithShedWait(c.wait))
			var answer atomic.Pointer[error]
			var wg sync.WaitGroup
			wg.Go(func() { _, _ = s.Unary(t.Context(), nil, checkInfo, sleepy(100*time.Millisecond, &answer)) })
			synctest.Wait()
			_, err := s.Unary(t.Context(), nil, checkInfo, okHandler)
			assert.Equal(t, c.want, status.Code(err), "wait %v for a slot busy 100 ms", c.wait)
			wg.Wait()
		}
	})
}

func TestShedWaitACancelledCallIsCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := fixedShedder(t, 1, grpclimit.WithShedWait(-1))
		var answer atomic.Pointer[error]
		var wg sync.WaitGroup
		wg.Go(func() { _, _ = s.Unary(t.Context(), nil, checkInfo, sleepy(time.Second, &answer)) })
		synctest.Wait()
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(100*time.Millisecond, cancel)
		_, err := s.Unary(ctx, nil, checkInfo, okHandler)
		assert.Equal(t, codes.Canceled, status.Code(err))
		wg.Wait()
	})
}

func TestShedderBoundsTheMethodsItKeeps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := fixedShedder(t, 4, grpclimit.WithMaxMethods(4))
		for i := range 1000 {
			_, err := s.Unary(t.Context(), nil, &grpc.UnaryServerInfo{FullMethod: fmt.Sprintf("/x/M%d", i)}, okHandler)
			require.NoError(t, err)
		}
		assert.Equal(t, 4, s.Methods())
		st, ok := s.MethodConcurrency(grpclimit.OverflowKey)
		require.True(t, ok)
		assert.Equal(t, uint64(996), st.Granted)
	})
}

func TestShedderStreamHoldsItsSlotAndTeachesNoLatency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := fixedShedder(t, 1)
		info := &grpc.StreamServerInfo{FullMethod: "/grpc.health.v1.Health/Watch"}
		ss := &fakeStream{ctx: t.Context()}
		release := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			assert.NoError(t, s.Stream(nil, ss, info, func(any, grpc.ServerStream) error { <-release; return nil }))
		})
		synctest.Wait()
		err := s.Stream(nil, ss, info, func(any, grpc.ServerStream) error { return nil })
		assert.Equal(t, codes.Unavailable, status.Code(err), "the open stream holds the slot")
		close(release)
		wg.Wait()
		time.Sleep(10 * time.Millisecond)
		st, _ := s.MethodConcurrency(info.FullMethod)
		assert.Zero(t, st.Samples, "a stream's life is no service time")
		assert.Zero(t, st.InFlight)
	})
}

type fakeStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (f *fakeStream) Context() context.Context { return f.ctx }

func TestShedderClosedAnswersUnavailable(t *testing.T) {
	s := fixedShedder(t, 1)
	require.NoError(t, s.Close())
	_, err := s.Unary(t.Context(), nil, checkInfo, okHandler)
	assert.Equal(t, codes.Unavailable, status.Code(err))
	_, ok := grpclimit.RetryDelay(err)
	assert.False(t, ok, "no wait helps a closed server")
}

func TestShedderBadConfigFails(t *testing.T) {
	for name, c := range map[string]struct {
		ctl func() actor.Controller
		opt grpclimit.ShedOption
	}{
		"nil controller": {nil, nil},
		"no methods":     {aimd, grpclimit.WithMaxMethods(0)},
		"bad limits":     {aimd, grpclimit.WithPoolOptions(actor.WithLimits(5, 1, 10))},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := grpclimit.NewShedder(c.ctl, c.opt)
			assert.True(t, errors.Is(err, permits.ErrInvalidConfig), "%v", err)
		})
	}
}

// Over a real server on loopback, behind the rate limit: the method's two
// slots held by calls its handler keeps, a third call is shed with
// Unavailable and RetryInfo; once they end the method serves again.
func TestShedderOverARealServerOnLoopback(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	h := &health{check: func(context.Context) error {
		entered <- struct{}{}
		<-release
		return nil
	}}
	shed := fixedShedder(t, 2)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	hc := serve(t, h, lis, []grpc.ServerOption{grpc.ChainUnaryInterceptor(shed.Unary)})
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { assert.NoError(t, check(t.Context(), hc)) })
		<-entered
	}
	err = check(t.Context(), hc)
	assert.Equal(t, codes.Unavailable, status.Code(err))
	_, ok := grpclimit.RetryDelay(err)
	assert.True(t, ok)
	close(release)
	wg.Wait()
	go func() { <-entered }()
	assert.NoError(t, check(t.Context(), hc))
}

// Chained after Server's interceptor, the rate limit decides first: a call
// over its quota never takes a slot.
func TestShedderAfterTheRateLimitTakesNoSlotForARefusedCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim := perMethod(t, algorithms.PerMinute(1), 1)
		shed := fixedShedder(t, 4)
		chain := func(ctx context.Context) error {
			_, err := lim.Unary(ctx, nil, checkInfo, func(ctx context.Context, req any) (any, error) {
				return shed.Unary(ctx, req, checkInfo, okHandler)
			})
			return err
		}
		require.NoError(t, chain(t.Context()))
		assert.Equal(t, codes.ResourceExhausted, status.Code(chain(t.Context())))
		st, _ := shed.MethodConcurrency(checkMethod)
		assert.Equal(t, uint64(1), st.Granted)
	})
}
