package interceptors

import (
	"math"
	"math/big"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
)

// FuzzRetryDelay reads the retry delay of a failed call from what a
// hostile or broken server sends: any grpc-retry-pushback-ms values (none,
// one or two) and a RetryInfo detail with any seconds and nanos, or with
// no delay at all. The delay is never negative; it is at least what a
// first trailer value that is a positive decimal asks for (saturating at
// the longest Duration) and at least a valid, positive RetryInfo delay;
// and it is 0 when neither asks for one. pushback, the server side, turns
// any RetryInfo into a trailer value that reads back as that delay.
func FuzzRetryDelay(f *testing.F) {
	f.Add("1234", "", uint8(1), true, int64(2), int32(500_000_000), false)
	f.Add("-5", "7", uint8(2), false, int64(0), int32(0), false)
	f.Add("99999999999999999999999", "", uint8(1), true, int64(-3), int32(0), false)
	f.Add(" 5", "", uint8(1), true, int64(315_576_000_001), int32(0), false)
	f.Add("", "", uint8(0), true, int64(1), int32(-1), false)
	f.Add("+0042", "", uint8(1), true, int64(0), int32(0), true)
	f.Fuzz(func(t *testing.T, v1, v2 string, n uint8, withInfo bool, secs int64, nanos int32, nilDelay bool) {
		trailer := metadata.MD{}
		switch n % 3 {
		case 1:
			trailer.Append(PushbackTrailer, v1)
		case 2:
			trailer.Append(PushbackTrailer, v1, v2)
		}
		st := status.New(codes.Unavailable, "busy")
		var info *durationpb.Duration
		if withInfo {
			info = &durationpb.Duration{Seconds: secs, Nanos: nanos}
			if nilDelay {
				info = nil
			}
			var err error
			if st, err = st.WithDetails(&errdetails.RetryInfo{RetryDelay: info}); err != nil {
				t.Fatal(err)
			}
		}
		d := retryDelay(st, trailer)
		if d < 0 {
			t.Fatalf("trailer %q, RetryInfo %v: delay %v", trailer, info, d)
		}
		var want time.Duration // the least the delay must be
		if n%3 != 0 {
			if ms, ok := new(big.Int).SetString(v1, 10); ok && ms.Sign() > 0 {
				want = time.Duration(math.MaxInt64).Truncate(time.Millisecond)
				if ms.IsInt64() && ms.Int64() <= math.MaxInt64/int64(time.Millisecond) {
					want = time.Duration(ms.Int64()) * time.Millisecond
				}
			}
		}
		if info.IsValid() && info.AsDuration() > 0 {
			want = max(want, info.AsDuration())
		}
		if d < want || (want == 0 && d != 0) {
			t.Fatalf("trailer %q, RetryInfo %v: delay %v, want %v", trailer, info, d, want)
		}
		if !withInfo {
			return
		}
		back := pushback(st)
		if nilDelay {
			if back != nil {
				t.Fatalf("RetryInfo without a delay: trailer %v", back)
			}
			return
		}
		ms := max(0, info.AsDuration().Milliseconds())
		if got := retryDelay(status.New(codes.Unavailable, ""), back); got != time.Duration(ms)*time.Millisecond {
			t.Fatalf("RetryInfo %v: trailer %v reads back as %v, want %d ms", info, back, got, ms)
		}
	})
}
