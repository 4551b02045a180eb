package grpclimit_test

import (
	"context"
	"fmt"
	"net"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/grpclimit"
	"github.com/sluicehq/sluice/keyed"
	"github.com/sluicehq/sluice/permits"
)

// A limit per client and method: two calls a minute for each. The third
// call is refused with ResourceExhausted, RetryInfo and QuotaFailure. The
// limiter could be a *redislimit.Keyed as well, for a limit shared by a
// fleet: NewServer takes any permits.KeyedLimiter[string].
func ExampleServer() {
	var lim permits.KeyedLimiter[string]
	perKey, _ := keyed.NewGCRA[string](algorithms.PerMinute(2), 2) // (check the errors)
	defer perKey.Close()
	lim = perKey
	byPeer, _ := grpclimit.KeyByPeer(grpclimit.TrustProxies("10.0.0.0/8"))
	s, _ := grpclimit.NewServer(lim, grpclimit.KeyByAll(byPeer, grpclimit.KeyByMethod()), grpclimit.WithPolicy("per-client"))

	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(s.Unary), grpc.ChainStreamInterceptor(s.Stream))
	healthpb.RegisterHealthServer(srv, &health{})
	client, stop := inProcess(srv)
	defer stop()

	for range 3 {
		_, err := client.Check(context.Background(), &healthpb.HealthCheckRequest{})
		st := status.Convert(err)
		fmt.Println(st.Code())
		for _, d := range st.Details() {
			switch d := d.(type) {
			case *errdetails.RetryInfo:
				fmt.Println("retry within a minute:", d.GetRetryDelay().AsDuration() <= time.Minute)
			case *errdetails.QuotaFailure:
				fmt.Println("subject:", d.GetViolations()[0].GetSubject())
			}
		}
	}
	// Output:
	// OK
	// OK
	// ResourceExhausted
	// retry within a minute: true
	// subject: 8:bufconn:;35:method:/grpc.health.v1.Health/Check;
}

// A client that paces its calls and backs off when the server says so:
// a refusal's RetryInfo pauses the target, and the call is retried after
// it (here the server refuses once, asking for 10 ms).
func ExampleClient() {
	c, _ := grpclimit.NewClient(permits.Unlimited) // or an actor.Limiter at the service's quota
	refusals := 1
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, &health{check: func(context.Context) error {
		if refusals > 0 {
			refusals--
			return grpclimit.Refusal("default", "me", 10*time.Millisecond).Err()
		}
		return nil
	}})
	client, stop := inProcess(srv, grpc.WithChainUnaryInterceptor(c.Unary), grpc.WithChainStreamInterceptor(c.Stream))
	defer stop()

	_, err := client.Check(context.Background(), &healthpb.HealthCheckRequest{})
	fmt.Println(status.Code(err), c.Stats().Retries, c.Stats().Pauses)
	// Output: OK 1 1
}

// inProcess serves srv over bufconn and returns a client of it.
func inProcess(srv *grpc.Server, dial ...grpc.DialOption) (healthpb.HealthClient, func()) {
	lis := bufconn.Listen(1 << 20)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(lis)
	}()
	dial = append(dial, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }))
	cc, err := grpc.NewClient("passthrough:///bufnet", dial...)
	if err != nil {
		panic(err)
	}
	return healthpb.NewHealthClient(cc), func() {
		_ = cc.Close()
		srv.Stop()
		<-done
	}
}
