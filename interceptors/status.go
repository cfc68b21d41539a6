package interceptors

import (
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/fairseat/fairseat/admission"
	"github.com/fairseat/fairseat/internal/throttle"
)

// PushbackTrailer is the trailer in which a rejected call tells the client
// when to retry, in milliseconds (gRFC A6). grpc-go clients with a retry
// policy that lists the status code wait exactly that long before retrying.
const PushbackTrailer = "grpc-retry-pushback-ms"

// A StatusFunc maps the error of a call that was not admitted to the status
// its client gets. err is what Scheduler.Acquire returned (a
// *admission.RejectedError, a context error, an error wrapping
// admission.ErrUnknownJobType), or a status error from a JobIDFunc or
// KeyFunc. If the status has an errdetails.RetryInfo detail, the
// interceptors also send its delay as the PushbackTrailer. A nil or OK
// status means DefaultStatus's. It is called concurrently, from every
// refused call's goroutine.
type StatusFunc func(ctx context.Context, err error) *status.Status

// DefaultStatus is the StatusFunc used unless WithStatusFunc replaces it:
//
//   - a rejection because of the caller's own share (its queue is full, it
//     was pushed out by a lighter caller; RejectedError.PerKey):
//     codes.ResourceExhausted;
//   - a rejection of the whole server (queue full, wait timeout, closing,
//     queue-delay shedding):
//     codes.Unavailable;
//   - the caller's context ended while it waited: status.FromContextError,
//     so codes.Canceled or codes.DeadlineExceeded;
//   - a routed job type the scheduler does not know: codes.Internal naming
//     the type (a server configuration error);
//   - one of the scheduler's rejection sentinels (ErrQueueFull,
//     ErrWaitTimeout, ErrClosed, ErrOverloaded) not inside a
//     RejectedError, as a StatusFunc that wraps errors may pass it on:
//     codes.Unavailable, the server's limit;
//   - a status error: that status;
//   - any other error: codes.Internal with its text.
//
// The rejections carry a RetryInfo detail with the scheduler's estimate of
// when a seat opens (RejectedError.RetryAfter, rounded up to the
// millisecond, at least 1 ms; 1 ms for a bare sentinel, which has no
// estimate); the others carry no retry hint.
func DefaultStatus(ctx context.Context, err error) *status.Status {
	var rej *admission.RejectedError
	switch {
	case errors.As(err, &rej):
		code := codes.Unavailable
		if rej.PerKey {
			code = codes.ResourceExhausted
		}
		return AddRetryInfo(status.New(code, rej.Error()), rej.RetryAfter)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return status.FromContextError(err)
	case errors.Is(err, admission.ErrUnknownJobType):
		return status.New(codes.Internal, "interceptors: the route's job type is not registered with the scheduler: "+err.Error())
	case errors.Is(err, admission.ErrQueueFull), errors.Is(err, admission.ErrWaitTimeout), errors.Is(err, admission.ErrClosed),
		errors.Is(err, admission.ErrOverloaded):
		// A bare sentinel (the scheduler returns *RejectedError, but a
		// wrapping StatusFunc may not): the server's limit, no estimate.
		return AddRetryInfo(status.New(codes.Unavailable, err.Error()), 0)
	}
	if st, ok := status.FromError(err); ok {
		return st
	}
	return status.New(codes.Internal, err.Error())
}

// AddRetryInfo returns st with an errdetails.RetryInfo detail asking the
// client to wait d, rounded up to the millisecond and at least 1 ms (the
// resolution of the PushbackTrailer, where 0 would mean "retry at once" and
// a storm of retries). If the detail cannot be added, st is returned as is.
func AddRetryInfo(st *status.Status, d time.Duration) *status.Status {
	ws, err := st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(roundMillis(d))})
	if err != nil {
		return st
	}
	return ws
}

func roundMillis(d time.Duration) time.Duration {
	if d < time.Millisecond {
		return time.Millisecond
	}
	r := d.Truncate(time.Millisecond)
	if r < d && r <= math.MaxInt64-time.Millisecond {
		r += time.Millisecond
	}
	return r
}

// retryDelay returns the delay a failed call's response asks for: the
// larger of st's RetryInfo detail and the PushbackTrailer in trailer, 0 if
// neither holds a valid, positive delay. The trailer's first value counts
// (gRPC sends one); it is a decimal number of milliseconds, digits with
// an optional "+" (a negative one asks for none, anything else is
// ignored), and one too large for a time.Duration asks for the longest one
// (the throttle caps it).
func retryDelay(st *status.Status, trailer metadata.MD) time.Duration {
	var d time.Duration
	if vs := trailer.Get(PushbackTrailer); len(vs) > 0 {
		if ms, ok := throttle.ParseDelay(strings.TrimPrefix(vs[0], "+"), time.Millisecond); ok {
			d = ms
		}
	}
	for _, det := range st.Details() {
		if ri, ok := det.(*errdetails.RetryInfo); ok && ri.GetRetryDelay().IsValid() {
			d = max(d, ri.GetRetryDelay().AsDuration())
		}
	}
	return d
}

// pushback returns the trailer that repeats st's RetryInfo delay for gRPC
// clients' retry policies, or nil if st has no RetryInfo.
func pushback(st *status.Status) metadata.MD {
	for _, d := range st.Details() {
		ri, ok := d.(*errdetails.RetryInfo)
		if !ok || ri.GetRetryDelay() == nil {
			continue
		}
		ms := ri.GetRetryDelay().AsDuration().Milliseconds()
		if ms < 0 {
			ms = 0
		}
		return metadata.Pairs(PushbackTrailer, strconv.FormatInt(ms, 10))
	}
	return nil
}
