package interceptors

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/fairseat/fairseat/criticality"
	"github.com/fairseat/fairseat/internal/throttle"
)

// A ClientOption configures the client interceptors. Nil options are
// ignored; when an option is given twice the last one wins. Options are
// plain values, safe to share.
type ClientOption interface{ applyClient(*clientOptions) }

type clientOptionFunc func(*clientOptions)

func (f clientOptionFunc) applyClient(o *clientOptions) { f(o) }

type clientOptions struct {
	throttle throttle.Config
	meter    metric.MeterProvider
	rand     func() float64 // tests only (export_test.go)
}

// WithThrottle sets the sliding window over which the client counts a
// backend's requests and accepts (default 2 minutes, at least 60 ns) and
// the multiplier K (default 2, at least 1): a backend is sent about K
// times what it accepts. 0 keeps a default. The interceptor constructors
// panic on other values.
func WithThrottle(window time.Duration, k float64) ClientOption {
	return clientOptionFunc(func(o *clientOptions) { o.throttle.Window, o.throttle.K = window, k })
}

// WithMaxPushback caps the retry delay a backend may ask for (default 5
// minutes), so that one response cannot silence it for good. 0 keeps the
// default; the interceptor constructors panic on a negative d.
func WithMaxPushback(d time.Duration) ClientOption {
	return clientOptionFunc(func(o *clientOptions) { o.throttle.MaxPushback = d })
}

// withRand replaces the random source of the throttle's draws (tests).
func withRand(f func() float64) ClientOption {
	return clientOptionFunc(func(o *clientOptions) { o.rand = f })
}

// ErrRefusedLocally is matched (errors.Is) by the error of a call that a
// client interceptor refused without sending it. The error is also a gRPC
// status error (status.Code, status.FromError), see UnaryClientInterceptor.
var ErrRefusedLocally = errors.New("interceptors: refused locally")

// refusedError is a local refusal: a status error that errors.Is matches
// with ErrRefusedLocally.
type refusedError struct{ st *status.Status }

func (e *refusedError) Error() string              { return e.st.Err().Error() }
func (e *refusedError) GRPCStatus() *status.Status { return e.st }
func (e *refusedError) Is(target error) bool       { return target == ErrRefusedLocally }

// client is what both client interceptors share. It is built once and only
// read afterwards; the throttle is safe for concurrent use.
type client struct {
	th    *throttle.Throttle
	tm    *throttle.Telemetry
	clock throttle.Clock
	rand  func() float64
}

func newClient(opts []ClientOption) *client {
	var o clientOptions
	for _, opt := range opts {
		if opt != nil {
			opt.applyClient(&o)
		}
	}
	th, err := throttle.New(o.throttle)
	if err != nil {
		panic("interceptors: client options: " + err.Error())
	}
	c := &client{th: th, tm: throttle.NewTelemetry(o.meter, ScopeName), clock: throttle.NewClock(), rand: o.rand}
	if c.rand == nil {
		c.rand = rand.Float64
	}
	return c
}

// UnaryClientInterceptor returns a client interceptor that sends the
// context's criticality with each call and protects the backends from
// overload: adaptive throttling per target, and the targets' retry
// pushback per method (see the package doc). A call it refuses is not
// sent; it fails at once with the status the backend would likely have
// given — the code of the backend's last overload response
// (codes.Unavailable or codes.ResourceExhausted), or under pushback the
// code of the response that asked for it, with a RetryInfo detail of the
// time left — as an error that errors.Is matches with ErrRefusedLocally.
// Each call of UnaryClientInterceptor makes a new, independent throttle
// state; give one interceptor value to all the ClientConns of a backend
// for them to share its counts. It panics on invalid options; the
// interceptor is safe for concurrent use.
func UnaryClientInterceptor(opts ...ClientOption) grpc.UnaryClientInterceptor {
	return newClient(opts).unary
}

func (c *client) unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, callOpts ...grpc.CallOption) error {
	ctx = withOutgoingLevel(ctx)
	target, now := targetOf(cc), c.clock.Now()
	if d := c.th.Decide(target, method, now, c.rand); d.Reason != throttle.Allowed {
		return c.refused(ctx, target, method, d)
	}
	trailer, opts := withTrailer(callOpts)
	err := invoker(ctx, method, req, reply, cc, opts...)
	c.record(ctx, target, method, now, err, *trailer)
	return err
}

// withTrailer returns callOpts with grpc.Trailer added, and the trailer
// it fills: a failed call's pushback may be there, and gRPC gives a
// unary call's trailer only to a call option (so every call asks for it).
// A call without options of its own, the usual case, costs one
// allocation, which holds both the trailer and the one option. The
// caller's array is never written (the full slice expression makes
// append copy). (Recycling them through a sync.Pool saved the
// allocation but nothing that measurements of whole calls could resolve,
// and a pool would be unsafe with an interceptor further down the chain
// that keeps the options past the call: see benchmarks/CLIENT.md.)
func withTrailer(callOpts []grpc.CallOption) (*metadata.MD, []grpc.CallOption) {
	if len(callOpts) == 0 {
		t := new(struct {
			md  metadata.MD
			opt [1]grpc.CallOption
		})
		t.opt[0] = grpc.Trailer(&t.md)
		return &t.md, t.opt[:]
	}
	md := new(metadata.MD)
	return md, append(callOpts[:len(callOpts):len(callOpts)], grpc.Trailer(md))
}

// StreamClientInterceptor is UnaryClientInterceptor for streams. A stream
// counts as accepted when its first message arrives or it ends well; as
// not accepted when it ends with codes.ResourceExhausted or
// codes.Unavailable before any message; a stream whose context is
// cancelled before either counts as accepted (the caller gave up). The
// stream's own outcome is recorded once; a stream that is neither read to
// its end nor cancelled is never recorded (gRPC leaks such a stream too).
func StreamClientInterceptor(opts ...ClientOption) grpc.StreamClientInterceptor {
	return newClient(opts).stream
}

func (c *client) stream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, callOpts ...grpc.CallOption) (grpc.ClientStream, error) {
	ctx = withOutgoingLevel(ctx)
	target, now := targetOf(cc), c.clock.Now()
	if d := c.th.Decide(target, method, now, c.rand); d.Reason != throttle.Allowed {
		return nil, c.refused(ctx, target, method, d)
	}
	cs, err := streamer(ctx, desc, cc, method, callOpts...)
	if err != nil {
		c.record(ctx, target, method, now, err, nil)
		return nil, err
	}
	s := &outcomeStream{ClientStream: cs, c: c, ctx: ctx, target: target, method: method, start: now}
	s.stop = context.AfterFunc(ctx, func() { s.done(nil, true) })
	return s, nil
}

// targetOf returns cc's target, the backend the throttle counts for; ""
// for a nil cc, which gRPC never passes but a test calling an interceptor
// directly may.
func targetOf(cc *grpc.ClientConn) string {
	if cc == nil {
		return ""
	}
	return cc.Target()
}

// refused records d, the throttle's refusal of a call of method to
// target, and returns the call's error.
func (c *client) refused(ctx context.Context, target, method string, d throttle.Decision) error {
	c.tm.Decided(ctx, target, method, d)
	code := codes.Code(d.Code)
	if code == codes.OK {
		code = codes.Unavailable
	}
	var st *status.Status
	if d.Reason == throttle.PushedBack {
		st = AddRetryInfo(status.Newf(code, "interceptors: refused locally: %s asked for no %s call for another %v (retry pushback)",
			target, method, d.RetryAfter), d.RetryAfter)
	} else {
		st = status.Newf(code, "interceptors: refused locally: %s accepted %d of the %d calls of the window (adaptive throttling, p=%.2f)",
			target, d.Accepts, d.Requests, d.P)
	}
	return &refusedError{st}
}

// record records how a call of method to target, sent at start, ended:
// err is its error, trailer its trailer (nil if not known).
func (c *client) record(ctx context.Context, target, method string, start time.Duration, err error, trailer metadata.MD) {
	if err == nil { // the usual case: no status to read, no second clock read
		c.th.Record(target, method, start, throttle.Outcome{Accepted: true})
		c.tm.Recorded(ctx, target, method, throttle.Outcome{Accepted: true})
		return
	}
	c.recordFailure(ctx, target, method, err, trailer)
}

// recordFailure is record for a call that failed with err.
func (c *client) recordFailure(ctx context.Context, target, method string, err error, trailer metadata.MD) {
	now := c.clock.Now() // a pushback counts from the response
	st, _ := status.FromError(err)
	o := throttle.Outcome{
		Code:     int(st.Code()),
		Accepted: st.Code() != codes.ResourceExhausted && st.Code() != codes.Unavailable,
		Pushback: retryDelay(st, trailer),
	}
	c.th.Record(target, method, now, o)
	c.tm.Recorded(ctx, target, method, o)
}

// withOutgoingLevel adds the context's criticality to the outgoing
// metadata, unless the caller put one there itself.
func withOutgoingLevel(ctx context.Context) context.Context {
	l, ok := criticality.FromContext(ctx)
	if !ok {
		return ctx
	}
	if md, ok := metadata.FromOutgoingContext(ctx); ok && len(md.Get(criticality.MetadataKey)) > 0 {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, criticality.MetadataKey, l.String())
}

// outcomeStream records its stream's outcome once: at the first message,
// at the end, or when its context is cancelled before either.
type outcomeStream struct {
	grpc.ClientStream
	c      *client
	ctx    context.Context
	target string
	method string
	start  time.Duration // c.clock's
	stop   func() bool   // stops the context.AfterFunc
	once   sync.Once     // RecvMsg and the AfterFunc may race
}

func (s *outcomeStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	outcome := err
	if err == io.EOF {
		outcome = nil // a clean end, even before any message: accepted
	}
	s.done(outcome, false)
	return err
}

// done records the outcome: err is the stream's error (nil: accepted).
func (s *outcomeStream) done(err error, cancelled bool) {
	s.once.Do(func() {
		if !cancelled {
			s.stop()
		}
		var trailer metadata.MD
		if err != nil {
			trailer = s.ClientStream.Trailer() // complete once RecvMsg has returned an error
		}
		s.c.record(s.ctx, s.target, s.method, s.start, err, trailer)
	})
}
