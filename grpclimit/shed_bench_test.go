package grpclimit_test

import (
	"context"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/grpclimit"
	"github.com/sluicehq/sluice/permits"
)

// BenchmarkShedderUnary is the cost of a method's slot on the server: a
// handler called alone, and through Shedder.Unary, none shed (the pool's
// limit is 1000).
func BenchmarkShedderUnary(b *testing.B) {
	s, err := grpclimit.NewShedder(aimd, grpclimit.WithPoolOptions(actor.WithLimits(1000, 1000, 1000)))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	ctx := context.Background()
	for _, c := range []struct {
		name string
		call func() error
	}{
		{"handler", func() error { _, err := okHandler(ctx, nil); return err }},
		{"shedder", func() error { _, err := s.Unary(ctx, nil, checkInfo, okHandler); return err }},
	} {
		bench(b, c.name, c.call)
	}
}

// BenchmarkClientAdaptive is the cost of a target's slot on the client:
// Client.Unary over an invoker that answers at once, without
// WithAdaptiveConcurrency and with it (limit 1000).
func BenchmarkClientAdaptive(b *testing.B) {
	cc, err := grpc.NewClient("passthrough:///bench", grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cc.Close() })
	invoke := func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error { return nil }
	ctx := context.Background()
	for _, c := range []struct {
		name string
		opts []grpclimit.ClientOption
	}{
		{"client", nil},
		{"client+adaptive", []grpclimit.ClientOption{grpclimit.WithAdaptiveConcurrency(aimd, actor.WithLimits(1000, 1000, 1000))}},
	} {
		cl, err := grpclimit.NewClient(permits.Unlimited, c.opts...)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = cl.Close() })
		bench(b, c.name, func() error { return cl.Unary(ctx, checkMethod, nil, nil, cc, invoke) })
	}
}

// bench runs call serially and from every P.
func bench(b *testing.B, name string, call func() error) {
	b.Run(name, func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := call(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run(name+"/parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := call(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
