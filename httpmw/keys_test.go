package httpmw

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"testing"
	"unicode"
)

var trusted = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("2001:db8:ffff::/48")}

func request(remote string, headers ...string) *http.Request {
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = remote
	for i := 0; i+1 < len(headers); i += 2 {
		r.Header.Add(headers[i], headers[i+1])
	}
	return r
}

// TestForwardedClient: forwarding headers are believed only from trusted
// peers, walked right to left through trusted hops; anything malformed
// falls back to the peer.
func TestForwardedClient(t *testing.T) {
	for _, tc := range []struct {
		name    string
		remote  string
		headers []string
		want    string
	}{
		{"no header", "203.0.113.7:1234", nil, "203.0.113.7"},
		{"untrusted peer spoofs XFF", "203.0.113.7:1234", []string{"X-Forwarded-For", "198.51.100.1"}, "203.0.113.7"},
		{"trusted proxy", "10.0.0.2:80", []string{"X-Forwarded-For", "198.51.100.1"}, "198.51.100.1"},
		{"client spoofs left of proxy", "10.0.0.2:80", []string{"X-Forwarded-For", "1.1.1.1, 198.51.100.1"}, "198.51.100.1"},
		{"two trusted proxies", "10.0.0.2:80", []string{"X-Forwarded-For", "198.51.100.1, 10.0.0.9"}, "198.51.100.1"},
		{"several XFF headers", "10.0.0.2:80", []string{"X-Forwarded-For", "198.51.100.1", "X-Forwarded-For", "10.0.0.9"}, "198.51.100.1"},
		{"all trusted: leftmost", "10.0.0.2:80", []string{"X-Forwarded-For", "10.0.0.7, 10.0.0.9"}, "10.0.0.7"},
		{"malformed hop", "10.0.0.2:80", []string{"X-Forwarded-For", "198.51.100.1, not-an-ip"}, "10.0.0.2"},
		{"empty hop", "10.0.0.2:80", []string{"X-Forwarded-For", "198.51.100.1,,"}, "10.0.0.2"},
		{"XFF with port", "10.0.0.2:80", []string{"X-Forwarded-For", "198.51.100.1:5555"}, "198.51.100.1"},
		{"Forwarded preferred", "10.0.0.2:80", []string{"Forwarded", "for=192.0.2.60;proto=http", "X-Forwarded-For", "198.51.100.1"}, "192.0.2.60"},
		{"Forwarded v6 quoted", "10.0.0.2:80", []string{"Forwarded", `for="[2001:db8:cafe::17]:4711"`}, "2001:db8:cafe::17"},
		{"Forwarded chain", "10.0.0.2:80", []string{"Forwarded", "for=192.0.2.43, for=10.0.0.5;by=10.0.0.2"}, "192.0.2.43"},
		{"Forwarded unknown", "10.0.0.2:80", []string{"Forwarded", "for=unknown"}, "10.0.0.2"},
		{"Forwarded without for", "10.0.0.2:80", []string{"Forwarded", "proto=https"}, "10.0.0.2"},
		{"Forwarded unterminated quote", "10.0.0.2:80", []string{"Forwarded", `for="192.0.2.1`}, "10.0.0.2"},
		{"Forwarded garbage", "10.0.0.2:80", []string{"Forwarded", "for"}, "10.0.0.2"},
		{"Forwarded quoted, spaces before the next pair", "10.0.0.2:80", []string{"Forwarded", `for="192.0.2.60" ; proto=http`}, "192.0.2.60"},
		{"Forwarded quoted, garbage after", "10.0.0.2:80", []string{"Forwarded", `for="192.0.2.60"x;proto=http`}, "10.0.0.2"},
		{"mapped trusted peer", "[::ffff:10.0.0.2]:80", []string{"X-Forwarded-For", "198.51.100.1"}, "198.51.100.1"},
		{"v6 trusted proxy", "[2001:db8:ffff::1]:80", []string{"X-Forwarded-For", "2001:db8:1::5"}, "2001:db8:1::5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := request(tc.remote, tc.headers...)
			peer := netip.MustParseAddrPort(tc.remote).Addr()
			if got := ForwardedClient(peer, r.Header, trusted); got.Unmap().String() != tc.want {
				t.Errorf("ForwardedClient = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestForwardedTooManyHops(t *testing.T) {
	hops := strings.Repeat("10.0.0.1, ", 100) + "10.0.0.1"
	r := request("10.0.0.2:80", "X-Forwarded-For", "198.51.100.1, "+hops)
	if got := ForwardedClient(netip.MustParseAddr("10.0.0.2"), r.Header, trusted); got.String() != "10.0.0.2" {
		t.Errorf("ForwardedClient over 64 trusted hops = %v, want the peer", got)
	}
}

// FuzzForwardedClient: whatever the headers, a peer outside the trusted
// prefixes is always its own client, and a trusted peer's client is the
// peer or an address named in the headers; nothing panics.
func FuzzForwardedClient(f *testing.F) {
	f.Add("10.0.0.2", "198.51.100.1, 10.0.0.9", "")
	f.Add("203.0.113.9", "1.2.3.4", `for="[2001:db8::1]:80";proto=https, for=10.0.0.3`)
	f.Add("10.0.0.2", "", `for=192.0.2.43, for="\"x`)
	f.Add("10.0.0.2", "\xff\xfe,", "for=;for=,")
	f.Fuzz(func(t *testing.T, peerStr, xff, fwd string) {
		peer, err := netip.ParseAddr(peerStr)
		if err != nil {
			return
		}
		h := http.Header{}
		if xff != "" {
			h.Set("X-Forwarded-For", xff)
		}
		if fwd != "" {
			h.Set("Forwarded", fwd)
		}
		got := ForwardedClient(peer, h, trusted)
		if !(trustedContains(peer)) {
			if got != peer {
				t.Fatalf("untrusted peer %v: client %v from spoofed headers", peer, got)
			}
			return
		}
		if got == peer {
			return
		}
		if !strings.Contains(xff+fwd, strings.Trim(got.String(), "[]")) && !strings.Contains(strings.ToLower(xff+fwd), strings.ToLower(got.String())) &&
			!namesAddr(xff, got) && !namesAddr(fwd, got) {
			t.Fatalf("client %v appears in neither header (xff %q, fwd %q)", got, xff, fwd)
		}
	})
}

// namesAddr reports whether one of the fields of s, a header's value, is
// a, written in any of its forms: an IPv6 address has several ("::01" is
// ::1), and the one ForwardedClient returns prints in the shortest. The
// fields are those of either header: split at the separators of Forwarded
// and at white space (which ForwardedClient trims as strings.TrimSpace
// does), or an X-Forwarded-For hop whole, which may hold a quote or a
// bracket (an IPv6 zone may be any text: "::0%\"" is :: in zone `"`,
// "::0%[" is :: in zone "["). A field is tried as it is, as an address
// and port, and with the brackets of "[2001:db8::1]" taken off.
func namesAddr(s string, a netip.Addr) bool {
	sep := func(r rune) bool { return unicode.IsSpace(r) || strings.ContainsRune(",;=\"", r) }
	for _, f := range slices.Concat(strings.FieldsFunc(s, sep), strings.Split(s, ",")) {
		f = strings.TrimSpace(f)
		if ap, err := netip.ParseAddrPort(f); err == nil && ap.Addr() == a {
			return true
		}
		for _, g := range []string{f, strings.Trim(f, "[]")} {
			if b, err := netip.ParseAddr(g); err == nil && b == a {
				return true
			}
		}
	}
	return false
}

func trustedContains(a netip.Addr) bool {
	a = a.Unmap().WithZone("")
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

func TestClientIP(t *testing.T) {
	k := ClientIP(trusted, 0)
	for _, tc := range []struct {
		r    *http.Request
		want string
	}{
		{request("203.0.113.7:1"), "ip:203.0.113.7"},
		{request("[2001:db8:1:2:3::4]:1"), "ip:2001:db8:1:2::/64"},
		{request("10.0.0.2:1", "X-Forwarded-For", "2001:db8:5:6:7::8"), "ip:2001:db8:5:6::/64"},
		{request("203.0.113.7:1", "X-Forwarded-For", "198.51.100.1"), "ip:203.0.113.7"},
	} {
		got, err := k(tc.r)
		if err != nil || got != tc.want {
			t.Errorf("ClientIP(%s %v) = %q, %v; want %q", tc.r.RemoteAddr, tc.r.Header, got, err, tc.want)
		}
	}
	if _, err := k(request("@")); err == nil || !strings.Contains(err.Error(), `"@"`) {
		t.Errorf("ClientIP(unix socket) error = %v", err)
	}
}

func TestClientCert(t *testing.T) {
	spiffe, _ := url.Parse("spiffe://example.org/ns/prod/sa/builder")
	other, _ := url.Parse("https://example.org/")
	withCert := func(c *x509.Certificate) *http.Request {
		r := request("203.0.113.7:1")
		r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{c}, VerifiedChains: [][]*x509.Certificate{{c}}}
		return r
	}
	k := ClientCert()
	if got, _ := k(withCert(&x509.Certificate{URIs: []*url.URL{spiffe}, Subject: pkix.Name{CommonName: "x"}})); got != "spiffe:spiffe://example.org/ns/prod/sa/builder" {
		t.Errorf("SPIFFE cert key = %q", got)
	}
	if got, _ := k(withCert(&x509.Certificate{Subject: pkix.Name{CommonName: "ci-runner", Organization: []string{"acme"}}})); got != "subject:CN=ci-runner,O=acme" {
		t.Errorf("subject key = %q", got)
	}
	if got, err := k(request("203.0.113.7:1")); got != "" || err != nil {
		t.Errorf("no TLS: %q, %v", got, err)
	}
	// Two URI SANs: not an X.509-SVID, so the subject is the identity.
	if got, _ := k(withCert(&x509.Certificate{URIs: []*url.URL{spiffe, other}, Subject: pkix.Name{CommonName: "x"}})); got != "subject:CN=x" {
		t.Errorf("two URI SANs: %q", got)
	}
	// Presented but not verified (tls.RequestClientCert): no identity.
	unverified := request("203.0.113.7:1")
	unverified.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{{URIs: []*url.URL{spiffe}}}}
	if got, _ := k(unverified); got != "" {
		t.Errorf("unverified certificate gave key %q", got)
	}
}

func TestTrustedHeaderAndFirstOf(t *testing.T) {
	tenant := TrustedHeader("X-Tenant-ID", trusted)
	if got, _ := tenant(request("10.0.0.2:1", "X-Tenant-ID", "acme")); got != "header:x-tenant-id:acme" {
		t.Errorf("trusted tenant = %q", got)
	}
	if got, _ := tenant(request("203.0.113.7:1", "X-Tenant-ID", "acme")); got != "" {
		t.Errorf("untrusted peer chose its tenant: %q", got)
	}
	if got, _ := tenant(request("10.0.0.2:1", "X-Tenant-ID", "acme", "X-Tenant-ID", "evil")); got != "" {
		t.Errorf("repeated tenant header gave %q", got)
	}
	type ctxKey struct{}
	principal := Principal(func(ctx context.Context) (string, bool) {
		v, ok := ctx.Value(ctxKey{}).(string)
		return v, ok
	})
	chain := FirstOf(principal, tenant, ClientIP(nil, 0))
	r := request("203.0.113.7:1", "X-Tenant-ID", "acme")
	if got, _ := chain(r); got != "ip:203.0.113.7" {
		t.Errorf("chain without principal = %q", got)
	}
	r = r.WithContext(context.WithValue(r.Context(), ctxKey{}, "alice"))
	if got, _ := chain(r); got != "principal:alice" {
		t.Errorf("chain with principal = %q", got)
	}
	_, err := FirstOf(ClientCert(), ClientIP(nil, 0))(request("@"))
	if !errors.Is(err, ErrNoKey) || !strings.Contains(err.Error(), "RemoteAddr") {
		t.Errorf("no key: %v", err)
	}
}
