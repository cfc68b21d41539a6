package httpmw

import (
	"math"
	"math/big"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// FuzzRetryAfter answers a request with a 503 whose Retry-After values (one
// or two) are arbitrary, and sends the same request again at once, in fake
// time: the second request goes to the host exactly when the first value
// asks for no delay (not delay-seconds or an HTTP date in the future);
// otherwise it is refused with a RetryAfter of what the value asks for
// (delay-seconds saturating at the longest Duration, a date less the
// time), capped at MaxPushback, never negative or zero.
func FuzzRetryAfter(f *testing.F) {
	f.Add("120", "", false)
	f.Add(" 7 ", "1", true)
	f.Add("-1", "", false)
	f.Add("99999999999999999999999", "", false)
	f.Add("99999999999999999999999x", "", false)
	f.Add("Sat, 01 Jan 2000 00:00:09 GMT", "", false)
	f.Add("Fri, 31 Dec 9999 23:59:59 GMT", "", false)
	f.Add("Friday, 31-Dec-99 23:59:59 GMT", "", false)
	f.Add("Fri Dec 31 23:59:59 1999", "", false)
	const maxPushback = time.Hour
	f.Fuzz(func(t *testing.T, v1, v2 string, twice bool) {
		synctest.Test(t, func(t *testing.T) {
			start := time.Now() // the bubble's clock, which does not move here
			want := expectedRetryAfter(v1, start)
			if got := retryAfter(v1, start); got != want || got < 0 {
				t.Fatalf("retryAfter(%q) = %v, want %v", v1, got, want)
			}
			values := []string{v1}
			if twice {
				values = append(values, v2)
			}
			wantHeldBack(t, http.StatusServiceUnavailable, values, maxPushback, min(want, maxPushback))
		})
	})
}

// expectedRetryAfter is what Retry-After v asks for at now, computed
// another way than retryAfter: delay-seconds by big-number arithmetic,
// saturating at the longest Duration; a date by http.ParseTime.
func expectedRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if n, ok := new(big.Int).SetString(v, 10); ok && v[0] >= '0' && v[0] <= '9' {
		if n.Cmp(big.NewInt(math.MaxInt64/int64(time.Second))) > 0 {
			return math.MaxInt64
		}
		return time.Duration(n.Int64()) * time.Second
	}
	if at, err := http.ParseTime(v); err == nil && at.After(now) {
		return at.Sub(now)
	}
	return 0
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
