package grpclimit

import (
	"context"
	"errors"
	"io"
	"sync"

	"google.golang.org/grpc"
)

// Stream is a grpc.StreamClientInterceptor: it opens the stream as
// Client's documentation describes, and holds the call's permit (and the
// breaker's verdict) until the stream ends.
func (c *Client) Stream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	call, err := c.newCall(ctx, method, cc.Target())
	if err != nil {
		return nil, err
	}
	call.keep = true
	var cs grpc.ClientStream
	err = call.finish(c.policy.Do(ctx, func(ctx context.Context) error {
		return call.attempt(ctx, func(ctx context.Context) error {
			var err error
			cs, err = streamer(ctx, desc, cc, method, opts...)
			return err
		})
	}))
	if err != nil {
		return nil, err
	}
	s := &clientStream{ClientStream: cs, call: call}
	// A stream its caller abandons ends with its context: what it holds
	// is given back then, even if nobody reads its end.
	s.stop = context.AfterFunc(ctx, func() { s.end(ctx.Err()) })
	return s, nil
}

// clientStream is an open stream that gives back its permit and tells the
// breaker its outcome once, when it ends.
type clientStream struct {
	grpc.ClientStream
	call *clientCall
	stop func() bool
	once sync.Once
}

// RecvMsg receives, and ends the stream on its first error: io.EOF is a
// success; a status the Client retries, with RetryInfo, pauses the target.
func (s *clientStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if err != nil {
		s.stop()
		s.end(err)
	}
	return err
}

func (s *clientStream) end(err error) {
	s.once.Do(func() {
		if errors.Is(err, io.EOF) {
			err = nil
		}
		a := s.call
		if a.done != nil {
			a.done(troubleOf(err))
		}
		a.slot.end(err, true)
		a.permit.Release()
		if err != nil {
			_ = a.c.answered(a.target, err) // pauses; a stream is not retried
		}
	})
}
