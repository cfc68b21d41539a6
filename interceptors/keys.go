package interceptors

import (
	"context"
	"crypto/x509"
	"errors"
	"net"
	"net/netip"
	"strings"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/realip"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/fairseat/fairseat/internal/clientkey"
)

// A KeyFunc returns the fairness key of a call: who the caller is, for the
// scheduler's fair sharing. A source that does not apply to the call (no
// client certificate, an untrusted peer, no principal) returns "" and no
// error, so that FirstOf tries the next one; an error means the call
// carries something the source cannot read. The interceptors bound the key
// they get (see WithMaxKeyLen) and reject a call whose KeyFunc returns an
// error or "" (with the error's status if it is a gRPC status error, else
// codes.InvalidArgument): the empty key is the key of the scheduler's
// background jobs, never a caller's.
//
// The keys are those of the HTTP middleware (package httpmw), so that a
// caller reaching one scheduler through both transports is one caller. A
// KeyFunc is called concurrently, from every call's goroutine; those of this
// package are safe for that.
type KeyFunc func(ctx context.Context) (string, error)

// ErrNoKey is returned (wrapped) when no fairness key could be derived for
// a call: by FirstOf when no source produced one, and by the interceptors
// when their KeyFunc returned "".
var ErrNoKey = errors.New("interceptors: no fairness key for the call")

// errNoIP is made once: ClientIP fails with it on every call over a
// transport without IP addresses.
var errNoIP = errors.New("interceptors: client IP: the peer has no IP address")

// FirstOf returns a KeyFunc that tries fs in order and returns the first
// non-empty key produced without error. If none is, it returns an error
// wrapping ErrNoKey and the sources' errors. Nil entries are skipped.
func FirstOf(fs ...KeyFunc) KeyFunc {
	fs = append([]KeyFunc(nil), fs...)
	return func(ctx context.Context) (string, error) {
		return clientkey.First(ctx, ErrNoKey, fs)
	}
}

// Principal returns a KeyFunc for the authenticated identity that an
// authentication interceptor (go-grpc-middleware's auth, run before this
// package's interceptors) stored in the context: get reads it back. The key
// is "principal:" and the identity.
func Principal(get func(ctx context.Context) (string, bool)) KeyFunc {
	if get == nil {
		panic("interceptors: Principal: nil getter")
	}
	return func(ctx context.Context) (string, error) {
		if id, ok := get(ctx); ok && id != "" {
			return "principal:" + id, nil
		}
		return "", nil
	}
}

// ClientCert returns a KeyFunc for the mTLS client: "spiffe:" and its SPIFFE
// ID when its leaf certificate has exactly one URI SAN and it is a spiffe://
// URI (an X.509 SVID), else "subject:" and the leaf's subject
// distinguished name. Only a certificate the TLS handshake verified counts
// (tls.RequireAndVerifyClientCert or tls.VerifyClientCertIfGiven): an
// unverified one can claim any name. Without one it returns "".
func ClientCert() KeyFunc {
	return func(ctx context.Context) (string, error) {
		p, _ := peer.FromContext(ctx)
		return certKey(p), nil
	}
}

// certKey is ClientCert's key for the transport peer p (nil: none).
func certKey(p *peer.Peer) string {
	return clientkey.Cert(verifiedChains(p))
}

// verifiedChains returns the client certificate chains the TLS handshake
// of the transport peer p (nil: none) verified.
func verifiedChains(p *peer.Peer) [][]*x509.Certificate {
	if p == nil {
		return nil
	}
	switch ti := p.AuthInfo.(type) {
	case credentials.TLSInfo:
		return ti.State.VerifiedChains
	case *credentials.TLSInfo:
		return ti.State.VerifiedChains
	}
	return nil
}

// ClientIP returns a KeyFunc for the client's IP address: the address that
// go-grpc-middleware's realip interceptor found, when it ran before this
// package's interceptors, else the transport peer's. (realip believes
// forwarding headers only from the trusted peers it is given; this function
// never reads them.) IPv4-mapped IPv6 addresses are unmapped, and IPv6
// addresses are grouped by their first v6Prefix bits (values outside
// [1, 128] mean 64), so that a client cannot multiply its share by rotating
// through the addresses it owns. The key is "ip:" and the address, or the
// prefix in CIDR form ("ip:203.0.113.7", "ip:2001:db8:1:2::/64"). A peer
// without an IP address (a Unix socket) is an error.
func ClientIP(v6Prefix int) KeyFunc {
	keys := clientkey.NewIPKeys(v6Prefix)
	return func(ctx context.Context) (string, error) {
		if k, ok := clientIPKey(ctx, nil, keys); ok {
			return k, nil
		}
		return "", errNoIP
	}
}

// clientIPKey is ClientIP's key: realip's address, else that of the transport
// peer p (looked up in ctx when nil).
func clientIPKey(ctx context.Context, p *peer.Peer, keys *clientkey.IPKeys) (string, bool) {
	if a, ok := realip.FromContext(ctx); ok && a.IsValid() {
		return keys.Key(a), true
	}
	if p == nil {
		p, _ = peer.FromContext(ctx)
	}
	if a, ok := addrOf(p); ok {
		return keys.Key(a), true
	}
	return "", false
}

// defaultKey is the default KeyFunc, FirstOf(ClientCert(),
// ClientIP(clientkey.DefaultIPv6Prefix)), in one function that looks the
// peer up once: it runs on every call.
func defaultKey() KeyFunc {
	keys := clientkey.NewIPKeys(clientkey.DefaultIPv6Prefix)
	return func(ctx context.Context) (string, error) {
		p, _ := peer.FromContext(ctx)
		if k := certKey(p); k != "" {
			return k, nil
		}
		if k, ok := clientIPKey(ctx, p, keys); ok {
			return k, nil
		}
		return "", errNoDefaultKey
	}
}

// errNoDefaultKey is what FirstOf(ClientCert(), ClientIP(n)) returns for a
// peer without a certificate or an IP address.
var errNoDefaultKey = errors.Join(ErrNoKey, errNoIP)

// peerAddr returns the IP address of the transport peer, without
// allocating for the usual *net.TCPAddr.
func peerAddr(ctx context.Context) (netip.Addr, bool) {
	p, _ := peer.FromContext(ctx)
	return addrOf(p)
}

// addrOf returns the IP address of the transport peer p (nil: none).
func addrOf(p *peer.Peer) (netip.Addr, bool) {
	if p == nil || p.Addr == nil {
		return netip.Addr{}, false
	}
	switch a := p.Addr.(type) {
	case *net.TCPAddr:
		return netip.AddrFromSlice(a.IP)
	case *net.UDPAddr:
		return netip.AddrFromSlice(a.IP)
	}
	return clientkey.ParseAddr(p.Addr.String())
}

// TrustedMetadata returns a KeyFunc for a metadata value that names the
// caller ("x-tenant-id"), set by a proxy or gateway that authenticated it.
// The value is believed only when trusted says the call comes from such a
// peer (see PeerIn); from any other peer the metadata is ignored, since a
// client could put any name there. A missing or empty value, or one given
// more than once (a proxy that appends instead of replacing), gives "". The
// key is "header:", the lower-case key, ":" and the value
// ("header:x-tenant-id:acme"), as httpmw.TrustedHeader's.
func TrustedMetadata(key string, trusted func(ctx context.Context) bool) KeyFunc {
	if trusted == nil {
		panic("interceptors: TrustedMetadata: nil trusted-peer predicate")
	}
	key = strings.ToLower(key)
	ns := "header:" + key + ":"
	return func(ctx context.Context) (string, error) {
		if !trusted(ctx) {
			return "", nil
		}
		if vs := metadata.ValueFromIncomingContext(ctx, key); len(vs) == 1 && vs[0] != "" {
			return ns + vs[0], nil
		}
		return "", nil
	}
}

// PeerIn returns a predicate for TrustedMetadata: the transport peer's IP
// address is inside one of prefixes. It judges the immediate peer, never an
// address from forwarding headers. With no prefixes it trusts nobody.
func PeerIn(prefixes ...netip.Prefix) func(ctx context.Context) bool {
	ps := make(clientkey.Prefixes, len(prefixes))
	for i, p := range prefixes {
		ps[i] = p.Masked()
	}
	return func(ctx context.Context) bool {
		a, ok := peerAddr(ctx)
		return ok && ps.Contains(a)
	}
}
