package interceptors_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/realip"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/fairseat/fairseat/interceptors"
)

// peerCtx is the context of a call from addr ("" = a peer with no IP
// address, as over a Unix socket) with incoming metadata kv.
func peerCtx(t testing.TB, addr string, auth credentials.AuthInfo, kv ...string) context.Context {
	var a net.Addr = &net.UnixAddr{Name: "@", Net: "unix"}
	if addr != "" {
		a = net.TCPAddrFromAddrPort(netip.MustParseAddrPort(addr))
	}
	ctx := peer.NewContext(context.Background(), &peer.Peer{Addr: a, AuthInfo: auth})
	return metadata.NewIncomingContext(ctx, metadata.Pairs(kv...))
}

// throughRealIP returns ctx as the next interceptor sees it after realip,
// configured to believe X-Forwarded-For from trusted.
func throughRealIP(t testing.TB, ctx context.Context, trusted ...netip.Prefix) context.Context {
	var out context.Context
	_, _ = realip.UnaryServerInterceptor(trusted, []string{realip.XForwardedFor})(ctx, nil, &grpc.UnaryServerInfo{},
		func(ctx context.Context, _ any) (any, error) { out = ctx; return nil, nil })
	return out
}

// wantKey checks what f derives from ctx: want, or "" for a source that
// does not apply, or "error".
func wantKey(t *testing.T, f interceptors.KeyFunc, ctx context.Context, want string) {
	t.Helper()
	got, err := f(ctx)
	if want == "error" {
		if err == nil || got != "" {
			t.Errorf("key %q, %v; want an error", got, err)
		}
		return
	}
	if err != nil || got != want {
		t.Errorf("key %q, %v; want %q", got, err, want)
	}
}

func TestClientIP(t *testing.T) {
	proxies := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	for _, tc := range []struct {
		name   string
		ctx    context.Context
		prefix int
		want   string
	}{
		{"IPv4", peerCtx(t, "203.0.113.7:5000", nil), 0, "ip:203.0.113.7"},
		{"IPv4-mapped is unmapped", peerCtx(t, "[::ffff:203.0.113.7]:5000", nil), 0, "ip:203.0.113.7"},
		{"IPv6 grouped by /64", peerCtx(t, "[2001:db8:1:2:aaaa:bbbb:cccc:dddd]:5000", nil), 0, "ip:2001:db8:1:2::/64"},
		{"IPv6 grouped by /48", peerCtx(t, "[2001:db8:1:2:aaaa:bbbb:cccc:dddd]:5000", nil), 48, "ip:2001:db8:1::/48"},
		{"zone dropped", peerCtx(t, "[fe80::1%eth0]:5000", nil), 0, "ip:fe80::/64"},
		{"prefix out of range means /64", peerCtx(t, "[2001:db8:1:2:aaaa:bbbb:cccc:dddd]:5000", nil), 200, "ip:2001:db8:1:2::/64"},
		{"no IP", peerCtx(t, "", nil), 0, "error"},
		{"no peer", context.Background(), 0, "error"},
		{"forwarded for, by a trusted proxy",
			throughRealIP(t, peerCtx(t, "10.1.1.1:443", nil, "x-forwarded-for", "192.0.2.9, 198.51.100.4"), proxies...), 0, "ip:198.51.100.4"},
		{"forwarded for, spoofed by an untrusted peer",
			throughRealIP(t, peerCtx(t, "203.0.113.7:5000", nil, "x-forwarded-for", "198.51.100.4"), proxies...), 0, "ip:203.0.113.7"},
		{"forwarded for, without realip", peerCtx(t, "10.1.1.1:443", nil, "x-forwarded-for", "198.51.100.4"), 0, "ip:10.1.1.1"},
		{"realip without an IP falls back to the peer", throughRealIP(t, peerCtx(t, "", nil)), 0, "error"},
	} {
		t.Run(tc.name, func(t *testing.T) { wantKey(t, interceptors.ClientIP(tc.prefix), tc.ctx, tc.want) })
	}
}

func TestTrustedMetadata(t *testing.T) {
	f := interceptors.TrustedMetadata("X-Tenant-ID", interceptors.PeerIn(
		netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("2001:db8::/32")))
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want string
	}{
		{"trusted", peerCtx(t, "10.1.1.1:443", nil, "x-tenant-id", "acme"), "header:x-tenant-id:acme"},
		{"trusted IPv4-mapped", peerCtx(t, "[::ffff:10.1.1.1]:443", nil, "x-tenant-id", "acme"), "header:x-tenant-id:acme"},
		{"trusted IPv6", peerCtx(t, "[2001:db8::1]:443", nil, "x-tenant-id", "acme"), "header:x-tenant-id:acme"},
		{"untrusted", peerCtx(t, "203.0.113.7:5000", nil, "x-tenant-id", "acme"), ""},
		{"untrusted even if realip says trusted",
			throughRealIP(t, peerCtx(t, "203.0.113.7:5000", nil, "x-tenant-id", "acme", "x-forwarded-for", "10.1.1.1"),
				netip.MustParsePrefix("0.0.0.0/0")), ""},
		{"no IP", peerCtx(t, "", nil, "x-tenant-id", "acme"), ""},
		{"missing", peerCtx(t, "10.1.1.1:443", nil), ""},
		{"empty", peerCtx(t, "10.1.1.1:443", nil, "x-tenant-id", ""), ""},
		{"ambiguous", peerCtx(t, "10.1.1.1:443", nil, "x-tenant-id", "acme", "x-tenant-id", "evil"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) { wantKey(t, f, tc.ctx, tc.want) })
	}
	if interceptors.PeerIn()(peerCtx(t, "10.1.1.1:443", nil)) {
		t.Error("PeerIn() trusts a peer")
	}
}

func TestClientCert(t *testing.T) {
	ca := newTestCA(t)
	leaf := func(uris ...string) *x509.Certificate {
		c := ca.issue(t, pkix.Name{CommonName: "w", Organization: []string{"fairseat"}}, uris, nil, x509.ExtKeyUsageClientAuth)
		x, err := x509.ParseCertificate(c.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	verified := func(c *x509.Certificate) credentials.TLSInfo {
		return credentials.TLSInfo{State: tls.ConnectionState{PeerCertificates: []*x509.Certificate{c}, VerifiedChains: [][]*x509.Certificate{{c, ca.cert}}}}
	}
	spiffe := leaf("spiffe://example.org/ns/a/sa/b")
	ptr := verified(spiffe)
	for _, tc := range []struct {
		name string
		auth credentials.AuthInfo
		want string
	}{
		{"SPIFFE ID", verified(spiffe), "spiffe:spiffe://example.org/ns/a/sa/b"},
		{"SPIFFE ID, *TLSInfo", &ptr, "spiffe:spiffe://example.org/ns/a/sa/b"},
		{"no URI: subject", verified(leaf()), "subject:CN=w,O=fairseat"},
		{"two URIs is no SVID: subject", verified(leaf("spiffe://example.org/a", "spiffe://example.org/b")), "subject:CN=w,O=fairseat"},
		{"not spiffe: subject", verified(leaf("https://example.org/a")), "subject:CN=w,O=fairseat"},
		{"unverified certificate", credentials.TLSInfo{State: tls.ConnectionState{PeerCertificates: []*x509.Certificate{spiffe}}}, ""},
		{"no TLS", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantKey(t, interceptors.ClientCert(), peerCtx(t, "192.0.2.1:1", tc.auth), tc.want)
		})
	}
}

func TestFirstOfAndPrincipal(t *testing.T) {
	type userKey struct{}
	principal := interceptors.Principal(func(ctx context.Context) (string, bool) {
		u, ok := ctx.Value(userKey{}).(string)
		return u, ok
	})
	f := interceptors.FirstOf(nil, principal, interceptors.ClientIP(0))
	ctx := peerCtx(t, "203.0.113.7:5000", nil)
	wantKey(t, f, context.WithValue(ctx, userKey{}, "alice"), "principal:alice")
	wantKey(t, f, context.WithValue(ctx, userKey{}, ""), "ip:203.0.113.7")
	wantKey(t, f, ctx, "ip:203.0.113.7")
	if _, err := f(peerCtx(t, "", nil)); !errors.Is(err, interceptors.ErrNoKey) || !strings.Contains(err.Error(), "no IP address") {
		t.Errorf("FirstOf with no key: %v, want ErrNoKey and the sources' errors", err)
	}
	if _, err := interceptors.FirstOf()(ctx); !errors.Is(err, interceptors.ErrNoKey) {
		t.Errorf("FirstOf(): %v, want ErrNoKey", err)
	}
	wantKey(t, principal, ctx, "") // does not apply
}
