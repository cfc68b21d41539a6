package harness

import (
	"context"
	"net"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/peer"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/fairseat/fairseat/admission"
	bpeer "github.com/fairseat/fairseat/benchmarks/peer"
	"github.com/fairseat/fairseat/interceptors"
)

// CallMethod is the full name of the benchmark's one RPC, a no-op unary
// call taking and returning google.protobuf.Empty.
const CallMethod = "/bench.v1.Bench/Call"

// benchService is the handler type of the hand-written service
// descriptor; the server value is an empty struct.
type benchService interface{}

var benchDesc = grpc.ServiceDesc{
	ServiceName: "bench.v1.Bench",
	HandlerType: (*benchService)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "Call",
		Handler: func(srv any, ctx context.Context, dec func(any) error, icpt grpc.UnaryServerInterceptor) (any, error) {
			in := new(emptypb.Empty)
			if err := dec(in); err != nil {
				return nil, err
			}
			h := func(ctx context.Context, req any) (any, error) { return new(emptypb.Empty), nil }
			if icpt == nil {
				return h(ctx, in)
			}
			return icpt(ctx, in, &grpc.UnaryServerInfo{Server: srv, FullMethod: CallMethod}, h)
		},
	}},
}

// GRPCCapacity is the seat count behind the interceptors: far above the one
// call in flight, so every call finds a free seat (the overhead at low load).
const GRPCCapacity = 64

// LimiterInterceptor is the tiny interceptor that puts any peer in front of
// a unary handler: the fairness key is the caller's IP address.
func LimiterInterceptor(l bpeer.Limiter) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		key := ""
		if p, ok := peer.FromContext(ctx); ok {
			if a, ok := p.Addr.(*net.TCPAddr); ok {
				key = a.IP.String()
			}
		}
		var resp any
		var herr error
		if err := l.Do(ctx, key, func() { resp, herr = handler(ctx, req) }); err != nil {
			return nil, err
		}
		return resp, herr
	}
}

// FairseatInterceptor is fairseat's own interceptors.UnaryServerInterceptor
// in front of the handler (default key chain: client certificate, else
// client IP), with the route admitting CallMethod under the scheduler's one
// job type.
func FairseatInterceptor(s *admission.Scheduler) grpc.UnaryServerInterceptor {
	return interceptors.UnaryServerInterceptor(s, interceptors.WithRoutes(interceptors.Routes{
		CallMethod: {Type: bpeer.FairseatType},
	}))
}

// An RPCServer is a gRPC server on 127.0.0.1 with a client connected to it.
type RPCServer struct {
	srv  *grpc.Server
	Conn *grpc.ClientConn
}

// StartRPC starts a server with icpt (nil: none) on a loopback port and
// dials it.
func StartRPC(icpt grpc.UnaryServerInterceptor) (*RPCServer, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	var opts []grpc.ServerOption
	if icpt != nil {
		opts = append(opts, grpc.UnaryInterceptor(icpt))
	}
	srv := grpc.NewServer(opts...)
	srv.RegisterService(&benchDesc, struct{}{})
	go srv.Serve(lis)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		srv.Stop()
		return nil, err
	}
	return &RPCServer{srv: srv, Conn: conn}, nil
}

// Call makes one no-op call.
func (s *RPCServer) Call(ctx context.Context) error {
	return s.Conn.Invoke(ctx, CallMethod, &emptypb.Empty{}, new(emptypb.Empty))
}

// Stop closes the client and stops the server.
func (s *RPCServer) Stop() {
	_ = s.Conn.Close()
	s.srv.Stop()
}

// RPCVariants are the gRPC cases in order: no admission, each peer behind
// LimiterInterceptor, and fairseat's own interceptor.
func RPCVariants() []string {
	vs := []string{"none"}
	for _, p := range bpeer.All() {
		vs = append(vs, p.Name)
	}
	return append(vs, "fairseat-interceptors")
}

// NewRPCServer starts the server of variant v; its stop function also closes
// the limiter.
func NewRPCServer(v string) (*RPCServer, func(), error) {
	var icpt grpc.UnaryServerInterceptor
	closeL := func() {}
	if v != "none" {
		name := v
		if v == "fairseat-interceptors" {
			name = "fairseat"
		}
		p, _ := bpeer.Lookup(name)
		l, err := p.New(bpeer.Config{Capacity: GRPCCapacity, Weights: map[string]float64{"127.0.0.1": 1}})
		if err != nil {
			return nil, nil, err
		}
		closeL = func() { _ = l.Close() }
		icpt = LimiterInterceptor(l)
		if v == "fairseat-interceptors" {
			icpt = FairseatInterceptor(bpeer.FairseatScheduler(l))
		}
	}
	s, err := StartRPC(icpt)
	if err != nil {
		closeL()
		return nil, nil, err
	}
	return s, func() { s.Stop(); closeL() }, nil
}

// UnaryRPC measures one no-op unary call at a time over loopback TCP
// through variant v.
func UnaryRPC(b *testing.B, v string) {
	s, stop, err := NewRPCServer(v)
	if err != nil {
		b.Fatal(err)
	}
	defer stop()
	ctx := context.Background()
	if err := s.Call(ctx); err != nil { // connect outside the timing
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := s.Call(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
