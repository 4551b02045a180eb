package grpclimit_test

import (
	"context"
	"errors"
	"io"
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
	"github.com/sluicehq/sluice/grpclimit"
	"github.com/sluicehq/sluice/permits"
	"github.com/sluicehq/sluice/retry"
)

// narrow is an upstream that serves c calls at once, each for 10 ms, and
// answers Unavailable beyond them after 1 ms (a round trip: refusals take
// time too, and virtual time moves only when every caller waits), as a
// server without a queue does.
func narrow(c int64) grpc.UnaryInvoker {
	var inFlight atomic.Int64
	return func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error {
		defer inFlight.Add(-1)
		if inFlight.Add(1) > c {
			time.Sleep(time.Millisecond)
			return status.Error(codes.Unavailable, "busy")
		}
		time.Sleep(10 * time.Millisecond)
		return nil
	}
}

func TestAdaptiveConcurrencyFindsEachTargetsCapacity(t *testing.T) {
	const c = 10
	cc := conn(t, "narrow")
	synctest.Test(t, func(t *testing.T) {
		cl := newClient(t, permits.Unlimited, grpclimit.WithRetry(retry.WithMaxAttempts(1)),
			grpclimit.WithAdaptiveConcurrency(aimd, actor.WithLimits(1, 20, 100)))
		defer cl.Close()
		up := narrow(c)
		end := time.Now().Add(2 * time.Second)
		var wg sync.WaitGroup
		for range 4 * c {
			wg.Go(func() {
				for time.Now().Before(end) {
					_ = cl.Unary(t.Context(), checkMethod, nil, nil, cc, up)
				}
			})
		}
		wg.Wait()
		st, ok := cl.TargetConcurrency(cc.Target())
		require.True(t, ok)
		t.Logf("limit %d, samples %d, signals %d", st.Size, st.Samples, st.Signals)
		assert.Positive(t, st.Signals, "the Unavailable answers reached the controller")
		assert.GreaterOrEqual(t, st.Size, int64(c)*8/10)
		assert.LessOrEqual(t, st.Size, int64(c)*12/10+1, "AIMD saws just above where Unavailable starts")
		_, ok = cl.TargetConcurrency("passthrough:///other")
		assert.False(t, ok, "a target never called has no pool")
	})
}

func TestAdaptiveConcurrencyReadsEachCode(t *testing.T) {
	cc := conn(t, "a")
	for _, c := range []struct {
		code             codes.Code
		samples, signals int64
	}{
		{codes.OK, 1, 0}, {codes.NotFound, 1, 0}, {codes.Internal, 1, 0},
		{codes.ResourceExhausted, 1, 1}, {codes.Unavailable, 1, 1}, {codes.DeadlineExceeded, 1, 1},
		{codes.Canceled, 0, 0},
	} {
		t.Run(c.code.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cl := newClient(t, permits.Unlimited, grpclimit.WithRetry(retry.WithMaxAttempts(1)),
					grpclimit.WithAdaptiveConcurrency(aimd))
				defer cl.Close()
				_ = cl.Unary(t.Context(), checkMethod, nil, nil, cc,
					func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error {
						return status.Error(c.code, "answer")
					})
				time.Sleep(10 * time.Millisecond) // the owner gathers outcomes for 1 ms
				st, _ := cl.TargetConcurrency(cc.Target())
				assert.Equal(t, c.samples, st.Samples)
				assert.Equal(t, c.signals, st.Signals)
				assert.Zero(t, st.InFlight)
			})
		})
	}
}

// An attempt waits for its target's slot in FIFO order, within its
// deadline: with the limit at 1, a second call waits for the first.
func TestAdaptiveConcurrencyAnAttemptWaitsForItsTargetsSlot(t *testing.T) {
	cc := conn(t, "a")
	synctest.Test(t, func(t *testing.T) {
		cl := newClient(t, permits.Unlimited, grpclimit.WithAdaptiveConcurrency(aimd, actor.WithLimits(1, 1, 1)))
		defer cl.Close()
		up := narrow(1)
		t0 := time.Now()
		var wg sync.WaitGroup
		wg.Go(func() { assert.NoError(t, cl.Unary(t.Context(), checkMethod, nil, nil, cc, up)) })
		synctest.Wait()
		require.NoError(t, cl.Unary(t.Context(), checkMethod, nil, nil, cc, up))
		assert.Equal(t, t0.Add(20*time.Millisecond), time.Now(), "after the first, not beside it")
		wg.Wait()
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Millisecond)
		defer cancel()
		wg.Go(func() { assert.NoError(t, cl.Unary(t.Context(), checkMethod, nil, nil, cc, up)) })
		synctest.Wait()
		err := cl.Unary(ctx, checkMethod, nil, nil, cc, up)
		assert.Equal(t, codes.DeadlineExceeded, status.Code(err))
		wg.Wait()
	})
}

func TestAdaptiveConcurrencyClosedClientFails(t *testing.T) {
	cc := conn(t, "a")
	cl := newClient(t, permits.Unlimited, grpclimit.WithAdaptiveConcurrency(aimd))
	require.NoError(t, cl.Close())
	err := cl.Unary(t.Context(), checkMethod, nil, nil, cc, narrow(1))
	assert.Equal(t, codes.Unavailable, status.Code(err))
	assert.ErrorIs(t, err, permits.ErrClosed)
	assert.NoError(t, cl.Close(), "idempotent")
}

func TestAdaptiveConcurrencyBadConfigFails(t *testing.T) {
	for name, opt := range map[string]grpclimit.ClientOption{
		"nil controller": grpclimit.WithAdaptiveConcurrency(nil),
		"bad limits":     grpclimit.WithAdaptiveConcurrency(aimd, actor.WithLimits(5, 1, 10)),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := grpclimit.NewClient(permits.Unlimited, opt)
			assert.True(t, errors.Is(err, permits.ErrInvalidConfig), "%v", err)
		})
	}
}

// doneStream is a client stream whose RecvMsg ends it with io.EOF.
type doneStream struct{ grpc.ClientStream }

func (doneStream) RecvMsg(any) error { return io.EOF }

// An open stream holds its target's slot until it ends, and its end
// teaches the controller no latency.
func TestAdaptiveConcurrencyAStreamHoldsItsTargetsSlotUntilItEnds(t *testing.T) {
	cc := conn(t, "a")
	synctest.Test(t, func(t *testing.T) {
		cl := newClient(t, permits.Unlimited, grpclimit.WithAdaptiveConcurrency(aimd, actor.WithLimits(1, 1, 1)))
		defer cl.Close()
		desc := &grpc.StreamDesc{ServerStreams: true}
		open := func(ctx context.Context) (grpc.ClientStream, error) {
			return cl.Stream(ctx, desc, cc, "/s/Watch", func(context.Context, *grpc.StreamDesc, *grpc.ClientConn, string, ...grpc.CallOption) (grpc.ClientStream, error) {
				return doneStream{}, nil
			})
		}
		s, err := open(t.Context())
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Millisecond)
		defer cancel()
		_, err = open(ctx)
		assert.Equal(t, codes.DeadlineExceeded, status.Code(err), "the open stream holds the only slot")
		time.Sleep(10 * time.Millisecond)
		assert.ErrorIs(t, s.RecvMsg(nil), io.EOF)
		s2, err := open(t.Context())
		require.NoError(t, err, "its end gave the slot back")
		_ = s2.RecvMsg(nil)
		time.Sleep(10 * time.Millisecond)
		st, _ := cl.TargetConcurrency(cc.Target())
		assert.Zero(t, st.Samples, "a stream's life is no service time")
		assert.Zero(t, st.InFlight)
	})
}
