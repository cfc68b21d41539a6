package gitcache

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestLoopbackOnly(t *testing.T) {
	h := LoopbackOnly(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	for addr, want := range map[string]int{"127.0.0.1:5000": 200, "[::1]:5000": 200, "192.0.2.7:5000": 403, "garbage": 403} {
		r := httptest.NewRequest("GET", "/debug/admission", nil)
		r.RemoteAddr = addr
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code != want {
			t.Errorf("from %s: %d, want %d", addr, rec.Code, want)
		}
	}
}

func TestParsePrefixes(t *testing.T) {
	got, err := ParsePrefixes(" 10.0.0.0/8, ,::1/128")
	want := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("ParsePrefixes = %v, %v; want %v", got, err, want)
	}
	if _, err := ParsePrefixes("10.0.0.0/33"); err == nil {
		t.Error("ParsePrefixes accepted a /33")
	}
}
