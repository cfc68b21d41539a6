package interceptors

import (
	"context"
	"errors"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/fairseat/fairseat/admission"
	"github.com/fairseat/fairseat/criticality"
	"github.com/fairseat/fairseat/internal/clientkey"
)

// UnaryServerInterceptor returns an interceptor that admits unary calls
// through s as the options say (see the package doc) and holds each call's
// seat while its handler runs. It panics if s is nil or a route is
// malformed. The interceptor is safe for concurrent use.
func UnaryServerInterceptor(s *admission.Scheduler, opts ...Option) grpc.UnaryServerInterceptor {
	c := newConfig(s, opts)
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		ctx, lvl := c.criticality(ctx)
		r := c.route(ctx, info.FullMethod)
		if r == nil {
			return handler(ctx, req)
		}
		p, trailer, err := c.admit(ctx, info.FullMethod, r, lvl, req)
		if err != nil {
			_ = grpc.SetTrailer(ctx, trailer) // fails only outside a gRPC server, where there is no client to tell
			return nil, err
		}
		defer p.Release()
		return handler(ctx, req)
	}
}

// StreamServerInterceptor returns an interceptor that admits streaming calls
// through s as the options say, at the point their route's StreamMode
// names (see the package doc). It panics if s is nil or a route is
// malformed. The interceptor is safe for concurrent use.
func StreamServerInterceptor(s *admission.Scheduler, opts ...Option) grpc.StreamServerInterceptor {
	c := newConfig(s, opts)
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		ctx, lvl := c.criticality(ss.Context())
		if ctx != ss.Context() {
			ss = &levelStream{ss, ctx}
		}
		r := c.route(ctx, info.FullMethod)
		switch {
		case r == nil:
			return handler(srv, ss)
		case r.Stream == FirstMessage:
			return c.admitOnFirstMessage(srv, ss, info.FullMethod, r, lvl, handler)
		}
		p, trailer, err := c.admit(ctx, info.FullMethod, r, lvl, nil)
		if err != nil {
			ss.SetTrailer(trailer)
			return err
		}
		if r.Stream == GateStream {
			p.Release()
			return handler(srv, ss)
		}
		defer p.Release()
		return handler(srv, ss)
	}
}

// route returns how a call of fullMethod is admitted, or nil if it passes
// through. Exempt calls are counted.
func (c *config) route(ctx context.Context, fullMethod string) *Route {
	if strings.HasPrefix(fullMethod, healthService) || (c.exempt != nil && c.exempt(ctx, fullMethod)) {
		c.sched.CountExempt()
		return nil
	}
	return c.routes.lookup(fullMethod)
}

// admit waits for a seat for a call of fullMethod routed by r, of
// criticality lvl, req being its request (nil for a stream admitted before
// its first message). On failure it returns the status error for the
// client and the trailer to send with it (the retry pushback, or nil).
func (c *config) admit(ctx context.Context, fullMethod string, r *Route, lvl criticality.Level, req any) (*admission.Permit, metadata.MD, error) {
	typ := r.Type
	if typ == "" {
		typ = admission.JobType(fullMethod)
	}
	var id string
	var err error
	if r.JobID != nil {
		if id, err = r.JobID(ctx, req); err != nil {
			return c.refuse(ctx, asStatus(err, codes.InvalidArgument, "interceptors: job ID: "))
		}
	}
	key, err := c.fairnessKey(ctx)
	if err != nil {
		return c.refuse(ctx, err)
	}
	p, err := c.sched.Acquire(ctx, admission.Request{Type: typ, JobID: id, FairnessKey: key, PriorityOffset: c.crit.Offset(lvl)})
	if err != nil {
		return c.refuse(ctx, err)
	}
	return p, nil, nil
}

// refuse maps why a call was not admitted to the status error its client
// gets, and the trailer that goes with it.
func (c *config) refuse(ctx context.Context, err error) (*admission.Permit, metadata.MD, error) {
	st := c.status(ctx, err)
	if st.Code() == codes.OK { // nil too: a refusal cannot succeed
		st = DefaultStatus(ctx, err)
	}
	return nil, pushback(st), st.Err()
}

// fairnessKey derives the caller's key and bounds it, or returns the status
// error that rejects the call.
func (c *config) fairnessKey(ctx context.Context) (string, error) {
	key, err := c.key(ctx)
	if err == nil && key == "" {
		err = ErrNoKey
	}
	if err != nil {
		return "", asStatus(err, codes.InvalidArgument, "interceptors: cannot identify the caller: ")
	}
	return clientkey.Bound(key, c.maxKeyLen), nil
}

// asStatus returns err if it is a status error, and otherwise a status error
// of code whose message is prefix and err's message.
func asStatus(err error, code codes.Code, prefix string) error {
	if _, ok := status.FromError(err); ok {
		return err
	}
	return status.Error(code, prefix+err.Error())
}

// errHandlerReturned closes the admission of a FirstMessage stream whose
// handler returned before it was admitted.
var errHandlerReturned = errors.New("interceptors: handler returned")

// admitOnFirstMessage runs handler on a stream that is admitted when the
// handler first receives (or sends), and releases the seat when it returns.
func (c *config) admitOnFirstMessage(srv any, ss grpc.ServerStream, fullMethod string, r *Route, lvl criticality.Level, handler grpc.StreamHandler) error {
	ls := &lateStream{ServerStream: ss, c: c, method: fullMethod, route: r, level: lvl, decided: make(chan struct{})}
	defer ls.finish()
	err := handler(srv, ls)
	if ls.finish(); ls.err != nil && ls.err != errHandlerReturned {
		return ls.err // the client learns why it was refused, whatever the handler made of it
	}
	return err
}

// lateStream admits its call at the first RecvMsg that returns a message, or
// the first send. Receiving and sending may run in two goroutines at once:
// once decides which of them admits, and decided is closed when the outcome
// (permit, err) is set, so either may read it after that.
type lateStream struct {
	grpc.ServerStream
	c       *config
	method  string
	route   *Route
	level   criticality.Level
	once    sync.Once
	decided chan struct{}
	permit  *admission.Permit // set once; released by finish
	err     error             // set once: the rejection, or errHandlerReturned
	freed   bool              // finish has run; only the handler's goroutine touches it
}

func (s *lateStream) admit(req any) error {
	s.once.Do(func() {
		var trailer metadata.MD
		s.permit, trailer, s.err = s.c.admit(s.ServerStream.Context(), s.method, s.route, s.level, req)
		if s.err != nil {
			s.ServerStream.SetTrailer(trailer)
		}
		close(s.decided)
	})
	return s.err
}

// finish closes admission (waiting for one in progress) and releases the
// seat. It runs when the handler returns, and again from a defer if the
// handler panicked.
func (s *lateStream) finish() {
	if s.freed {
		return
	}
	s.freed = true
	s.once.Do(func() { s.err = errHandlerReturned; close(s.decided) })
	if s.permit != nil {
		s.permit.Release()
	}
}

func (s *lateStream) RecvMsg(m any) error {
	select {
	case <-s.decided:
		if s.err != nil {
			return s.err
		}
		return s.ServerStream.RecvMsg(m)
	default:
	}
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	return s.admit(m)
}

func (s *lateStream) SendMsg(m any) error {
	if err := s.admit(nil); err != nil {
		return err
	}
	return s.ServerStream.SendMsg(m)
}

func (s *lateStream) SendHeader(md metadata.MD) error {
	if err := s.admit(nil); err != nil {
		return err
	}
	return s.ServerStream.SendHeader(md)
}
