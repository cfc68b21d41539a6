// Package clientkey holds what the gRPC and HTTP adapters share when they
// turn a caller into a fairness key: client addresses grouped so that one
// client cannot multiply its share by rotating addresses, trusted proxy
// prefixes, and a bound on key length.
//
// Keys are namespaced by their source ("ip:", "spiffe:", "subject:",
// "header:", "principal:"), so a value from one source can never collide
// with, and so borrow the share of, a value from another.
//
// # Errors and panics
//
// Every function takes any value without panicking: an invalid address is
// keyed "ip:invalid", a v6Prefix or maxLen out of range means the default,
// ParseAddr reports what it cannot parse, ParsePrefixes names the bad
// entry, Cert of no verified chain is "", First skips nil sources, and nil
// or empty Prefixes trust nothing. The one panic is a method of a nil
// *IPKeys (use NewIPKeys or the zero value). TestBadInput tries each.
package clientkey

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"unicode/utf8"
)

// DefaultIPv6Prefix groups IPv6 clients by /64, the smallest block a site is
// normally assigned: addresses inside it are one client.
const DefaultIPv6Prefix = 64

// DefaultMaxLen bounds keys; longer keys are hashed (see Bound).
const DefaultMaxLen = 128

// digestLen is the length of Bound's digest, "sha256:" and 64 hex digits.
const digestLen = len("sha256:") + 64

// IP returns the key of a client address: "ip:" and the IPv4 address (an
// IPv4-mapped IPv6 address is unmapped first), or the IPv6 address masked to
// v6Prefix bits in CIDR form. v6Prefix outside [1, 128] means
// DefaultIPv6Prefix. The zone is dropped.
func IP(addr netip.Addr, v6Prefix int) string {
	addr, bits := group(addr, v6Prefix)
	return ipKey(addr, bits)
}

// group returns the address that stands for addr's client (unmapped,
// without zone, an IPv6 address masked to v6Prefix bits) and the prefix
// length its key shows (0 for IPv4, which shows none).
func group(addr netip.Addr, v6Prefix int) (netip.Addr, int) {
	addr = addr.Unmap().WithZone("")
	if !addr.IsValid() || addr.Is4() {
		return addr, 0
	}
	if v6Prefix < 1 || v6Prefix > 128 {
		v6Prefix = DefaultIPv6Prefix
	}
	p, _ := addr.Prefix(v6Prefix) // cannot fail for a valid IPv6 address and bits in range
	return p.Addr(), v6Prefix
}

// ipKey formats the key of a grouped address.
func ipKey(addr netip.Addr, bits int) string {
	if !addr.IsValid() {
		return "ip:invalid"
	}
	var buf [64]byte // "ip:" and the longest IPv6 prefix fit: one allocation, the result
	b := append(buf[:0], "ip:"...)
	if bits == 0 {
		return string(addr.AppendTo(b))
	}
	return string(netip.PrefixFrom(addr, bits).AppendTo(b))
}

// An IPKeys cache has 1<<ipKeyBits slots: 2 KiB of pointers.
const (
	ipKeyBits  = 8
	ipKeySlots = 1 << ipKeyBits
)

// IPKeys returns the keys IP returns for one IPv6 grouping and remembers
// the recent ones, so that the key of a returning client costs no
// allocation and is the same string each time. It is a direct-mapped cache
// of ipKeySlots entries: a client whose slot another client took since its
// last call gets its key built again, as IP builds it. NewIPKeys makes one
// for a grouping; the zero value is an empty cache for DefaultIPv6Prefix.
// It must not be copied after first use, and is safe for concurrent use.
type IPKeys struct {
	v6Prefix int
	slots    [ipKeySlots]atomic.Pointer[ipKeyEntry]
}

// ipKeyEntry is one remembered key; it never changes once stored.
type ipKeyEntry struct {
	addr netip.Addr // grouped, as group returns it
	key  string
}

// NewIPKeys returns an empty cache of the keys IP(addr, v6Prefix) returns.
func NewIPKeys(v6Prefix int) *IPKeys {
	return &IPKeys{v6Prefix: v6Prefix}
}

// Key returns IP(addr, v6Prefix), from the cache when it holds it.
func (c *IPKeys) Key(addr netip.Addr) string {
	addr, bits := group(addr, c.v6Prefix)
	if !addr.IsValid() {
		return "ip:invalid"
	}
	slot := &c.slots[slotOf(addr)]
	if e := slot.Load(); e != nil && e.addr == addr {
		return e.key
	}
	k := ipKey(addr, bits)
	slot.Store(&ipKeyEntry{addr, k})
	return k
}

// slotOf hashes a grouped address to its slot (Fibonacci hashing of the
// address's 128 bits).
func slotOf(addr netip.Addr) uint64 {
	a := addr.As16()
	hi, lo := binary.BigEndian.Uint64(a[:8]), binary.BigEndian.Uint64(a[8:])
	return ((hi ^ lo) * 0x9e3779b97f4a7c15) >> (64 - ipKeyBits)
}

// ParseAddr parses "host:port", "[v6]:port" or a bare address, as found in
// net.Addr.String and http.Request.RemoteAddr. Host names are not resolved.
func ParseAddr(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr(), true
	}
	if host, _, err := net.SplitHostPort(s); err == nil {
		s = host
	}
	if len(s) > 1 && s[0] == '[' && s[len(s)-1] == ']' {
		s = s[1 : len(s)-1]
	}
	a, err := netip.ParseAddr(s)
	return a, err == nil
}

// Bound makes a key safe to store and print: it returns key if it is at most
// maxLen bytes of valid UTF-8 without control characters, and otherwise its
// namespace (the bytes up to the first ':', if short and printable, and if
// it fits maxLen beside the digest) followed by a SHA-256 digest of the
// whole key, so that distinct keys stay distinct and the namespace stays
// readable. The result is never longer than maxLen. maxLen below 80 means
// DefaultMaxLen.
func Bound(key string, maxLen int) string {
	if maxLen < 80 {
		maxLen = DefaultMaxLen
	}
	if len(key) <= maxLen && printable(key) {
		return key
	}
	ns := ""
	if i := strings.IndexByte(key, ':'); i > 0 && i <= 16 && i+1+digestLen <= maxLen && printable(key[:i]) {
		ns = key[:i+1]
	}
	sum := sha256.Sum256([]byte(key))
	return ns + "sha256:" + hex.EncodeToString(sum[:])
}

// printable reports whether s is valid UTF-8 without control characters.
// Every call of both transports bounds its key, so the ASCII bytes, all of
// a usual key, take one table look-up each; the first other byte hands the
// rest to the rune-by-rune check.
func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if !printableASCII[s[i]] {
			return s[i] >= utf8.RuneSelf && printableUTF8(s[i:])
		}
	}
	return true
}

// printableASCII[c] says whether byte c is a printable ASCII character
// (0x20 to 0x7e).
var printableASCII = func() (t [256]bool) {
	for c := 0x20; c < 0x7f; c++ {
		t[c] = true
	}
	return t
}()

func printableUTF8(s string) bool {
	for _, r := range s {
		if r == utf8.RuneError || r < 0x20 || (r >= 0x7f && r < 0xa0) {
			return false
		}
	}
	return true
}

// First returns the first non-empty key that sources produce for arg
// without error, skipping nil sources. If none does, it returns an error
// wrapping noKey and the sources' errors. Both transports' FirstOf use it.
func First[A any, F ~func(A) (string, error)](arg A, noKey error, sources []F) (string, error) {
	var errs []error
	for _, f := range sources {
		if f == nil {
			continue
		}
		k, err := f(arg)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if k != "" {
			return k, nil
		}
	}
	return "", errors.Join(append([]error{noKey}, errs...)...)
}

// Cert returns the key of a verified client certificate chain: the leaf's
// SPIFFE ID ("spiffe:spiffe://domain/path") when it carries exactly one URI
// SAN, with the spiffe scheme and a trust domain, as an X.509-SVID does; else
// its subject ("subject:CN=..."); "" when there is no verified chain or the
// subject is empty. Pass only chains the TLS stack verified
// (tls.ConnectionState.VerifiedChains): a presented but unverified
// certificate would let a client claim any identity.
func Cert(verified [][]*x509.Certificate) string {
	if len(verified) == 0 || len(verified[0]) == 0 {
		return ""
	}
	leaf := verified[0][0]
	if len(leaf.URIs) == 1 && strings.EqualFold(leaf.URIs[0].Scheme, "spiffe") && leaf.URIs[0].Host != "" {
		return "spiffe:" + leaf.URIs[0].String()
	}
	if subj := leaf.Subject.String(); subj != "" {
		return "subject:" + subj
	}
	return ""
}

// CertIDs is a set of certificate identities, each a SPIFFE ID
// ("spiffe://prod.example/frontend") or a subject distinguished name
// ("CN=frontend,O=example"): Cert's keys without their namespace. It is
// safe for concurrent reads.
type CertIDs map[string]bool

// NewCertIDs returns the set of ids.
func NewCertIDs(ids []string) CertIDs {
	s := make(CertIDs, len(ids))
	for _, id := range ids {
		s[id] = true
	}
	return s
}

// Has reports whether the verified chain's leaf names one of the set's
// identities (false without a verified chain).
func (s CertIDs) Has(verified [][]*x509.Certificate) bool {
	key := Cert(verified)
	if id, ok := strings.CutPrefix(key, "spiffe:"); ok {
		return s[id]
	}
	id, ok := strings.CutPrefix(key, "subject:")
	return ok && s[id]
}

// Prefixes is a set of trusted network prefixes (proxies, load balancers).
// The zero value trusts nothing. It is safe for concurrent reads.
type Prefixes []netip.Prefix

// ParsePrefixes parses CIDR prefixes ("10.0.0.0/8", "::1/128") or bare
// addresses (a single host). The error names the bad entry.
func ParsePrefixes(cidrs []string) (Prefixes, error) {
	ps := make(Prefixes, 0, len(cidrs))
	for _, c := range cidrs {
		c = strings.TrimSpace(c)
		if p, err := netip.ParsePrefix(c); err == nil {
			ps = append(ps, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(c)
		if err != nil {
			return nil, fmt.Errorf("clientkey: trusted prefix %q is neither a CIDR prefix nor an address", c)
		}
		a = a.Unmap()
		ps = append(ps, netip.PrefixFrom(a, a.BitLen()))
	}
	return ps, nil
}

// Contains reports whether a is inside one of the prefixes.
func (ps Prefixes) Contains(a netip.Addr) bool {
	a = a.Unmap().WithZone("")
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
