package grpclimit_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/grpclimit"
)

var checkInfo = &grpc.UnaryServerInfo{FullMethod: checkMethod}

func TestWithWaitAdmitsACallWhoseTurnComesBeforeItsDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := perMethod(t, algorithms.PerSecond(1), 1, grpclimit.WithWait(-1))
		t0 := time.Now()
		_, err := s.Unary(t.Context(), nil, checkInfo, okHandler)
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		_, err = s.Unary(ctx, nil, checkInfo, okHandler)
		require.NoError(t, err)
		assert.Equal(t, t0.Add(time.Second), time.Now(), "granted when one unit came back")
	})
}

func TestWithWaitRefusesAtOnceAWaitPastTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := perMethod(t, algorithms.PerSecond(1), 1, grpclimit.WithWait(-1))
		_, err := s.Unary(t.Context(), nil, checkInfo, okHandler)
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
		defer cancel()
		t0 := time.Now()
		_, err = s.Unary(ctx, nil, checkInfo, okHandler)
		assert.Equal(t, t0, time.Now(), "refused without waiting")
		assert.Equal(t, codes.ResourceExhausted, status.Code(err))
		delay, ok := grpclimit.RetryDelay(err)
		require.True(t, ok)
		assert.Equal(t, time.Second, delay)
	})
}

func TestWithWaitWaitsNoLongerThanItsBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := perMethod(t, algorithms.PerSecond(1), 1, grpclimit.WithWait(200*time.Millisecond))
		_, err := s.Unary(t.Context(), nil, checkInfo, okHandler)
		require.NoError(t, err)
		_, err = s.Unary(t.Context(), nil, checkInfo, okHandler)
		assert.Equal(t, codes.ResourceExhausted, status.Code(err), "a second is past the bound")
	})
}

func TestACallCancelledWhileItWaitsIsCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := perMethod(t, algorithms.PerSecond(1), 1, grpclimit.WithWait(-1))
		_, err := s.Unary(t.Context(), nil, checkInfo, okHandler)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(100*time.Millisecond, cancel)
		_, err = s.Unary(ctx, nil, checkInfo, okHandler)
		assert.Equal(t, codes.Canceled, status.Code(err))
	})
}

func TestWithoutWaitARefusalIsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := perMethod(t, algorithms.PerSecond(1), 1)
		_, err := s.Unary(t.Context(), nil, checkInfo, okHandler)
		require.NoError(t, err)
		t0 := time.Now()
		_, err = s.Unary(t.Context(), nil, checkInfo, okHandler)
		assert.Equal(t, t0, time.Now())
		assert.Equal(t, codes.ResourceExhausted, status.Code(err))
	})
}
