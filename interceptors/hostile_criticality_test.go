package interceptors_test

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"testing/synctest"

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
	"github.com/fairseat/fairseat/internal/oteltest"
)

// printableASCII reports whether grpc-go sends vs as metadata values: it
// refuses any byte outside 0x20-0x7e in a key not ending in -bin.
func printableASCII(vs []string) bool {
	for _, v := range vs {
		for i := 0; i < len(v); i++ {
			if v[i] < 0x20 || v[i] > 0x7e {
				return false
			}
		}
	}
	return true
}

// wantCriticality returns the level a caller from a trusted or untrusted
// peer gets for a hostile value of level (the table's), and the counts of
// fairseat.criticality.ignored it adds.
func wantCriticality(level string, trusted bool) (want string, untrusted, invalid float64) {
	switch {
	case !trusted:
		return "-", 1, 0
	case level == "-":
		return "-", 0, 1
	}
	return level, 0, 0
}

// Every hostile value (hostiletest.Criticalities) the gRPC client sends (printable ASCII), from a
// trusted and an untrusted peer, over a real connection: the call runs
// (never an error to the caller); an untrusted peer never gets a level
// and is counted as untrusted; a trusted one gets the level of the table,
// queued at that level's offset, or none, counted as invalid.
func TestHostileCriticalityMetadata(t *testing.T) {
	offsets := map[string]admission.Priority{"-": 0, "sheddable": -2, "critical_plus": 1}
	for _, tc := range hostiletest.Criticalities {
		if !printableASCII(tc.Values) {
			continue // TestHostileCriticalityInProcess tries it
		}
		values := tc.Values
		if len(values[0]) > 1<<16 {
			// Huge still: a 1 MiB value adds seconds of HPACK under the
			// race detector, and TestHostileCriticalityInProcess tries it.
			values = []string{values[0][:1<<16]}
		}
		for _, addr := range []string{trustedAddr, untrustedAddr} {
			synctest.Test(t, func(t *testing.T) {
				rec := oteltest.New()
				got := critScenario(t, []critCall{{"x", addr, values}}, trustInternal, interceptors.WithMeterProvider(rec.MeterProvider))
				want, untrusted, invalid := wantCriticality(tc.Level, addr == trustedAddr)
				if got.seen["x"] != want || got.prio["x"] != 8+offsets[want] {
					t.Errorf("%s from %s: handler level %q, queued at %d; want %q at %d (%v)", tc.Name, addr, got.seen["x"], got.prio["x"], want, 8+offsets[want], got)
				}
				wantIgnored(t, rec, untrusted, invalid)
			})
		}
	}
}

// Every hostile value, and the key in other cases, handed to the
// interceptor in process (grpc-go refuses unprintable values on the wire,
// but a transport of one's own or an earlier interceptor may pass
// anything): the same outcomes, the call's status OK.
func TestHostileCriticalityInProcess(t *testing.T) {
	s := newBareScheduler(t)
	if err := s.RegisterType("clone", cloneTypes["clone"]); err != nil {
		t.Fatal(err)
	}
	type call struct {
		name  string
		md    metadata.MD
		level string
	}
	var calls []call
	for _, tc := range hostiletest.Criticalities {
		calls = append(calls, call{tc.Name, metadata.MD{criticality.MetadataKey: tc.Values}, tc.Level})
	}
	calls = append(calls,
		call{"upper-case key", metadata.MD{"FAIRSEAT-CRITICALITY": {"sheddable"}}, "sheddable"},
		call{"a -bin key", metadata.MD{criticality.MetadataKey + "-bin": {"sheddable"}}, ""},
	)
	for _, c := range calls {
		for _, addr := range []string{trustedAddr, untrustedAddr} {
			rec := oteltest.New()
			unary := interceptors.UnaryServerInterceptor(s, cloneRoutes, trustInternal, interceptors.WithMeterProvider(rec.MeterProvider))
			ctx := peer.NewContext(t.Context(), &peer.Peer{Addr: net.TCPAddrFromAddrPort(netip.MustParseAddrPort(addr))})
			ctx = metadata.NewIncomingContext(ctx, c.md)
			seen := "not run"
			_, err := unary(ctx, wrapperspb.String("x"), &grpc.UnaryServerInfo{FullMethod: cloneMethod}, func(ctx context.Context, _ any) (any, error) {
				seen = "-"
				if l, ok := criticality.FromContext(ctx); ok {
					seen = l.String()
				}
				return nil, nil
			})
			want, untrusted, invalid := wantCriticality(c.level, addr == trustedAddr)
			if c.level == "" { // not the criticality key: nothing stated, nothing counted
				want, untrusted, invalid = "-", 0, 0
			}
			if status.Code(err) != codes.OK || seen != want {
				t.Errorf("%s from %s: %v, handler level %q; want OK and %q", c.name, addr, err, seen, want)
			}
			wantIgnored(t, rec, untrusted, invalid)
		}
	}
}
