package interceptors_test

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/realip"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/fairseat/fairseat/admission"
	"github.com/fairseat/fairseat/interceptors"
	"github.com/fairseat/fairseat/internal/clientkey"
)

// Hostile input: what a client controls — the metadata the interceptors
// read (a trusted tenant key, a job ID key), the forwarding metadata realip
// reads, the request message — never panics, never yields an unbounded or
// unprintable key, never lets an untrusted peer choose its key, and ends
// in the documented status. (Over the wire grpc-go refuses unprintable
// metadata values; in-process anything may arrive, so these tests call the
// interceptor directly.)

// hostileCall runs one unary call through realip (trusting 10.0.0.0/8 as
// peers and proxies) and the fairseat interceptor, from peer with incoming
// metadata md, and returns the status and the fairness keys the scheduler
// had while the handler ran.
func hostileCall(t *testing.T, s *admission.Scheduler, opts []interceptors.Option, from string, md metadata.MD, req any) (codes.Code, []string) {
	t.Helper()
	ctx := peer.NewContext(t.Context(), &peer.Peer{Addr: net.TCPAddrFromAddrPort(netip.MustParseAddrPort(from))})
	ctx = metadata.NewIncomingContext(ctx, md)
	proxies := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	real := realip.UnaryServerInterceptorOpts(realip.WithTrustedPeers(proxies), realip.WithTrustedProxies(proxies),
		realip.WithHeaders([]string{realip.XForwardedFor, realip.XRealIp}))
	ours := interceptors.UnaryServerInterceptor(s, opts...)
	var keys []string
	_, err := real(ctx, req, &grpc.UnaryServerInfo{FullMethod: cloneMethod}, func(ctx context.Context, req any) (any, error) {
		return ours(ctx, req, &grpc.UnaryServerInfo{FullMethod: cloneMethod}, func(context.Context, any) (any, error) {
			for _, k := range s.Snapshot().Keys {
				keys = append(keys, k.Key)
			}
			return nil, nil
		})
	})
	for _, k := range keys {
		if len(k) > clientkey.DefaultMaxLen || clientkey.Bound(k, 1<<30) != k {
			t.Errorf("the scheduler saw key %q (%d bytes)", k, len(k))
		}
	}
	return status.Code(err), keys
}

func hostileScheduler(t *testing.T) *admission.Scheduler {
	t.Helper()
	s, err := admission.New(admission.Config{Capacity: 4})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RegisterType("clone", admission.JobTypeConfig{Priority: 8, ConflictGroup: "git"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

var hostileTrusted = interceptors.PeerIn(netip.MustParsePrefix("10.0.0.0/8"))

func tenantOpts(jobID interceptors.JobIDFunc) []interceptors.Option {
	return []interceptors.Option{
		interceptors.WithRoutes(interceptors.Routes{cloneMethod: {Type: "clone", JobID: jobID}}),
		interceptors.WithKeyFunc(interceptors.FirstOf(interceptors.TrustedMetadata("x-tenant-id", hostileTrusted), interceptors.ClientIP(64))),
	}
}

// An untrusted peer's forwarding and tenant metadata change nothing: its
// key is its own address, alone, together or 10,000 entries over.
func TestHostileSpoofedMetadataFromUntrustedPeer(t *testing.T) {
	s := hostileScheduler(t)
	opts := tenantOpts(nil)
	many := make([]string, 10_000)
	for i := range many {
		many[i] = fmt.Sprintf("198.51.%d.%d", i>>8, i&0xff)
	}
	for _, from := range []string{"203.0.113.7:5000", "[2001:db8:7:7::1]:5000"} {
		_, want := hostileCall(t, s, opts, from, nil, nil)
		for name, md := range map[string]metadata.MD{
			"x-forwarded-for":        {"x-forwarded-for": {"198.51.100.1"}},
			"forwarded":              {"forwarded": {"for=198.51.100.1"}},
			"x-real-ip":              {"x-real-ip": {"198.51.100.1"}},
			"x-tenant-id":            {"x-tenant-id": {"acme"}},
			"all":                    {"x-forwarded-for": {"10.0.0.1"}, "x-real-ip": {"10.0.0.1"}, "forwarded": {"for=10.0.0.1"}, "x-tenant-id": {"acme"}},
			"10,000 x-forwarded-for": {"x-forwarded-for": many},
		} {
			if code, got := hostileCall(t, s, opts, from, md, nil); code != codes.OK || len(got) != 1 || got[0] != want[0] {
				t.Errorf("from %s with spoofed %s: %v, keys %q; want %q", from, name, code, got, want)
			}
		}
	}
}

// From a trusted proxy realip takes the right-most hop outside the trusted
// prefixes, whatever the client wrote to its left; IPv6 clients in one /64
// share a key, as peers and as forwarded hops.
func TestHostileTrustedChainAndIPv6(t *testing.T) {
	s := hostileScheduler(t)
	opts := tenantOpts(nil)
	for _, tc := range []struct {
		from string
		md   metadata.MD
		want string
	}{
		{"10.0.0.2:1", metadata.MD{"x-forwarded-for": {"6.6.6.6, 198.51.100.1, 10.0.0.9"}}, "ip:198.51.100.1"},
		{"10.0.0.2:1", metadata.MD{"x-forwarded-for": {"6.6.6.6, 2001:db8:1:2:aaaa::9"}}, "ip:2001:db8:1:2::/64"},
		{"[2001:db8:1:2::1]:1", nil, "ip:2001:db8:1:2::/64"},
		{"[2001:db8:1:2:ffff:ffff:ffff:ffff]:1", nil, "ip:2001:db8:1:2::/64"},
		{"[::ffff:203.0.113.7]:1", nil, "ip:203.0.113.7"},
		{"[2001:db8:1:3::1]:1", nil, "ip:2001:db8:1:3::/64"},
	} {
		if code, got := hostileCall(t, s, opts, tc.from, tc.md, nil); code != codes.OK || len(got) != 1 || got[0] != tc.want {
			t.Errorf("from %s with %v: %v, keys %q; want %q", tc.from, tc.md, code, got, tc.want)
		}
	}
}

// Huge, malformed, control-character and invalid-UTF-8 values, and 10,000
// entries, in every metadata key the interceptors read and in the request
// field a job ID comes from: a bounded key and the documented status — the
// call runs (a huge job ID is the scheduler's to fold), except that an
// empty or repeated job ID is InvalidArgument.
func TestHostileMetadataValues(t *testing.T) {
	s := hostileScheduler(t)
	values := map[string]string{
		"huge":                  strings.Repeat("9", 1<<20),
		"malformed":             "[::1;,=",
		"control":               "a\x00b\x01\x7f\u0085\r\n",
		"invalid UTF-8":         "\xff\xfe\xc3\x28",
		"empty":                 "",
		"past MaxIdentifierLen": strings.Repeat("r", admission.MaxIdentifierLen+1),
	}
	many := make([]string, 10_000)
	for i := range many {
		many[i] = fmt.Sprint(i)
	}
	byMetadata, byField := tenantOpts(interceptors.MetadataValue("x-repo")), tenantOpts(interceptors.Field("value"))
	for name, v := range values {
		for _, from := range []string{"10.0.0.2:1", "203.0.113.7:1"} {
			md := metadata.MD{"x-repo": {"linux"}, "x-tenant-id": {v}}
			if code, keys := hostileCall(t, s, byMetadata, from, md, nil); code != codes.OK || len(keys) != 1 {
				t.Errorf("%s x-tenant-id from %s: %v, keys %q", name, from, code, keys)
			}
			want := codes.OK
			if v == "" {
				want = codes.InvalidArgument
			}
			if code, _ := hostileCall(t, s, byMetadata, from, metadata.MD{"x-repo": {v}}, nil); code != want {
				t.Errorf("%s x-repo from %s: %v, want %v", name, from, code, want)
			}
			if code, _ := hostileCall(t, s, byField, from, nil, wrapperspb.String(v)); code != want {
				t.Errorf("%s request field from %s: %v, want %v", name, from, code, want)
			}
		}
	}
	if code, keys := hostileCall(t, s, byMetadata, "10.0.0.2:1", metadata.MD{"x-repo": {"linux"}, "x-tenant-id": many}, nil); code != codes.OK || len(keys) != 1 || keys[0] != "ip:10.0.0.2" {
		t.Errorf("10,000 x-tenant-id: %v, keys %q; want the peer's (a repeated tenant is ambiguous)", code, keys)
	}
	if code, _ := hostileCall(t, s, byMetadata, "10.0.0.2:1", metadata.MD{"x-repo": many}, nil); code != codes.InvalidArgument {
		t.Errorf("10,000 x-repo: %v, want InvalidArgument", code)
	}
}
