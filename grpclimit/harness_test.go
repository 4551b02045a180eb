package grpclimit_test

import (
	"context"
	"net"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/test/bufconn"
)

// health is the service the tests call: grpc's health service, so that
// no code is generated; check answers Check (nil: SERVING).
type health struct {
	healthpb.UnimplementedHealthServer
	check func(ctx context.Context) error
}

func (h *health) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	if h.check != nil {
		if err := h.check(ctx); err != nil {
			return nil, err
		}
	}
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

func (h *health) Watch(_ *healthpb.HealthCheckRequest, s healthpb.Health_WatchServer) error {
	return s.Send(&healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING})
}

const checkMethod = "/grpc.health.v1.Health/Check"

// serve starts a server with opts over an in-process listener (or lis,
// if given), and returns a client of it dialled with dial; both are
// stopped when the test ends.
func serve(t *testing.T, h *health, lis net.Listener, opts []grpc.ServerOption, dial ...grpc.DialOption) healthpb.HealthClient {
	t.Helper()
	if h == nil {
		h = &health{}
	}
	target := "passthrough:///bufnet"
	if lis == nil {
		bl := bufconn.Listen(1 << 20)
		lis = bl
		dial = append(dial, grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			return bl.DialContext(ctx)
		}))
	} else {
		target = lis.Addr().String()
	}
	srv := grpc.NewServer(opts...)
	healthpb.RegisterHealthServer(srv, h)
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(lis)
	}()
	cc, err := grpc.NewClient(target, append(dial, grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = cc.Close()
		srv.Stop()
		<-served
	})
	return healthpb.NewHealthClient(cc)
}

func check(ctx context.Context, c healthpb.HealthClient) error {
	_, err := c.Check(ctx, &healthpb.HealthCheckRequest{})
	return err
}
