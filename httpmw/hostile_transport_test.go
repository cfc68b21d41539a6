package httpmw

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// Hostile input on the client side: what a hostile or broken host sends
// back to Transport. The next RoundTripper plays the host, so that any
// header may come back, in fake time.

// hostileHost returns a RoundTripper that answers every request with
// status and the Retry-After values (none if empty), and counts the
// requests it sees.
func hostileHost(status int, retryAfter []string, sent *int) http.RoundTripper {
	return rtFunc(func(r *http.Request) (*http.Response, error) {
		*sent++
		h := http.Header{}
		if len(retryAfter) > 0 {
			h["Retry-After"] = retryAfter
		}
		return &http.Response{StatusCode: status, Header: h, Body: http.NoBody, Request: r}, nil
	})
}

// A hostile Retry-After: the request after it is held back for exactly
// the documented delay — the first value, delay-seconds (digits, spaces
// around ignored) or an HTTP date in the future, capped at WithMaxPushback
// — never longer, and not at all for anything negative, malformed, past
// or on a response that is not 429 or 503.
func TestHostileRetryAfter(t *testing.T) {
	const maxPushback = time.Minute
	many := make([]string, 10_000)
	for i := range many {
		many[i] = fmt.Sprint(5 + i)
	}
	// The bubble's clock starts at 2000-01-01 00:00:00 UTC.
	for _, tc := range []struct {
		name   string
		status int
		values []string
		want   time.Duration
	}{
		{"seconds", 503, []string{"7"}, 7 * time.Second},
		{"spaces around", 429, []string{" \t7 "}, 7 * time.Second},
		{"leading zeros", 503, []string{"0007"}, 7 * time.Second},
		{"zero", 503, []string{"0"}, 0},
		{"negative", 503, []string{"-1"}, 0},
		{"plus", 503, []string{"+7"}, 0},
		{"one more than the cap", 503, []string{"61"}, maxPushback},
		{"huge", 503, []string{"99999999999999999999999"}, maxPushback},
		{"past the longest Duration", 503, []string{"9223372037"}, maxPushback},
		{"1 MiB of digits", 503, []string{strings.Repeat("9", 1<<20)}, maxPushback},
		{"huge then garbage", 503, []string{"99999999999999999999999x"}, 0},
		{"a fraction", 503, []string{"1.5"}, 0},
		{"words", 503, []string{"5 seconds"}, 0},
		{"a list", 503, []string{"5, 10"}, 0},
		{"control", 503, []string{"5\x00"}, 0},
		{"invalid UTF-8", 503, []string{"5\xff"}, 0},
		{"empty", 503, []string{""}, 0},
		{"a date", 503, []string{"Sat, 01 Jan 2000 00:00:30 GMT"}, 30 * time.Second},
		{"an RFC 850 date", 503, []string{"Saturday, 01-Jan-00 00:00:30 GMT"}, 30 * time.Second},
		{"an asctime date", 503, []string{"Sat Jan  1 00:00:30 2000"}, 30 * time.Second},
		{"a date now", 503, []string{"Sat, 01 Jan 2000 00:00:00 GMT"}, 0},
		{"a date in the past", 503, []string{"Fri, 31 Dec 1999 23:59:59 GMT"}, 0},
		{"a date far in the past", 503, []string{"Mon, 01 Jan 0001 00:00:00 GMT"}, 0},
		{"a date far in the future", 503, []string{"Fri, 31 Dec 9999 23:59:59 GMT"}, maxPushback},
		{"a date not in GMT", 503, []string{"Sat, 01 Jan 2000 00:00:30 PST"}, 0},
		{"a date out of range", 503, []string{"Sat, 32 Jan 2000 00:00:30 GMT"}, 0},
		{"repeated: the first counts", 503, []string{"5", "100000"}, 5 * time.Second},
		{"repeated, the first bad", 503, []string{"x", "5"}, 0},
		{"10,000 entries", 503, many, 5 * time.Second},
		{"on a 200", 200, []string{"30"}, 0},
		{"on a 500", 500, []string{"30"}, 0},
	} {
		synctest.Test(t, func(t *testing.T) { wantHeldBack(t, tc.status, tc.values, maxPushback, tc.want) })
	}
}

// wantHeldBack sends two requests at once, in fake time, through a
// Transport capped at maxPushback to a host that answers status and the
// Retry-After values, and fails unless the second is held back for want
// (0: sent).
func wantHeldBack(t *testing.T, status int, retryAfter []string, maxPushback, want time.Duration) {
	t.Helper()
	sent := 0
	// Draws of 0.999: adaptive throttling never refuses the second request
	// (p = 1/2 after one rejection), only a Retry-After does.
	rt := Transport(hostileHost(status, retryAfter, &sent), WithMaxPushback(maxPushback), withRand(func() float64 { return 0.999 }))
	for range 2 {
		r, _ := http.NewRequestWithContext(t.Context(), "GET", "http://h.test/x", nil)
		resp, err := rt.RoundTrip(r)
		var rej *RefusedError
		switch {
		case err == nil:
			resp.Body.Close()
		case errors.As(err, &rej):
			if rej.Throttled || rej.RetryAfter != want || rej.Status != status {
				t.Fatalf("Retry-After %.40q: refused with %+v, want a %d held back for %v", retryAfter, rej, status, want)
			}
		default:
			t.Fatalf("Retry-After %.40q: %v", retryAfter, err)
		}
	}
	if wantSent := 1 + b2i(want == 0); sent != wantSent {
		t.Fatalf("Retry-After %.40q: the host saw %d requests, want %d (delay %v)", retryAfter, sent, wantSent, want)
	}
}

// A host that pushes back on everything, redirecting the client to
// thousands of distinct hosts and paths, some of 8 KiB: Transport keeps at
// most MaxBackends hosts, 64 routes under pushback per host, and names of
// at most 128 bytes each. The last hosts are held back; the paths are
// requested a millisecond apart, so that each pushback ends after the one
// before: the 64 last are held back, the one before them gave way.
func TestHostileManyHostsAndPaths(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sent := 0
		// Draws just below 1: adaptive throttling (p = n/(n+1) after n
		// rejections) never refuses a request, only a Retry-After does.
		rt := Transport(hostileHost(http.StatusServiceUnavailable, []string{"60"}, &sent), WithMaxBackends(64), withRand(func() float64 { return 1 - 1e-9 }))
		th := rt.(*transport).th
		long := strings.Repeat("x", 8<<10)
		get := func(url string) error {
			r, err := http.NewRequestWithContext(t.Context(), "GET", url, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := rt.RoundTrip(r)
			if err == nil {
				resp.Body.Close()
			}
			return err
		}
		for i := range 2_000 {
			host := fmt.Sprint("h", i, ".test")
			if i%2 == 0 {
				host = fmt.Sprint(long, i, ".test")
			}
			must(t, get("http://"+host+"/"))
		}
		fp := th.Footprint()
		if fp.Backends != 64 || fp.MaxPushbacks != 1 || fp.KeyBytes > 64*2*128 {
			t.Errorf("after 2,000 hosts: footprint %+v; want 64 hosts of one pushback each, at most %d bytes of names", fp, 64*2*128)
		}
		path := func(i int) string {
			if i%2 == 0 {
				return fmt.Sprint("http://one.test/", long, i)
			}
			return fmt.Sprint("http://one.test/p", i)
		}
		for i := range 2_000 {
			must(t, get(path(i)))
			time.Sleep(time.Millisecond)
		}
		fp = th.Footprint()
		if fp.Backends != 64 || fp.MaxPushbacks != 64 || fp.KeyBytes > 64*65*128 {
			t.Errorf("after 2,000 paths: footprint %+v; want 64 hosts, at most 64 pushbacks each and %d bytes of names", fp, 64*65*128)
		}
		if sent != 4_000 {
			t.Errorf("the hosts saw %d requests, want 4,000", sent)
		}
		for _, url := range []string{"http://" + long + "1998.test/", "http://h1999.test/"} {
			if err := get(url); !errors.Is(err, ErrRefusedLocally) {
				t.Errorf("%.40s… again: %v, want it held back", url, err)
			}
		}
		for i := 2_000 - 64; i < 2_000; i++ {
			if err := get(path(i)); !errors.Is(err, ErrRefusedLocally) {
				t.Errorf("path %d again: %v, want it held back", i, err)
			}
		}
		if err := get(path(2_000 - 65)); err != nil {
			t.Errorf("path %d again: %v, want it sent (its pushback gave way)", 2_000-65, err)
		}
	})
}
