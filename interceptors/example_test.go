package interceptors_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/fairseat/fairseat/admission"
	"github.com/fairseat/fairseat/criticality"
	"github.com/fairseat/fairseat/interceptors"
)

// Wiring the interceptors into grpc.NewServer. The service is git.v1.Git,
// registered here from a hand-written grpc.ServiceDesc; a real server calls
// its generated RegisterGitServer.
func Example() {
	sched, err := admission.New(admission.Config{Capacity: 8})
	if err != nil {
		panic(err)
	}
	_ = sched.RegisterType("clone", admission.JobTypeConfig{
		DefaultCost:   10 * time.Second,
		ConflictGroup: "git", // two clones of one repository never run at once
		Priority:      admission.PriorityForeground,
		MaxWait:       time.Minute,
	})

	opts := []interceptors.Option{
		interceptors.WithRoutes(interceptors.Routes{
			// The job ID is the request's field "value" (a
			// google.protobuf.StringValue here; "repository" in a real API).
			"/git.v1.Git/Clone": {Type: "clone", JobID: interceptors.Field("value")},
			// A server-streaming call: admitted on its request message.
			"/git.v1.Git/Fetch": {Type: "clone", JobID: interceptors.Field("value"), Stream: interceptors.FirstMessage},
		}),
		// The default fairness key is the client's SPIFFE ID or certificate
		// subject under mTLS, else its IP address.
	}
	srv := grpc.NewServer(
		grpc.ChainUnaryInterceptor(interceptors.UnaryServerInterceptor(sched, opts...)),
		grpc.ChainStreamInterceptor(interceptors.StreamServerInterceptor(sched, opts...)),
	)
	srv.RegisterService(&gitDesc, &gitServer{
		clone: func(ctx context.Context, req *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
			snap := sched.Snapshot() // the handler runs holding a seat
			fmt.Printf("cloning %s for %s, %d seat in use\n", req.GetValue(), snap.Keys[0].Key, snap.InUse)
			return wrapperspb.String("done"), nil
		},
	})

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go srv.Serve(lis)
	defer srv.Stop()

	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		panic(err)
	}
	defer cc.Close()
	out := new(wrapperspb.StringValue)
	err = cc.Invoke(context.Background(), "/git.v1.Git/Clone", wrapperspb.String("github.com/golang/go"), out)
	fmt.Println(out.GetValue(), err)

	// Once the scheduler closes, calls are refused with Unavailable and a
	// retry hint, in the trailer the client's retry policy reads.
	_ = sched.Close(context.Background())
	var trailer metadata.MD
	err = cc.Invoke(context.Background(), "/git.v1.Git/Clone", wrapperspb.String("github.com/golang/go"), out, grpc.Trailer(&trailer))
	fmt.Println(status.Code(err), trailer.Get(interceptors.PushbackTrailer))
	// Output:
	// cloning github.com/golang/go for ip:127.0.0.1, 1 seat in use
	// done <nil>
	// Unavailable [1]
}

// A fairness key chain for a server behind a gateway: the identity an auth
// interceptor stored, else the tenant the gateway (and only the gateway)
// names in x-tenant-id, else the client address.
func ExampleFirstOf() {
	type userKey struct{}
	gateways := interceptors.PeerIn(netip.MustParsePrefix("10.0.0.0/8"))
	key := interceptors.FirstOf(
		interceptors.Principal(func(ctx context.Context) (string, bool) {
			u, ok := ctx.Value(userKey{}).(string)
			return u, ok
		}),
		interceptors.TrustedMetadata("x-tenant-id", gateways),
		interceptors.ClientIP(0),
	)

	// What the server sees of a call: the peer's address, its metadata.
	call := func(addr string) context.Context {
		ctx := peer.NewContext(context.Background(), &peer.Peer{
			Addr: net.TCPAddrFromAddrPort(netip.MustParseAddrPort(addr)),
		})
		return metadata.NewIncomingContext(ctx, metadata.Pairs("x-tenant-id", "acme"))
	}
	fromGateway := call("10.1.2.3:443")
	fromClient := call("[2001:db8::5:1:2:3:4]:5000")
	for _, ctx := range []context.Context{
		context.WithValue(fromGateway, userKey{}, "alice"),
		fromGateway,
		fromClient, // not a gateway: its x-tenant-id is ignored
	} {
		fmt.Println(key(ctx))
	}
	// Output:
	// principal:alice <nil>
	// header:x-tenant-id:acme <nil>
	// ip:2001:db8:0:5::/64 <nil>
}

// Client and server wired together: the client states its criticality,
// which the server believes from loopback peers and its handler sees; a
// server that asks for a delay is not called again before it has passed —
// the client refuses the call itself, with the server's code.
func ExampleUnaryClientInterceptor() {
	sched, err := admission.New(admission.Config{Capacity: 8})
	if err != nil {
		panic(err)
	}
	defer sched.Close(context.Background())
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(interceptors.UnaryServerInterceptor(sched,
		interceptors.WithCriticalityTrust(interceptors.PeerIn(netip.MustParsePrefix("127.0.0.0/8"))))))
	srv.RegisterService(&gitDesc, &gitServer{
		clone: func(ctx context.Context, req *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
			level, _ := criticality.FromContext(ctx)
			fmt.Println("server: a", level, "clone of", req.GetValue())
			st, _ := status.New(codes.ResourceExhausted, "busy").WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(time.Minute)})
			return nil, st.Err()
		},
	})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go srv.Serve(lis)
	defer srv.Stop()

	cc, err := grpc.NewClient(lis.Addr().String(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithChainUnaryInterceptor(interceptors.UnaryClientInterceptor()),
	)
	if err != nil {
		panic(err)
	}
	defer cc.Close()
	ctx := criticality.NewContext(context.Background(), criticality.Sheddable)
	for range 2 {
		err := cc.Invoke(ctx, "/git.v1.Git/Clone", wrapperspb.String("github.com/golang/go"), new(wrapperspb.StringValue))
		fmt.Println("client:", status.Code(err), "refused locally:", errors.Is(err, interceptors.ErrRefusedLocally))
	}
	// Output:
	// server: a sheddable clone of github.com/golang/go
	// client: ResourceExhausted refused locally: false
	// client: ResourceExhausted refused locally: true
}
