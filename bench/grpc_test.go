package bench_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/ratelimit"
	"golang.org/x/time/rate"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/test/bufconn"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/grpclimit"
	"github.com/sluicehq/sluice/keyed"
)

// grpclimit's unary server interceptor beside go-grpc-middleware/v2's
// ratelimit interceptor over an x/time/rate Limiter, its documented use.
// The middleware has one limit for every call (its Limiter sees only the
// context) and refuses with a bare ResourceExhausted; grpclimit keys each
// call by method here (a keyed.Limiter's lock-free GCRA path) and refuses
// with RetryInfo and QuotaFailure. impl=... so that benchstat can put
// them side by side:
//
//	go test -run '^$' -bench GRPC -count 5 . > grpc.txt
//	benchstat -col /impl grpc.txt
//
// path=admit: every call is admitted (a rate no benchmark reaches);
// path=refuse: every call is refused (the burst spent, a rate of one a
// day). BenchmarkGRPCInterceptor calls the interceptor function directly
// with a no-op handler; BenchmarkGRPCBufconn makes whole unary calls
// through a server over bufconn, the interceptor's share of which is the
// difference from impl=none.

var checkInfo = &grpc.UnaryServerInfo{FullMethod: "/grpc.health.v1.Health/Check"}

func noop(context.Context, any) (any, error) { return nil, nil }

type xtimeLimiter struct{ *rate.Limiter }

var errLimited = errors.New("rate limited")

func (l xtimeLimiter) Limit(context.Context) error {
	if !l.Allow() {
		return errLimited
	}
	return nil
}

// grpcSubjects returns the interceptors to compare for a path, and a stop.
func grpcSubjects(b *testing.B, refuse bool) (map[string]grpc.UnaryServerInterceptor, func()) {
	r, burst := algorithms.PerSecond(1_000_000_000), int64(1_000_000)
	xr, xburst := rate.Limit(1e9), 1_000_000
	if refuse {
		r, burst = algorithms.Rate{Count: 1, Per: 24 * time.Hour}, 1
		xr, xburst = rate.Limit(1.0/86400), 1
	}
	lim, err := keyed.NewGCRA[string](r, burst)
	if err != nil {
		b.Fatal(err)
	}
	s, err := grpclimit.NewServer(lim, grpclimit.KeyByMethod())
	if err != nil {
		b.Fatal(err)
	}
	mw := ratelimit.UnaryServerInterceptor(xtimeLimiter{rate.NewLimiter(xr, xburst)})
	if refuse { // spend the bursts
		_, _ = s.Unary(context.Background(), nil, checkInfo, noop)
		_, _ = mw(context.Background(), nil, checkInfo, noop)
	}
	return map[string]grpc.UnaryServerInterceptor{"grpclimit": s.Unary, "middleware": mw}, func() { _ = lim.Close() }
}

func BenchmarkGRPCInterceptor(b *testing.B) {
	for _, path := range []string{"admit", "refuse"} {
		subjects, stop := grpcSubjects(b, path == "refuse")
		for _, name := range []string{"grpclimit", "middleware"} {
			ic := subjects[name]
			b.Run("path="+path+"/impl="+name, func(b *testing.B) {
				ctx := context.Background()
				b.ReportAllocs()
				for b.Loop() {
					_, _ = ic(ctx, nil, checkInfo, noop)
				}
			})
		}
		stop()
	}
}

func BenchmarkGRPCBufconn(b *testing.B) {
	subjects, stop := grpcSubjects(b, false)
	defer stop()
	subjects["none"] = nil
	for _, name := range []string{"none", "grpclimit", "middleware"} {
		b.Run("path=admit/impl="+name, func(b *testing.B) {
			var opts []grpc.ServerOption
			if ic := subjects[name]; ic != nil {
				opts = append(opts, grpc.UnaryInterceptor(ic))
			}
			client, done := bufconnHealth(b, opts...)
			defer done()
			ctx, req := context.Background(), &healthpb.HealthCheckRequest{}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := client.Check(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// bufconnHealth serves grpc's health service over bufconn.
func bufconnHealth(b *testing.B, opts ...grpc.ServerOption) (healthpb.HealthClient, func()) {
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer(opts...)
	healthpb.RegisterHealthServer(srv, serving{})
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(lis)
	}()
	cc, err := grpc.NewClient("passthrough:///bufnet", grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }))
	if err != nil {
		b.Fatal(err)
	}
	return healthpb.NewHealthClient(cc), func() {
		_ = cc.Close()
		srv.Stop()
		<-served
	}
}

type serving struct {
	healthpb.UnimplementedHealthServer
}

func (serving) Check(context.Context, *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}
