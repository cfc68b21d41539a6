package interceptors

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"net"
	"net/netip"
	"net/url"
	"testing"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/realip"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
)

// The default KeyFunc is FirstOf(ClientCert(), ClientIP(64)) fused into one
// function: for every kind of caller it gives the same key, or an error with
// the same message.
func TestDefaultKeyIsFirstOfCertAndIP(t *testing.T) {
	svid := &x509.Certificate{Subject: pkix.Name{CommonName: "w"}, URIs: []*url.URL{{Scheme: "spiffe", Host: "example.org", Path: "/a"}}}
	plain := &x509.Certificate{Subject: pkix.Name{CommonName: "w", Organization: []string{"fairseat"}}}
	verified := func(c *x509.Certificate) credentials.AuthInfo {
		return credentials.TLSInfo{State: tls.ConnectionState{PeerCertificates: []*x509.Certificate{c}, VerifiedChains: [][]*x509.Certificate{{c}}}}
	}
	ptr := verified(svid).(credentials.TLSInfo)
	call := func(addr string, auth credentials.AuthInfo, kv ...string) context.Context {
		var a net.Addr = &net.UnixAddr{Name: "@", Net: "unix"}
		if addr != "" {
			a = net.TCPAddrFromAddrPort(netip.MustParseAddrPort(addr))
		}
		ctx := peer.NewContext(context.Background(), &peer.Peer{Addr: a, AuthInfo: auth})
		return metadata.NewIncomingContext(ctx, metadata.Pairs(kv...))
	}
	viaRealIP := func(ctx context.Context) context.Context {
		var out context.Context
		_, _ = realip.UnaryServerInterceptor([]netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, []string{realip.XForwardedFor})(
			ctx, nil, &grpc.UnaryServerInfo{}, func(ctx context.Context, _ any) (any, error) { out = ctx; return nil, nil })
		return out
	}
	ctxs := map[string]context.Context{
		"IPv4":                 call("203.0.113.7:5000", nil),
		"IPv4-mapped":          call("[::ffff:203.0.113.7]:5000", nil),
		"IPv6":                 call("[2001:db8:1:2:aaaa::1]:5000", nil),
		"zone":                 call("[fe80::1%eth0]:5000", nil),
		"SPIFFE":               call("203.0.113.7:5000", verified(svid)),
		"SPIFFE, *TLSInfo":     call("203.0.113.7:5000", &ptr),
		"subject":              call("203.0.113.7:5000", verified(plain)),
		"unverified":           call("203.0.113.7:5000", credentials.TLSInfo{State: tls.ConnectionState{PeerCertificates: []*x509.Certificate{svid}}}),
		"certificate, no IP":   call("", verified(plain)),
		"no IP":                call("", nil),
		"no peer":              context.Background(),
		"realip, trusted":      viaRealIP(call("10.1.1.1:443", nil, "x-forwarded-for", "198.51.100.4")),
		"realip, untrusted":    viaRealIP(call("203.0.113.7:5000", nil, "x-forwarded-for", "198.51.100.4")),
		"realip, certificate":  viaRealIP(call("10.1.1.1:443", verified(svid), "x-forwarded-for", "198.51.100.4")),
		"realip, no IP":        viaRealIP(call("", nil)),
		"forwarded, no realip": call("10.1.1.1:443", nil, "x-forwarded-for", "198.51.100.4"),
	}
	fused, chained := defaultKey(), FirstOf(ClientCert(), ClientIP(64))
	for name, ctx := range ctxs {
		for range 2 { // the second time from the IP key cache
			got, gotErr := fused(ctx)
			want, wantErr := chained(ctx)
			if got != want || (gotErr == nil) != (wantErr == nil) || (gotErr != nil && gotErr.Error() != wantErr.Error()) {
				t.Errorf("%s: default key %q, %v; FirstOf(ClientCert(), ClientIP(64)) gives %q, %v", name, got, gotErr, want, wantErr)
			}
		}
	}
}

// The default key of a returning client costs no allocation.
func TestDefaultKeyDoesNotAllocate(t *testing.T) {
	ctx := peer.NewContext(context.Background(), &peer.Peer{Addr: net.TCPAddrFromAddrPort(netip.MustParseAddrPort("203.0.113.7:5000"))})
	f := defaultKey()
	if n := testing.AllocsPerRun(100, func() { _, _ = f(ctx) }); n != 0 {
		t.Errorf("default key allocates %v times", n)
	}
}
