package grpclimit_test

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/grpclimit"
)

// A method whose pool allows one call at a time (a limit held at 1, for
// the example) sheds the second while the first is served. A server
// installs the interceptors with grpc.ChainUnaryInterceptor(shed.Unary)
// and grpc.ChainStreamInterceptor(shed.Stream).
func ExampleShedder() {
	shed, err := grpclimit.NewShedder(func() actor.Controller { return &actor.AIMD{} },
		grpclimit.WithPoolOptions(actor.WithLimits(1, 1, 1)))
	if err != nil {
		panic(err)
	}
	defer shed.Close()
	info := &grpc.UnaryServerInfo{FullMethod: "/reports.Reports/Build"}
	entered, release := make(chan struct{}), make(chan struct{})
	done := make(chan error)
	go func() {
		_, err := shed.Unary(context.Background(), nil, info, func(context.Context, any) (any, error) {
			close(entered)
			<-release
			return "built", nil
		})
		done <- err
	}()
	<-entered
	_, err = shed.Unary(context.Background(), nil, info, func(context.Context, any) (any, error) { return "built", nil })
	_, hasRetryInfo := grpclimit.RetryDelay(err)
	fmt.Println(status.Code(err), hasRetryInfo)
	close(release)
	fmt.Println(<-done)
	// Output:
	// Unavailable true
	// <nil>
}
