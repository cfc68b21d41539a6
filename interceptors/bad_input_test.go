package interceptors_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/fairseat/fairseat/admission"
	"github.com/fairseat/fairseat/criticality"
	"github.com/fairseat/fairseat/interceptors"
	"github.com/fairseat/fairseat/internal/hostiletest"
)

// Bad input to every exported function: the documented panic for
// configuration that cannot work, a default or the documented status for
// the rest (see "Errors and panics" in the package doc).
func TestBadInput(t *testing.T) {
	s, err := admission.New(admission.Config{Capacity: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	route := func(pattern string, r interceptors.Route) interceptors.Option {
		return interceptors.WithRoutes(interceptors.Routes{pattern: r})
	}
	for _, tc := range []struct {
		name string
		call func()
		want string
	}{
		{"UnaryServerInterceptor(nil)", func() { interceptors.UnaryServerInterceptor(nil) }, "nil *admission.Scheduler"},
		{"StreamServerInterceptor(nil)", func() { interceptors.StreamServerInterceptor(nil) }, "nil *admission.Scheduler"},
		{"malformed route", func() { interceptors.UnaryServerInterceptor(s, route("Clone", interceptors.Route{})) }, "route pattern"},
		{"empty route", func() { interceptors.UnaryServerInterceptor(s, route("", interceptors.Route{})) }, "route pattern"},
		{"invalid StreamMode", func() { interceptors.StreamServerInterceptor(s, route(cloneMethod, interceptors.Route{Stream: -1})) }, "invalid"},
		{"invalid default StreamMode", func() {
			interceptors.StreamServerInterceptor(s, interceptors.WithDefaultRoute(interceptors.Route{Stream: 99}))
		}, "invalid"},
		{"MatchMethods(bad)", func() { interceptors.MatchMethods("/a/b/c") }, "route pattern"},
		{"Field(bad path)", func() { interceptors.Field("a..b") }, "not a valid proto field name"},
		{"Field(\"\")", func() { interceptors.Field("") }, "not a valid proto field name"},
		{"Principal(nil)", func() { interceptors.Principal(nil) }, "nil getter"},
		{"TrustedMetadata(key, nil)", func() { interceptors.TrustedMetadata("x-tenant-id", nil) }, "nil trusted-peer predicate"},
		{"WithCriticalityOffsets(not a level)", func() {
			interceptors.UnaryServerInterceptor(s, interceptors.WithCriticalityOffsets(map[criticality.Level]admission.Priority{-3: 1}))
		}, "WithCriticalityOffsets: criticality offsets: Level(-3) is not a level"},
		{"WithThrottle(negative window)", func() { interceptors.UnaryClientInterceptor(interceptors.WithThrottle(-time.Second, 0)) }, "Window must be"},
		{"WithThrottle(1 ns window)", func() { interceptors.StreamClientInterceptor(interceptors.WithThrottle(time.Nanosecond, 0)) }, "Window must be"},
		{"WithThrottle(K below 1)", func() { interceptors.UnaryClientInterceptor(interceptors.WithThrottle(0, 0.5)) }, "K must be"},
		{"WithThrottle(negative K)", func() { interceptors.UnaryClientInterceptor(interceptors.WithThrottle(0, -2)) }, "K must be"},
		{"WithThrottle(NaN K)", func() { interceptors.UnaryClientInterceptor(interceptors.WithThrottle(0, math.NaN())) }, "K must be"},
		{"WithThrottle(infinite K)", func() { interceptors.StreamClientInterceptor(interceptors.WithThrottle(0, math.Inf(1))) }, "K must be"},
		{"WithMaxPushback(negative)", func() { interceptors.UnaryClientInterceptor(interceptors.WithMaxPushback(-time.Nanosecond)) }, "MaxPushback must be"},
	} {
		if got := hostiletest.PanicOf(tc.call); !strings.Contains(got, tc.want) {
			t.Errorf("%s: panic %q, want one saying %q", tc.name, got, tc.want)
		}
	}

	// Nil options, functions and values mean the defaults.
	unary := interceptors.UnaryServerInterceptor(s, nil, interceptors.WithKeyFunc(nil), interceptors.WithStatusFunc(nil),
		interceptors.WithExempt(nil), interceptors.WithRoutes(nil), interceptors.WithMaxKeyLen(-1),
		interceptors.WithDefaultRoute(interceptors.Route{Type: "unregistered"}))
	_, err = unary(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: cloneMethod}, func(context.Context, any) (any, error) { return nil, nil })
	if status.Code(err) != codes.InvalidArgument { // no peer: no key
		t.Errorf("a call without a peer: %v, want InvalidArgument", err)
	}
	if _, err := interceptors.FirstOf()(context.Background()); !errors.Is(err, interceptors.ErrNoKey) {
		t.Errorf("FirstOf(): %v", err)
	}
	if _, err := interceptors.FirstOf(nil, nil)(context.Background()); !errors.Is(err, interceptors.ErrNoKey) {
		t.Errorf("FirstOf(nil, nil): %v", err)
	}
	if interceptors.PeerIn()(context.Background()) {
		t.Error("PeerIn() trusts a call without a peer")
	}
	if _, err := interceptors.MetadataValue("")(context.Background(), nil); status.Code(err) != codes.InvalidArgument {
		t.Errorf("MetadataValue(\"\"): %v", err)
	}
	if _, err := interceptors.Field("value")(context.Background(), nil); status.Code(err) != codes.Internal {
		t.Errorf("Field of a nil request: %v", err)
	}
	if st := interceptors.DefaultStatus(context.Background(), nil); st.Code() != codes.OK {
		t.Errorf("DefaultStatus(nil) = %v", st)
	}
	if st := interceptors.AddRetryInfo(nil, time.Hour); st != nil {
		t.Errorf("AddRetryInfo(nil) = %v", st)
	}
	for _, d := range []time.Duration{-time.Hour, 0, 1, 1<<63 - 1} {
		st := interceptors.AddRetryInfo(status.New(codes.Unavailable, "x"), d)
		if len(st.Details()) != 1 || st.Details()[0].(*errdetails.RetryInfo).GetRetryDelay().AsDuration() < time.Millisecond {
			t.Errorf("AddRetryInfo(%v) = %v", d, st.Details())
		}
	}
	if m := interceptors.StreamMode(42).String(); m != "StreamMode(42)" {
		t.Errorf("StreamMode(42) = %q", m)
	}
}

// Bad input to the criticality options and the client side: nil and zero
// values mean the defaults, extreme offsets are clamped by the scheduler,
// trust predicates of nothing trust nobody.
func TestBadInputCriticalityAndClient(t *testing.T) {
	s := newBareScheduler(t)
	if err := s.RegisterType("clone", cloneTypes["clone"]); err != nil {
		t.Fatal(err)
	}
	// call runs a unary call from addr stating level through the server
	// interceptor built with opts, and returns its status and the level
	// its handler saw.
	call := func(addr, level string, opts ...interceptors.Option) (codes.Code, string) {
		ctx := peer.NewContext(context.Background(), &peer.Peer{Addr: net.TCPAddrFromAddrPort(netip.MustParseAddrPort(addr))})
		ctx = metadata.NewIncomingContext(ctx, metadata.Pairs(criticality.MetadataKey, level))
		seen := "not run"
		_, err := interceptors.UnaryServerInterceptor(s, append([]interceptors.Option{cloneRoutes}, opts...)...)(ctx, wrapperspb.String("x"),
			&grpc.UnaryServerInfo{FullMethod: cloneMethod}, func(ctx context.Context, _ any) (any, error) {
				l, ok := criticality.FromContext(ctx)
				seen = fmt.Sprint(l, " ", ok)
				return nil, nil
			})
		return status.Code(err), seen
	}
	for _, tc := range []struct {
		name string
		opts []interceptors.Option
		want string
	}{
		{"WithCriticalityTrust(nil): nobody", []interceptors.Option{interceptors.WithCriticalityTrust(nil)}, "critical false"},
		{"PeerIn(): nobody", []interceptors.Option{interceptors.WithCriticalityTrust(interceptors.PeerIn())}, "critical false"},
		{"PeerIn(invalid prefix): nobody", []interceptors.Option{interceptors.WithCriticalityTrust(interceptors.PeerIn(netip.Prefix{}))}, "critical false"},
		{"ClientCertIn(\"\"): nobody", []interceptors.Option{interceptors.WithCriticalityTrust(interceptors.ClientCertIn(""))}, "critical false"},
		{"ClientCertIn(): nobody", []interceptors.Option{interceptors.WithCriticalityTrust(interceptors.ClientCertIn())}, "critical false"},
		{"WithCriticalityOffsets(nil): the defaults", []interceptors.Option{trustInternal, interceptors.WithCriticalityOffsets(nil)}, "sheddable true"},
		{"extreme offsets", []interceptors.Option{trustInternal, interceptors.WithCriticalityOffsets(map[criticality.Level]admission.Priority{
			criticality.Sheddable: math.MinInt, criticality.CriticalPlus: math.MaxInt})}, "sheddable true"},
		{"WithMeterProvider(nil): the global one", []interceptors.Option{trustInternal, interceptors.WithMeterProvider(nil), nil}, "sheddable true"},
	} {
		if code, seen := call(trustedAddr, "sheddable", tc.opts...); code != codes.OK || seen != tc.want {
			t.Errorf("%s: %v, handler saw %q; want OK and %q", tc.name, code, seen, tc.want)
		}
	}
	if code, seen := call(trustedAddr, "critical_plus", trustInternal, interceptors.WithCriticalityOffsets(map[criticality.Level]admission.Priority{
		criticality.CriticalPlus: math.MaxInt})); code != codes.OK || seen != "critical_plus true" {
		t.Errorf("an offset of MaxInt: %v, handler saw %q", code, seen)
	}

	// Nil options and zero values are the defaults; the client interceptors
	// are built and pass a call on.
	calls := 0
	invoker := func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error {
		calls++
		return nil
	}
	for _, opts := range [][]interceptors.ClientOption{
		nil,
		{nil},
		{interceptors.WithThrottle(0, 0), interceptors.WithMaxPushback(0), interceptors.WithMeterProvider(nil)},
		{interceptors.WithThrottle(60, 1), interceptors.WithMaxPushback(1)}, // the least values that work
	} {
		if err := interceptors.UnaryClientInterceptor(opts...)(context.Background(), "/m/M", nil, nil, nil, invoker); err != nil {
			t.Errorf("options %v: %v", opts, err)
		}
	}
	if calls != 4 {
		t.Errorf("%d calls passed on, want 4", calls)
	}
}

// The client interceptors called directly with a nil ClientConn (gRPC
// never does; a test of an interceptor chain may): the call goes on,
// counted for the target "", and the level is sent.
func TestClientNilClientConn(t *testing.T) {
	ctx := criticality.NewContext(context.Background(), criticality.Sheddable)
	var sent []string
	invoker := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, opts ...grpc.CallOption) error {
		md, _ := metadata.FromOutgoingContext(ctx)
		sent = append(sent, md.Get(criticality.MetadataKey)...)
		return status.Error(codes.Unavailable, "down")
	}
	if err := interceptors.UnaryClientInterceptor()(ctx, "/m/M", nil, nil, nil, invoker); status.Code(err) != codes.Unavailable || errors.Is(err, interceptors.ErrRefusedLocally) {
		t.Errorf("unary with a nil ClientConn: %v, want the invoker's Unavailable", err)
	}
	streamer := func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		md, _ := metadata.FromOutgoingContext(ctx)
		sent = append(sent, md.Get(criticality.MetadataKey)...)
		return nil, status.Error(codes.Unavailable, "down")
	}
	if _, err := interceptors.StreamClientInterceptor()(ctx, &grpc.StreamDesc{}, nil, "/m/S", streamer); status.Code(err) != codes.Unavailable {
		t.Errorf("stream with a nil ClientConn: %v, want the streamer's Unavailable", err)
	}
	if want := []string{"sheddable", "sheddable"}; !slices.Equal(sent, want) {
		t.Errorf("levels sent %q, want %q", sent, want)
	}
}
