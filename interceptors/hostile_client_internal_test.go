package interceptors

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/durationpb"
)

// Hostile input on the client side: what a hostile or broken server sends
// back. The client interceptors are called in process with an invoker that
// plays the server, so that anything may come back (grpc-go would refuse
// some of it on the wire), in fake time.

// serverReply is what the invoker of a hostile server answers: a status
// error of codes.Aborted (a failure that is not overload, so that adaptive
// throttling stays out of the way: the pushback alone holds calls back),
// with a grpc-retry-pushback-ms trailer of the values (none if empty) and
// the RetryInfo details.
type serverReply struct {
	trailer []string
	details []protoadapt.MessageV1
}

// invoker returns an invoker that answers r, and counts the calls it sees.
func (r serverReply) invoker(calls *int) grpc.UnaryInvoker {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, opts ...grpc.CallOption) error {
		*calls++
		for _, o := range opts {
			if tr, ok := o.(grpc.TrailerCallOption); ok && len(r.trailer) > 0 {
				*tr.TrailerAddr = metadata.MD{PushbackTrailer: r.trailer}
			}
		}
		st, err := status.New(codes.Aborted, "go away").WithDetails(r.details...)
		if err != nil {
			panic(err)
		}
		return st.Err()
	}
}

func retryInfo(d *durationpb.Duration) protoadapt.MessageV1 {
	return &errdetails.RetryInfo{RetryDelay: d}
}

// A hostile pushback trailer or RetryInfo: the call after it is held back
// for exactly the documented delay — the first trailer value if it is a
// decimal number of milliseconds (a leading "+" allowed), a valid RetryInfo
// delay, the larger of the two, capped at WithMaxPushback — never longer,
// and not at all for anything negative, malformed or absent.
func TestHostilePushback(t *testing.T) {
	const maxPushback = time.Minute
	many := make([]string, 10_000)
	for i := range many {
		many[i] = fmt.Sprint(100 + i)
	}
	manyInfos := make([]protoadapt.MessageV1, 1_000)
	for i := range manyInfos {
		manyInfos[i] = retryInfo(&durationpb.Duration{Seconds: int64(i%7) - 3, Nanos: int32(i)})
	}
	for _, tc := range []struct {
		name  string
		reply serverReply
		want  time.Duration
	}{
		{"negative", serverReply{trailer: []string{"-5"}}, 0},
		{"negative zero", serverReply{trailer: []string{"-0"}}, 0},
		{"zero", serverReply{trailer: []string{"0"}}, 0},
		{"plus", serverReply{trailer: []string{"+250"}}, 250 * time.Millisecond},
		{"leading zeros", serverReply{trailer: []string{"000250"}}, 250 * time.Millisecond},
		{"one more than the cap", serverReply{trailer: []string{"60001"}}, maxPushback},
		{"huge", serverReply{trailer: []string{"99999999999999999999999"}}, maxPushback},
		{"the longest Duration in ms", serverReply{trailer: []string{"9223372036854775807"}}, maxPushback},
		{"1 MiB of digits", serverReply{trailer: []string{strings.Repeat("9", 1<<20)}}, maxPushback},
		{"huge negative", serverReply{trailer: []string{"-99999999999999999999999"}}, 0},
		{"huge then garbage", serverReply{trailer: []string{"99999999999999999999999x"}}, 0},
		{"not a number", serverReply{trailer: []string{"soon"}}, 0},
		{"a fraction", serverReply{trailer: []string{"1.5"}}, 0},
		{"an exponent", serverReply{trailer: []string{"1e3"}}, 0},
		{"a leading space", serverReply{trailer: []string{" 500"}}, 0},
		{"a trailing space", serverReply{trailer: []string{"500 "}}, 0},
		{"control", serverReply{trailer: []string{"500\x00"}}, 0},
		{"invalid UTF-8", serverReply{trailer: []string{"500\xff"}}, 0},
		{"empty", serverReply{trailer: []string{""}}, 0},
		{"repeated: the first counts", serverReply{trailer: []string{"200", "999999"}}, 200 * time.Millisecond},
		{"repeated, the first bad", serverReply{trailer: []string{"x", "200"}}, 0},
		{"10,000 entries", serverReply{trailer: many}, 100 * time.Millisecond},
		{"RetryInfo", serverReply{details: []protoadapt.MessageV1{retryInfo(durationpb.New(1500 * time.Millisecond))}}, 1500 * time.Millisecond},
		{"RetryInfo of 1 ns", serverReply{details: []protoadapt.MessageV1{retryInfo(&durationpb.Duration{Nanos: 1})}}, 1},
		{"RetryInfo negative", serverReply{details: []protoadapt.MessageV1{retryInfo(&durationpb.Duration{Seconds: -5})}}, 0},
		{"RetryInfo of 10,000 years", serverReply{details: []protoadapt.MessageV1{retryInfo(&durationpb.Duration{Seconds: 315_576_000_000})}}, maxPushback},
		{"RetryInfo past the valid range", serverReply{details: []protoadapt.MessageV1{retryInfo(&durationpb.Duration{Seconds: 1 << 62})}}, 0},
		{"RetryInfo with bad nanos", serverReply{details: []protoadapt.MessageV1{retryInfo(&durationpb.Duration{Seconds: 1, Nanos: -1})}}, 0},
		{"RetryInfo with nanos of mixed sign", serverReply{details: []protoadapt.MessageV1{retryInfo(&durationpb.Duration{Seconds: -1, Nanos: 5})}}, 0},
		{"RetryInfo without a delay", serverReply{details: []protoadapt.MessageV1{retryInfo(nil)}}, 0},
		{"1,000 RetryInfo details: the largest valid", serverReply{details: manyInfos}, 3*time.Second + 993}, // detail 993
		{"trailer and RetryInfo: the larger", serverReply{trailer: []string{"200"}, details: []protoadapt.MessageV1{retryInfo(durationpb.New(3 * time.Second))}}, 3 * time.Second},
		{"a bad trailer beside a RetryInfo", serverReply{trailer: []string{"-1"}, details: []protoadapt.MessageV1{retryInfo(durationpb.New(time.Second))}}, time.Second},
	} {
		synctest.Test(t, func(t *testing.T) {
			c := newClient([]ClientOption{WithMaxPushback(maxPushback)})
			calls := 0
			inv := tc.reply.invoker(&calls)
			if err := c.unary(t.Context(), "/s/M", nil, nil, nil, inv); status.Code(err) != codes.Aborted || errors.Is(err, ErrRefusedLocally) {
				t.Fatalf("%s: the first call: %v, want the server's Aborted", tc.name, err)
			}
			err := c.unary(t.Context(), "/s/M", nil, nil, nil, inv)
			if tc.want == 0 {
				if calls != 2 || errors.Is(err, ErrRefusedLocally) {
					t.Errorf("%s: the second call %v, %d calls sent; want it sent", tc.name, err, calls)
				}
				return
			}
			st, _ := status.FromError(err)
			var left time.Duration
			for _, d := range st.Details() {
				if ri, ok := d.(*errdetails.RetryInfo); ok {
					left = ri.GetRetryDelay().AsDuration()
				}
			}
			if calls != 1 || !errors.Is(err, ErrRefusedLocally) || st.Code() != codes.Aborted || left != roundMillis(tc.want) {
				t.Errorf("%s: the second call %v (RetryInfo %v), %d calls sent; want it refused locally with %v", tc.name, err, left, calls, roundMillis(tc.want))
			}
			if d := c.th.Decide("", "/s/M", c.clock.Now(), func() float64 { return 0.99 }); d.RetryAfter != tc.want {
				t.Errorf("%s: the throttle holds the method back for %v, want %v", tc.name, d.RetryAfter, tc.want)
			}
		})
	}
}

// A server that pushes back on every method, called with 4,000 distinct
// method names, some of 8 KiB (a proxy forwards what its callers name):
// the client keeps one backend, at most 64 methods under pushback, and
// names of at most 128 bytes each. The calls are a millisecond apart, so
// that each pushback ends after the one before: the 64 methods called
// last are held back, the one before them gave way.
func TestHostileManyMethods(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newClient(nil)
		calls := 0
		inv := serverReply{trailer: []string{"60000"}}.invoker(&calls)
		long := strings.Repeat("m", 8<<10)
		method := func(i int) string {
			if i%2 == 0 {
				return fmt.Sprint("/s/", long, i)
			}
			return fmt.Sprint("/s/M", i)
		}
		for i := range 4_000 {
			_ = c.unary(t.Context(), method(i), nil, nil, nil, inv)
			time.Sleep(time.Millisecond)
		}
		fp := c.th.Footprint()
		if calls != 4_000 || fp.Backends != 1 || fp.MaxPushbacks > 64 || fp.KeyBytes > 65*128 {
			t.Errorf("after 4,000 methods: %d calls sent, footprint %+v; want all sent, 1 backend, at most 64 pushbacks and %d bytes of names", calls, fp, 65*128)
		}
		for i := 4_000 - 64; i < 4_000; i++ {
			if err := c.unary(t.Context(), method(i), nil, nil, nil, inv); !errors.Is(err, ErrRefusedLocally) {
				t.Errorf("method %d again: %v, want it held back", i, err)
			}
		}
		if err := c.unary(t.Context(), method(4_000-65), nil, nil, nil, inv); errors.Is(err, ErrRefusedLocally) {
			t.Errorf("method %d again: %v, want it sent (its pushback gave way)", 4_000-65, err)
		}
	})
}
