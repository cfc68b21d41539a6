package interceptors_test

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/fairseat/fairseat/admission"
	"github.com/fairseat/fairseat/interceptors"
	"github.com/fairseat/fairseat/internal/paired"
)

// The server variants of the RPC benchmarks.
const (
	benchNone     = "none"     // no interceptor
	benchNoop     = "noop"     // an interceptor that only calls the handler: gRPC's cost of having one
	benchFairseat = "fairseat" // UnaryServerInterceptor
	benchAcquire  = "acquire"  // an interceptor that only calls Acquire and Release with a fixed request: the scheduler's share
)

// benchServer serves the no-op Clone over bufconn, with the interceptor
// variant named, and returns a connected client. The server sees the client
// at a TCP address, so the default fairness key (the client IP) is derived
// as in production.
func benchServer(b *testing.B, variant string, sched *admission.Scheduler, dopts ...grpc.DialOption) *grpc.ClientConn {
	b.Helper()
	var sopts []grpc.ServerOption
	switch variant {
	case benchNoop:
		sopts = append(sopts, grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			return h(ctx, req)
		}))
	case benchFairseat:
		opts := []interceptors.Option{interceptors.WithRoutes(interceptors.Routes{
			cloneMethod: {Type: "clone", JobID: interceptors.Field("value")},
		})}
		sopts = append(sopts, grpc.ChainUnaryInterceptor(interceptors.UnaryServerInterceptor(sched, opts...)))
	case benchAcquire:
		r := admission.Request{Type: "clone", JobID: "github.com/golang/go", FairnessKey: "ip:203.0.113.7"}
		sopts = append(sopts, grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			p, err := sched.Acquire(ctx, r)
			if err != nil {
				return nil, err
			}
			defer p.Release()
			return h(ctx, req)
		}))
	}
	lis := bufconn.Listen(1 << 20)
	return serveNoop(b, grpc.NewServer(sopts...), fixedAddrListener{lis, net.TCPAddrFromAddrPort(netip.MustParseAddrPort("203.0.113.7:5000"))},
		"passthrough:///bufnet", append([]grpc.DialOption{
			grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) })},
			dopts...)...)
}

// serveNoop registers the no-op Clone with srv, serves it on lis, and
// returns a client connected to target (insecure, with dopts). b.Cleanup
// stops both.
func serveNoop(b *testing.B, srv *grpc.Server, lis net.Listener, target string, dopts ...grpc.DialOption) *grpc.ClientConn {
	b.Helper()
	srv.RegisterService(&gitDesc, &gitServer{clone: func(context.Context, *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
		return &wrapperspb.StringValue{}, nil
	}})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(lis)
	}()
	cc, err := grpc.NewClient(target, append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, dopts...)...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		cc.Close()
		srv.Stop()
		<-done
	})
	return cc
}

// benchScheduler is a scheduler with room to spare: every call is admitted
// at once, as at low load.
func benchScheduler(b *testing.B) *admission.Scheduler {
	b.Helper()
	sched, err := admission.New(admission.Config{Capacity: 64})
	if err != nil {
		b.Fatal(err)
	}
	err = sched.RegisterType("clone", admission.JobTypeConfig{
		DefaultCost: 10 * time.Millisecond, ConflictGroup: "git", Priority: admission.PriorityForeground,
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = sched.Close(context.Background()) })
	return sched
}

var benchVariants = []string{benchNone, benchNoop, benchFairseat}

// BenchmarkUnaryRPC measures one no-op unary RPC over bufconn, one at a
// time (low load: a seat is always free), without an interceptor, with a
// no-op one, and with fairseat's (route lookup, job ID through
// protoreflect, client-IP key, Acquire and Release). Compare them with
// benchstat -col /interceptor. The variants run one after the other, so on
// a shared machine drifting load can favour one; BenchmarkUnaryRPCPaired
// interleaves them call by call.
func BenchmarkUnaryRPC(b *testing.B) {
	sched := benchScheduler(b)
	for _, v := range benchVariants {
		b.Run("interceptor="+v, func(b *testing.B) {
			benchCalls(b, benchServer(b, v, sched))
		})
	}
}

// BenchmarkUnaryRPCPaired calls the three servers of BenchmarkUnaryRPC in
// turn in one loop, rotating which goes first, so that the load of a shared
// machine, which drifts over seconds, weighs on all alike. It reports each
// server's mean latency per call and fairseat's overhead in percent over no
// interceptor and over the no-op one, and the same for the median call
// (p50-). Every call is timed with two clock reads, the same for all.
//
// The mean includes the rare slow calls: a GC cycle's pauses and assists,
// a stack growth, a preemption by another process on a shared machine (a
// few milliseconds on one call in thousands). They make it swing by
// several percent from run to run even between two identical servers,
// while their median calls stay within a few tenths of a percent of each
// other; the interceptor's work is in every call, so the median carries it
// all, but not its share of the GC work its allocations cause, which only
// the mean does. Read both.
func BenchmarkUnaryRPCPaired(b *testing.B) {
	mean, median := pairedCalls(b, benchVariants)
	reportPaired(b, benchVariants, mean, median)
}

// reportPaired reports the mean and median latency per call of each of the
// three variants (none, noop, and the one measured) and the third one's
// overhead in percent over the other two.
func reportPaired(b *testing.B, variants []string, mean, median []float64) {
	for i, v := range variants {
		b.ReportMetric(mean[i], "ns-"+v+"/call")
		b.ReportMetric(median[i], "p50-ns-"+v+"/call")
	}
	b.ReportMetric(100*(mean[2]-mean[0])/mean[0], "overhead-vs-none-%")
	b.ReportMetric(100*(mean[2]-mean[1])/mean[1], "overhead-vs-noop-%")
	b.ReportMetric(100*(median[2]-median[0])/median[0], "p50-overhead-vs-none-%")
	b.ReportMetric(100*(median[2]-median[1])/median[1], "p50-overhead-vs-noop-%")
}

// BenchmarkUnaryRPCNoise is BenchmarkUnaryRPCPaired with a control: a
// second server without an interceptor, identical to the first. Their
// difference (aa-) is what each statistic reads when there is nothing to
// find: the noise floor against which fairseat's overhead (fairseat-) is
// read, for the mean and for the median call.
func BenchmarkUnaryRPCNoise(b *testing.B) {
	mean, median := pairedCalls(b, []string{benchNone, benchNone, benchFairseat})
	reportNoise(b, mean, median)
}

// reportNoise reports the A/A difference of the first two variants (aa-)
// and the third one's overhead over the first (fairseat-), for the mean
// and for the median call.
func reportNoise(b *testing.B, mean, median []float64) {
	b.ReportMetric(100*(mean[1]-mean[0])/mean[0], "aa-overhead-%")
	b.ReportMetric(100*(median[1]-median[0])/median[0], "aa-p50-overhead-%")
	b.ReportMetric(100*(mean[2]-mean[0])/mean[0], "fairseat-overhead-%")
	b.ReportMetric(100*(median[2]-median[0])/median[0], "fairseat-p50-overhead-%")
}

// BenchmarkUnaryRPCSplit splits fairseat's overhead on the median call in
// the paired loop: a fourth server's interceptor only calls Acquire and
// Release (with a fixed request, on its own scheduler). It reports, in ns
// over no interceptor, gRPC's cost of having an interceptor (noop-), that
// plus the scheduler's (acquire-), and the whole interceptor (fairseat-):
// fairseat minus acquire is the interceptor's own work (route, key, job
// ID).
func BenchmarkUnaryRPCSplit(b *testing.B) {
	variants := []string{benchNone, benchNoop, benchAcquire, benchFairseat}
	_, median := pairedCalls(b, variants)
	for i, v := range variants {
		b.ReportMetric(median[i], "p50-ns-"+v+"/call")
	}
	for i, v := range variants[1:] {
		b.ReportMetric(median[i+1]-median[0], "p50-"+v+"-ns-over-none")
	}
}

// pairedCalls calls one server of each variant in turn in one loop,
// rotating which goes first, and returns each server's mean and median
// latency per call in ns. Each server that admits has a scheduler of its
// own.
func pairedCalls(b *testing.B, variants []string) (mean, median []float64) {
	ccs := make([]*grpc.ClientConn, len(variants))
	for i, v := range variants {
		ccs[i] = benchServer(b, v, benchScheduler(b))
	}
	return pairedOn(b, ccs)
}

// pairedOn calls Clone on each client connection in turn in one loop,
// rotating which goes first (paired.Loop), and returns each one's mean and
// median latency per call in ns.
func pairedOn(b *testing.B, ccs []*grpc.ClientConn) (mean, median []float64) {
	req, resp := wrapperspb.String("github.com/golang/go"), new(wrapperspb.StringValue)
	ctx := context.Background()
	calls := make([]func(), len(ccs))
	for i, cc := range ccs {
		calls[i] = func() {
			if err := cc.Invoke(ctx, cloneMethod, req, resp); err != nil {
				b.Fatal(err)
			}
		}
	}
	return paired.Loop(b, calls)
}

// BenchmarkAdmit measures fairseat's interceptor alone, called directly
// with a no-op handler: what it adds to every routed call.
func BenchmarkAdmit(b *testing.B) {
	icpt := interceptors.UnaryServerInterceptor(benchScheduler(b), interceptors.WithRoutes(interceptors.Routes{
		cloneMethod: {Type: "clone", JobID: interceptors.Field("value")},
	}))
	ctx := peerCtx(b, "203.0.113.7:5000", nil)
	req := wrapperspb.String("github.com/golang/go")
	info := &grpc.UnaryServerInfo{FullMethod: cloneMethod}
	noop := func(context.Context, any) (any, error) { return nil, nil }
	b.ReportAllocs()
	for b.Loop() {
		if _, err := icpt(ctx, req, info, noop); err != nil {
			b.Fatal(err)
		}
	}
}
