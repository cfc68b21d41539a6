package httpmw

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/fairseat/fairseat/admission"
	"github.com/fairseat/fairseat/internal/clientkey"
)

// Hostile input: what a client controls — every header the middleware
// reads (X-Forwarded-For, Forwarded, a trusted tenant header, a job ID
// header, the query, Accept) and the ones it must ignore (X-Real-IP) —
// never panics, never yields an unbounded or unprintable key, never lets an
// untrusted peer choose its key, and ends in the documented status.

// hostileValues are the values tried in every header: huge, malformed,
// with control characters, invalid UTF-8.
var hostileValues = map[string]string{
	"huge":          strings.Repeat("9", 1<<20),
	"huge list":     strings.Repeat("198.51.100.1, ", 1<<16),
	"malformed":     `for="[::1;;,,=="`,
	"control":       "a\x00b\x01\x7f\u0085c\r\n",
	"invalid UTF-8": "\xff\xfe\xc3\x28",
	"empty":         "",
}

// A peer outside the trusted prefixes is its own client whatever forwarding
// headers it sends: X-Forwarded-For, Forwarded, X-Real-IP (which the
// middleware never reads), alone, together or 10,000 times over.
func TestHostileSpoofedForwardingFromUntrustedPeer(t *testing.T) {
	spoofs := map[string][]string{
		"X-Forwarded-For": {"X-Forwarded-For", "198.51.100.1"},
		"Forwarded":       {"Forwarded", "for=198.51.100.1"},
		"X-Real-IP":       {"X-Real-IP", "198.51.100.1"},
		"all three":       {"X-Forwarded-For", "198.51.100.1", "Forwarded", `for="[2001:db8::1]"`, "X-Real-IP", "198.51.100.2"},
		"trusted-looking": {"X-Forwarded-For", "10.0.0.1, 10.0.0.2"},
	}
	many := make([]string, 0, 20_000)
	for i := range 10_000 {
		many = append(many, "X-Forwarded-For", fmt.Sprintf("198.51.%d.%d", i>>8, i&0xff))
	}
	spoofs["10,000 X-Forwarded-For"] = many
	keyFuncs := map[string]KeyFunc{
		"ClientIP(trusted)": ClientIP(trusted, 64),
		"default":           buildConfig(nil).key,
	}
	for _, peer := range []string{"203.0.113.7:1234", "[2001:db8:7:7::1]:1234"} {
		for fname, key := range keyFuncs {
			want, err := key(request(peer))
			must(t, err)
			for name, hdrs := range spoofs {
				if got, err := key(request(peer, hdrs...)); err != nil || got != want {
					t.Errorf("%s from %s with spoofed %s: key %q, %v; want %q", fname, peer, name, got, err, want)
				}
			}
		}
	}
}

// From a trusted proxy, the client is the right-most hop outside the
// trusted prefixes, whatever the client wrote to the left of it; X-Real-IP
// is not read even from a trusted peer.
func TestHostileTrustedChainRightmostUntrusted(t *testing.T) {
	key := ClientIP(trusted, 64)
	for _, tc := range []struct {
		name    string
		headers []string
		want    string
	}{
		{"XFF", []string{"X-Forwarded-For", "6.6.6.6, 198.51.100.1, 10.0.0.9"}, "ip:198.51.100.1"},
		{"XFF, several lines", []string{"X-Forwarded-For", "6.6.6.6", "X-Forwarded-For", "198.51.100.1, 10.0.0.9"}, "ip:198.51.100.1"},
		{"Forwarded", []string{"Forwarded", `for=6.6.6.6, for="[2001:db8:5:6::7]:99", for=10.0.0.9`}, "ip:2001:db8:5:6::/64"},
		{"X-Real-IP ignored", []string{"X-Real-IP", "198.51.100.1"}, "ip:10.0.0.2"},
	} {
		if got, err := key(request("10.0.0.2:80", tc.headers...)); err != nil || got != tc.want {
			t.Errorf("%s: key %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}

// IPv6 clients in one /64 are one client, as peers and as forwarded hops;
// the next /64 is another.
func TestHostileIPv6SlashSixtyFourShareAKey(t *testing.T) {
	key := ClientIP(trusted, 0)
	same := []*http.Request{
		request("[2001:db8:1:2::1]:1"),
		request("[2001:db8:1:2:ffff:ffff:ffff:ffff]:1"),
		request("[2001:db8:1:2:dead:beef::%25eth0]:1"),
		request("10.0.0.2:1", "X-Forwarded-For", "2001:db8:1:2:aaaa::9"),
		request("10.0.0.2:1", "Forwarded", `for="[2001:db8:1:2:bbbb::9]"`),
	}
	for _, r := range same {
		if got, err := key(r); err != nil || got != "ip:2001:db8:1:2::/64" {
			t.Errorf("%s %v: key %q, %v", r.RemoteAddr, r.Header, got, err)
		}
	}
	if got, _ := key(request("[2001:db8:1:3::1]:1")); got == "ip:2001:db8:1:2::/64" {
		t.Errorf("the next /64 shares the key %q", got)
	}
}

// Every header the middleware reads, with every hostile value, through the
// middleware: no panic, the key the scheduler sees is bounded and
// printable, and the status is the documented one (the handler runs: 200;
// an empty job ID: 400).
func TestHostileHeaderValues(t *testing.T) {
	s := newScheduler(t, admission.Config{Capacity: 4}, admission.JobTypeConfig{})
	defer func() { must(t, s.Close(t.Context())) }()
	var seen []string
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, k := range s.Snapshot().Keys {
			seen = append(seen, k.Key)
		}
	})
	mux := http.NewServeMux()
	mux.Handle("POST /h", Tag("clone", Header("X-Repo"), handler))
	mux.Handle("POST /q", Tag("clone", Query("repo"), handler))
	h := Middleware(s, WithKeyFunc(FirstOf(TrustedHeader("X-Tenant", trusted), ClientIP(trusted, 64))))(mux)
	for vname, v := range hostileValues {
		for _, hdr := range []string{"X-Forwarded-For", "Forwarded", "X-Real-IP", "X-Tenant", "X-Repo", "Accept"} {
			for _, peer := range []string{"10.0.0.2:80", "203.0.113.7:80"} {
				r := httptest.NewRequest("POST", "/h", nil)
				r.RemoteAddr = peer
				r.Header.Set("X-Repo", "linux")
				r.Header[hdr] = []string{v} // as it came off the wire, unchecked
				want := http.StatusOK
				if hdr == "X-Repo" && v == "" {
					want = http.StatusBadRequest
				}
				seen = seen[:0]
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, r)
				if rec.Code != want || (want == http.StatusOK) != (len(seen) == 1) {
					t.Errorf("%s %s from %s: status %d, want %d (handler saw keys %q)", vname, hdr, peer, rec.Code, want, seen)
				}
				checkKeys(t, vname+" "+hdr, seen)
			}
		}
		r := httptest.NewRequest("POST", "/q?repo=x", nil)
		r.URL.RawQuery = "repo=" + v // the query, unescaped garbage included
		want := http.StatusOK
		if r.URL.Query().Get("repo") == "" { // empty, or a pair the query parser drops (";")
			want = http.StatusBadRequest
		}
		seen = seen[:0]
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code != want {
			t.Errorf("%s query: status %d, want %d", vname, rec.Code, want)
		}
		checkKeys(t, vname+" query", seen)
		_ = acceptsJSON(request("1.2.3.4:1", "Accept", v))
	}
}

// checkKeys fails unless every key is bounded and printable.
func checkKeys(t *testing.T, what string, keys []string) {
	t.Helper()
	if len(keys) > 1 {
		t.Errorf("%s: %d keys active, want the request's own", what, len(keys))
	}
	for _, k := range keys {
		if len(k) > clientkey.DefaultMaxLen || clientkey.Bound(k, 1<<30) != k {
			t.Errorf("%s: the scheduler saw key %q (%d bytes)", what, k, len(k))
		}
	}
}

// 10,000 header entries of every kind the middleware reads: bounded work
// (the forwarding walk stops at 64 hops), a bounded key, the handler runs.
func TestHostileTenThousandHeaderEntries(t *testing.T) {
	s := newScheduler(t, admission.Config{Capacity: 4}, admission.JobTypeConfig{})
	defer func() { must(t, s.Close(t.Context())) }()
	var seen []string
	mux := http.NewServeMux()
	mux.Handle("POST /h", Tag("clone", Header("X-Repo"), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, k := range s.Snapshot().Keys {
			seen = append(seen, k.Key)
		}
	})))
	h := Middleware(s, WithKeyFunc(FirstOf(TrustedHeader("X-Tenant", trusted), ClientIP(trusted, 64))))(mux)
	for _, hdr := range []string{"X-Forwarded-For", "Forwarded", "X-Tenant", "X-Repo", "Accept", "X-Junk"} {
		r := httptest.NewRequest("POST", "/h", nil)
		r.RemoteAddr = "10.0.0.2:80"
		r.Header.Set("X-Repo", "linux")
		vs := make([]string, 10_000)
		for i := range vs {
			vs[i] = fmt.Sprintf("10.%d.%d.%d", i>>16, (i>>8)&0xff, i&0xff)
			if hdr == "Forwarded" {
				vs[i] = "for=" + vs[i]
			}
		}
		r.Header[hdr] = vs
		seen = seen[:0]
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code != http.StatusOK || len(seen) != 1 {
			t.Errorf("10,000 %s: status %d, handler saw keys %q", hdr, rec.Code, seen)
		}
		checkKeys(t, "10,000 "+hdr, seen)
		if hdr == "X-Forwarded-For" || hdr == "Forwarded" {
			// All trusted, more than 64 hops: the peer is the client.
			if got := ForwardedClient(netip.MustParseAddr("10.0.0.2"), r.Header, trusted); got.String() != "10.0.0.2" {
				t.Errorf("10,000 %s: client %v, want the peer", hdr, got)
			}
		}
	}
}
