package grpclimit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sluicehq/sluice/keyed"
	"github.com/sluicehq/sluice/permits"
)

// Refusal returns the status of a call refused by the limit named policy
// for key: codes.ResourceExhausted, a message that names the limit and the
// wait, and two details: google.rpc.RetryInfo, whose retry_delay is wait
// (at least 1 ns: a refusal always asks the client to come back later),
// and google.rpc.QuotaFailure, with one violation whose subject is key.
// The server interceptors answer every refusal with it; a handler that
// limits on its own can too.
func Refusal(policy, key string, wait time.Duration) *status.Status {
	wait = max(wait, time.Nanosecond)
	st := status.New(codes.ResourceExhausted, fmt.Sprintf("grpclimit: limit %q exceeded, retry after %v", policy, wait))
	withDetails, err := st.WithDetails(
		retryInfo(wait),
		&errdetails.QuotaFailure{Violations: []*errdetails.QuotaFailure_Violation{{
			Subject:     key,
			Description: fmt.Sprintf("limit %q: no capacity for this key for %v", policy, wait),
		}}},
	)
	if err != nil {
		return st // unreachable: both details marshal
	}
	return withDetails
}

// withRetryInfo is st with a RetryInfo of wait.
func withRetryInfo(st *status.Status, wait time.Duration) *status.Status {
	if with, err := st.WithDetails(retryInfo(wait)); err == nil {
		return with
	}
	return st
}

func retryInfo(wait time.Duration) *errdetails.RetryInfo {
	return &errdetails.RetryInfo{RetryDelay: durationpb.New(max(wait, time.Nanosecond))}
}

// RetryDelay returns the retry_delay of the google.rpc.RetryInfo detail
// of err's status, and whether it has one (a negative delay is 0).
func RetryDelay(err error) (time.Duration, bool) {
	st, ok := status.FromError(err)
	if !ok || st == nil {
		return 0, false
	}
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok && ri.GetRetryDelay() != nil {
			return max(ri.GetRetryDelay().AsDuration(), 0), true
		}
	}
	return 0, false
}

// serverError is the status of a call the limiter did not grant: a
// refusal by the limit, or an error no wait cures.
func (s *Server) serverError(key string, err error) error {
	if wait, ok := permits.RetryAfter(err); ok {
		return s.refusal(key, wait).Err()
	}
	code := codes.Internal
	switch {
	case errors.Is(err, ErrNoKey):
		code = codes.InvalidArgument
	case errors.Is(err, permits.ErrCostExceedsCapacity):
		// No wait makes it fit: no RetryInfo, so that clients do not retry.
		code = codes.ResourceExhausted
	case errors.Is(err, keyed.ErrTooManyKeys), errors.Is(err, permits.ErrClosed):
		code = codes.Unavailable
	case errors.Is(err, context.Canceled):
		code = codes.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		code = codes.DeadlineExceeded
	}
	return status.Error(code, "grpclimit: "+err.Error())
}
