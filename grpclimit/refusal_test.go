package grpclimit_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/grpclimit"
	"github.com/sluicehq/sluice/keyed"
	"github.com/sluicehq/sluice/permits"
)

func perMethod(t *testing.T, rate algorithms.Rate, burst int64, opts ...grpclimit.ServerOption) *grpclimit.Server {
	t.Helper()
	lim, err := keyed.NewGCRA[string](rate, burst)
	require.NoError(t, err)
	t.Cleanup(func() { _ = lim.Close() })
	s, err := grpclimit.NewServer(lim, grpclimit.KeyByMethod(), opts...)
	require.NoError(t, err)
	return s
}

func interceptors(s *grpclimit.Server) []grpc.ServerOption {
	return []grpc.ServerOption{grpc.ChainUnaryInterceptor(s.Unary), grpc.ChainStreamInterceptor(s.Stream)}
}

func TestARefusalIsResourceExhaustedWithRetryInfoAndQuotaFailure(t *testing.T) {
	s := perMethod(t, algorithms.PerMinute(1), 2, grpclimit.WithPolicy("checks"))
	c := serve(t, nil, nil, interceptors(s))
	ctx := t.Context()
	require.NoError(t, check(ctx, c))
	require.NoError(t, check(ctx, c))
	err := check(ctx, c)
	st, ok := status.FromError(err)
	require.True(t, ok)
	assert.Equal(t, codes.ResourceExhausted, st.Code())
	assert.Contains(t, st.Message(), `"checks"`, "the message names the limit")
	var info *errdetails.RetryInfo
	var quota *errdetails.QuotaFailure
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.RetryInfo:
			info = d
		case *errdetails.QuotaFailure:
			quota = d
		}
	}
	require.NotNil(t, info)
	require.NotNil(t, quota)
	delay := info.GetRetryDelay().AsDuration()
	assert.Greater(t, delay, time.Duration(0))
	assert.LessOrEqual(t, delay, time.Minute, "one unit comes back within a minute")
	require.Len(t, quota.GetViolations(), 1)
	assert.Equal(t, "method:"+checkMethod, quota.GetViolations()[0].GetSubject())
	got, ok := grpclimit.RetryDelay(err)
	assert.True(t, ok)
	assert.Equal(t, delay, got)
}

func TestAStreamCostsOnceAsItOpens(t *testing.T) {
	s := perMethod(t, algorithms.PerMinute(1), 1)
	c := serve(t, nil, nil, interceptors(s))
	ctx := t.Context()
	w, err := c.Watch(ctx, nil)
	require.NoError(t, err)
	_, err = w.Recv()
	require.NoError(t, err, "the first stream is admitted")
	w, err = c.Watch(ctx, nil)
	require.NoError(t, err)
	_, err = w.Recv()
	assert.Equal(t, codes.ResourceExhausted, status.Code(err))
	_, ok := grpclimit.RetryDelay(err)
	assert.True(t, ok)
}

func TestACostNoWaitCanAdmitIsRefusedWithoutRetryInfo(t *testing.T) {
	s := perMethod(t, algorithms.PerSecond(1), 1, grpclimit.WithCost(func(context.Context, string) int64 { return 5 }))
	_, err := s.Unary(t.Context(), nil, &grpc.UnaryServerInfo{FullMethod: checkMethod}, okHandler)
	assert.Equal(t, codes.ResourceExhausted, status.Code(err))
	_, ok := grpclimit.RetryDelay(err)
	assert.False(t, ok, "no wait helps: a client must not retry it")
}

func TestExemptMethodsAreNotCounted(t *testing.T) {
	s := perMethod(t, algorithms.PerMinute(1), 1, grpclimit.WithExemptions(grpclimit.ExemptMethods(checkMethod)))
	info := &grpc.UnaryServerInfo{FullMethod: checkMethod}
	for range 3 {
		_, err := s.Unary(t.Context(), nil, info, okHandler)
		require.NoError(t, err)
	}
	_, err := s.Unary(t.Context(), nil, &grpc.UnaryServerInfo{FullMethod: "/other/M"}, okHandler)
	require.NoError(t, err, "the other method's quota is untouched")
}

func TestBadServerOptionsAreConfigurationErrors(t *testing.T) {
	lim, err := keyed.NewGCRA[string](algorithms.PerSecond(1), 1)
	require.NoError(t, err)
	defer lim.Close()
	_, err = grpclimit.NewServer(nil, grpclimit.KeyByMethod())
	assert.ErrorIs(t, err, permits.ErrInvalidConfig)
	_, err = grpclimit.NewServer(lim, nil)
	assert.ErrorIs(t, err, permits.ErrInvalidConfig)
	_, err = grpclimit.NewServer(lim, grpclimit.KeyByMethod(), grpclimit.WithPolicy(""))
	assert.ErrorIs(t, err, permits.ErrInvalidConfig)
}

func okHandler(context.Context, any) (any, error) { return "ok", nil }

func TestEachRefusalNamesItsOwnKey(t *testing.T) {
	lim, err := keyed.NewGCRA[string](algorithms.PerMinute(1), 1)
	require.NoError(t, err)
	defer lim.Close()
	s, err := grpclimit.NewServer(lim, grpclimit.KeyByMetadata("x-tenant"))
	require.NoError(t, err)
	for _, tenant := range []string{"a", "b", "a", "a", "b"} {
		_, _ = s.Unary(from(tcp("192.0.2.1:1"), "x-tenant", tenant), nil, checkInfo, okHandler) // spends the first
		_, err := s.Unary(from(tcp("192.0.2.1:1"), "x-tenant", tenant), nil, checkInfo, okHandler)
		st := status.Convert(err)
		require.Equal(t, codes.ResourceExhausted, st.Code())
		var subject string
		for _, d := range st.Details() {
			if q, ok := d.(*errdetails.QuotaFailure); ok {
				subject = q.GetViolations()[0].GetSubject()
			}
		}
		assert.Equal(t, "md:x-tenant:"+tenant, subject)
	}
}
