package httpmw

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"

	"github.com/fairseat/fairseat/internal/clientkey"
)

// A KeyFunc derives a request's fairness key. A source that does not apply
// to the request (no client certificate, an untrusted peer) returns "" and
// no error, so that [FirstOf] tries the next one.
type KeyFunc func(*http.Request) (string, error)

// ErrNoKey is returned (wrapped) by FirstOf when no source produced a key.
var ErrNoKey = errors.New("httpmw: no fairness key for the request")

// FirstOf returns the key of the first source that produces a non-empty key
// without error; nil sources are skipped. If none does, it returns an error
// wrapping ErrNoKey and the sources' errors.
func FirstOf(sources ...KeyFunc) KeyFunc {
	sources = append([]KeyFunc(nil), sources...)
	return func(r *http.Request) (string, error) {
		return clientkey.First(r, ErrNoKey, sources)
	}
}

// ClientCert keys a request by its verified TLS client certificate: the
// leaf's SPIFFE ID ("spiffe:spiffe://trust.domain/path") when it carries
// exactly one URI SAN with the spiffe scheme and a trust domain, as an
// X.509-SVID does, else its non-empty subject ("subject:CN=..."). Only chains
// the server verified count
// (r.TLS.VerifiedChains): under tls.RequestClientCert or
// RequireAnyClientCert a client could present any certificate, and so claim
// any identity. It returns "" when there is no verified client certificate.
func ClientCert() KeyFunc {
	return func(r *http.Request) (string, error) {
		if r.TLS == nil {
			return "", nil
		}
		return clientkey.Cert(r.TLS.VerifiedChains), nil
	}
}

// Principal keys a request by an identity the application's authentication
// put in the request context; get returns it and whether there is one. It
// panics if get is nil.
func Principal(get func(context.Context) (string, bool)) KeyFunc {
	if get == nil {
		panic("httpmw: Principal: nil getter")
	}
	return func(r *http.Request) (string, error) {
		if id, ok := get(r.Context()); ok && id != "" {
			return "principal:" + id, nil
		}
		return "", nil
	}
}

// TrustedHeader keys a request by the value of header name (a tenant ID set
// by a gateway) — only when the immediate peer is inside trusted and the
// header appears once. From any other peer the header is ignored and ""
// returned, so clients cannot choose their own key.
func TrustedHeader(name string, trusted []netip.Prefix) KeyFunc {
	ps := clientkey.Prefixes(trusted)
	ns := "header:" + strings.ToLower(name) + ":"
	return func(r *http.Request) (string, error) {
		peer, ok := clientkey.ParseAddr(r.RemoteAddr)
		if !ok || !ps.Contains(peer) {
			return "", nil
		}
		// A repeated header is ambiguous (which hop set which?): no key.
		if vs := r.Header.Values(name); len(vs) == 1 && vs[0] != "" {
			return ns + vs[0], nil
		}
		return "", nil
	}
}

// ClientIP keys a request by its client's IP address ("ip:203.0.113.7",
// "ip:2001:db8:1:2::/64"). The address is the immediate peer's
// (r.RemoteAddr) unless that peer is inside trustedProxies: then the
// Forwarded or X-Forwarded-For header is walked from the right, through
// trusted hops, to the first untrusted one, which is the client (see
// [ForwardedClient]). IPv6 addresses are grouped by v6Prefix bits (values
// outside [1, 128] mean /64).
func ClientIP(trustedProxies []netip.Prefix, v6Prefix int) KeyFunc {
	ps := clientkey.Prefixes(trustedProxies)
	return func(r *http.Request) (string, error) {
		peer, ok := clientkey.ParseAddr(r.RemoteAddr)
		if !ok {
			return "", fmt.Errorf("httpmw: client IP: RemoteAddr %q is not an IP address", bounded(r.RemoteAddr))
		}
		return clientkey.IP(ForwardedClient(peer, r.Header, ps), v6Prefix), nil
	}
}

// bounded shortens hostile input quoted in error messages.
func bounded(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
