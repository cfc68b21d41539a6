package httpmw

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/fairseat/fairseat/internal/clientkey"
)

// FuzzRequest derives the key, the job IDs and the response format of a
// request whose peer address, forwarding headers, tenant header, Accept and
// query are arbitrary: nothing panics; a key is bounded, printable and
// namespaced once bounded; an untrusted peer's headers never change its
// key; a job ID function either fails or returns a non-empty value.
func FuzzRequest(f *testing.F) {
	f.Add("203.0.113.7:1", "198.51.100.1", "for=192.0.2.1", "acme", "application/json", "repo=linux")
	f.Add("10.0.0.2:80", "1.1.1.1, 198.51.100.1, 10.0.0.9", `for="[2001:db8::1]:80"`, "", "text/*;q=0", "repo=%zz")
	f.Add("[2001:db8:1:2::3]:4", "\xff\xfe", "for=;,", strings.Repeat("t", 200), "application/json;q=x", "repo;x")
	f.Add("@", "", "", "\x00", "*/*", "")
	key := FirstOf(TrustedHeader("X-Tenant", trusted), ClientIP(trusted, 64))
	f.Fuzz(func(t *testing.T, remote, xff, fwd, tenant, accept, query string) {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = remote
		r.URL.RawQuery = query
		for _, h := range [][2]string{{"X-Forwarded-For", xff}, {"X-Real-IP", xff}, {"Forwarded", fwd}, {"X-Tenant", tenant}, {"Accept", accept}} {
			if h[1] != "" {
				r.Header[h[0]] = []string{h[1]}
			}
		}
		k, err := key(r)
		peer, ok := clientkey.ParseAddr(remote)
		switch {
		case err != nil && ok:
			t.Fatalf("no key for peer %v: %v", peer, err)
		case err == nil:
			b := clientkey.Bound(k, 0)
			if len(b) > clientkey.DefaultMaxLen || clientkey.Bound(b, 1<<30) != b {
				t.Fatalf("key %q bounded to %q", k, b)
			}
			if !strings.HasPrefix(b, "ip:") && !strings.HasPrefix(b, "header:x-tenant:") && !strings.HasPrefix(b, "header:sha256:") {
				t.Fatalf("key %q bounded to %q: no namespace", k, b)
			}
		}
		if ok && !clientkey.Prefixes(trusted).Contains(peer) {
			if bare, _ := key(request(remote)); bare != k {
				t.Fatalf("untrusted peer %v: key %q with its headers, %q without", peer, k, bare)
			}
		}
		for _, idf := range []JobIDFunc{Query("repo"), Header("X-Tenant")} {
			if id, err := idf(r); (err == nil) == (id == "") {
				t.Fatalf("job ID %q, error %v", id, err)
			}
		}
		_ = acceptsJSON(r)
	})
}
