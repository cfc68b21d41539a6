package interceptors_test

import (
	"context"
	"net"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/fairseat/fairseat/interceptors"
)

// The client variants of the client benchmarks.
const (
	clientNone     = "none"     // no client interceptor
	clientNoop     = "noop"     // an interceptor that only invokes: gRPC's cost of having one
	clientFairseat = "fairseat" // UnaryClientInterceptor
)

var clientVariants = []string{clientNone, clientNoop, clientFairseat}

// The networks of the client benchmarks.
const (
	netBufconn  = "bufconn"  // in memory, as the server benchmarks
	netLoopback = "loopback" // TCP over 127.0.0.1: what the goal is stated for
)

// clientConn returns a connection, with the client interceptor variant
// named, to a server of its own without an interceptor, over network.
func clientConn(b *testing.B, network, variant string) *grpc.ClientConn {
	var dopts []grpc.DialOption
	switch variant {
	case clientNoop:
		dopts = append(dopts, grpc.WithUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			return invoker(ctx, method, req, reply, cc, opts...)
		}))
	case clientFairseat:
		dopts = append(dopts, grpc.WithUnaryInterceptor(interceptors.UnaryClientInterceptor()))
	}
	if network == netBufconn {
		return benchServer(b, benchNone, nil, dopts...)
	}
	return loopbackServer(b, dopts...)
}

// loopbackServer serves the no-op Clone on a TCP port of 127.0.0.1 and
// returns a connected client.
func loopbackServer(b *testing.B, dopts ...grpc.DialOption) *grpc.ClientConn {
	b.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	return serveNoop(b, grpc.NewServer(), lis, lis.Addr().String(), dopts...)
}

// BenchmarkUnaryClient measures one no-op unary RPC over bufconn or
// loopback TCP, one at a time, to a server without interceptors, from a
// client without an interceptor, with a no-op one, and with
// UnaryClientInterceptor (a level lookup in the context, the throttle's
// decision and record, the trailer call option). Every call succeeds: the
// plain case the interceptor must not slow. Compare them with benchstat
// -col /client, running the variants in turn from separate processes
// (benchmarks/client-overhead.sh).
func BenchmarkUnaryClient(b *testing.B) {
	for _, network := range []string{netBufconn, netLoopback} {
		for _, v := range clientVariants {
			b.Run("net="+network+"/client="+v, func(b *testing.B) {
				benchCalls(b, clientConn(b, network, v))
			})
		}
	}
}

// benchCalls times no-op Clone calls on cc, one at a time.
func benchCalls(b *testing.B, cc *grpc.ClientConn) {
	req, resp := wrapperspb.String("github.com/golang/go"), new(wrapperspb.StringValue)
	ctx := context.Background()
	if err := cc.Invoke(ctx, cloneMethod, req, resp); err != nil { // connect outside the timing
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := cc.Invoke(ctx, cloneMethod, req, resp); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUnaryClientPaired calls the three clients of
// BenchmarkUnaryClient in turn in one loop, rotating which goes first, so
// that a shared machine's drifting load weighs on all alike, and reports
// each one's mean and median latency per call and the client
// interceptor's overhead in percent over no interceptor and over the
// no-op one (see BenchmarkUnaryRPCPaired on reading mean and median).
func BenchmarkUnaryClientPaired(b *testing.B) {
	for _, network := range []string{netBufconn, netLoopback} {
		b.Run("net="+network, func(b *testing.B) {
			ccs := make([]*grpc.ClientConn, len(clientVariants))
			for i, v := range clientVariants {
				ccs[i] = clientConn(b, network, v)
			}
			mean, median := pairedOn(b, ccs)
			reportPaired(b, clientVariants, mean, median)
		})
	}
}

// BenchmarkUnaryClientNoise is BenchmarkUnaryClientPaired with a control:
// two clients without an interceptor, identical. Their difference (aa-) is
// the noise floor against which the interceptor's overhead (fairseat-) is
// read.
func BenchmarkUnaryClientNoise(b *testing.B) {
	for _, network := range []string{netBufconn, netLoopback} {
		b.Run("net="+network, func(b *testing.B) {
			ccs := []*grpc.ClientConn{clientConn(b, network, clientNone), clientConn(b, network, clientNone), clientConn(b, network, clientFairseat)}
			mean, median := pairedOn(b, ccs)
			reportNoise(b, mean, median)
		})
	}
}

// BenchmarkClientInterceptor measures UnaryClientInterceptor alone, called
// directly with an invoker that does nothing: what it adds to every call.
func BenchmarkClientInterceptor(b *testing.B) {
	icpt := interceptors.UnaryClientInterceptor()
	cc := clientConn(b, netBufconn, clientNone)
	invoker := func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error { return nil }
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := icpt(ctx, cloneMethod, nil, nil, cc, invoker); err != nil {
			b.Fatal(err)
		}
	}
}
