package main

import (
	"context"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/fairseat/fairseat/internal/simserver"
)

// The demo's gRPC service, git.v1.Git, is written by hand in the shape
// protoc-gen-go-grpc generates, so that the demo needs no proto compiler.
// Every method takes a google.protobuf.StringValue whose field "value" names
// the repository (interceptors.Field("value") reads it) and returns
// google.protobuf.Empty.
const (
	cloneMethod = "/git.v1.Git/Clone"
	fetchMethod = "/git.v1.Git/Fetch"
)

var gitServiceDesc = grpc.ServiceDesc{
	ServiceName: "git.v1.Git",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{
		{MethodName: "Clone", Handler: unaryHandler(cloneMethod, (*gitServer).clone)},
		{MethodName: "Fetch", Handler: unaryHandler(fetchMethod, (*gitServer).fetch)},
	},
}

// unaryHandler adapts a method of gitServer to a grpc.MethodDesc handler:
// decode the request, then run the interceptor chain around the method.
func unaryHandler(fullMethod string, method func(*gitServer, context.Context, string) error) grpc.MethodHandler {
	return func(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
		req := new(wrapperspb.StringValue)
		if err := dec(req); err != nil {
			return nil, err
		}
		call := func(ctx context.Context, req any) (any, error) {
			repo := req.(*wrapperspb.StringValue).GetValue()
			if err := method(srv.(*gitServer), ctx, repo); err != nil {
				return nil, err
			}
			return &emptypb.Empty{}, nil
		}
		if interceptor == nil {
			return call(ctx, req)
		}
		return interceptor(ctx, req, &grpc.UnaryServerInfo{Server: srv, FullMethod: fullMethod}, call)
	}
}

// gitServer simulates a git cache. Its work is sleeping for as long as the
// repository is big, so the demo behaves the same with real and fake time.
// Clone and Fetch read a repository and may run together; Repack and Pull
// write it and must run alone on it. Nothing in the server enforces that;
// writers only counts how often it was broken, so that the demo can show
// which gate kept its promise.
type gitServer struct {
	rec     *recorder
	writers *writerCheck
	gate    gate // the admission under test: a plain semaphore or fairseat
	// backend, if set, is the disk clones run on (the slowdown phase); a
	// clone then takes longer when the disk has more than it can do.
	backend *simserver.Server
}

func (s *gitServer) clone(ctx context.Context, repo string) error {
	markStarted(ctx)
	defer s.writers.enter(repo, false)()
	if s.backend != nil {
		_, err := s.backend.ServeContext(ctx, cloneTime(repo))
		return err
	}
	return work(ctx, cloneTime(repo))
}

// fetch only reads the repository: fetches may run beside each other, but
// not beside a writer (fairseat: Access Shared in the "git" group).
func (s *gitServer) fetch(ctx context.Context, repo string) error {
	markStarted(ctx)
	defer s.writers.enter(repo, false)()
	return work(ctx, cloneTime(repo)/4)
}

// repack and pull are background maintenance, which the server itself
// queues (here when the load generator, playing the server's cron, asks).
func (s *gitServer) repack(repo string) {
	s.background(jobRepack, repo, 2*cloneTime(repo))
}

func (s *gitServer) pull(repo string) {
	s.background(jobPull, repo, cloneTime(repo)/2)
}

// background queues a maintenance job through the gate and records it.
func (s *gitServer) background(op, repo string, d time.Duration) {
	r := s.rec.arrive(clientBackground, op, repo)
	err := s.gate.submit(op, repo, func(ctx context.Context) error {
		s.rec.start(r)
		leave := s.writers.enter(repo, true)
		err := work(ctx, d)
		leave()
		s.rec.finish(r, err == nil)
		return err
	})
	if err != nil {
		s.rec.finish(r, false)
	}
}

// work stands for d of real work, cut short if ctx ends.
func work(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// writerCheck counts conflict violations: the times a writer (Repack, Pull)
// started on a repository while anything else ran on it, or a reader
// (Clone, Fetch) started while a writer ran on it. Readers beside readers
// are fine. It is safe for concurrent use.
type writerCheck struct {
	mu         sync.Mutex
	writers    map[string]int // writers running per repository
	readers    map[string]int // readers running per repository
	violations int
}

func newWriterCheck() *writerCheck {
	return &writerCheck{writers: make(map[string]int), readers: make(map[string]int)}
}

// enter records that a writer (write) or a reader started on repo and
// returns the function that records that it stopped.
func (w *writerCheck) enter(repo string, write bool) (leave func()) {
	count := w.readers
	if write {
		count = w.writers
	}
	w.mu.Lock()
	if w.writers[repo] > 0 || (write && w.readers[repo] > 0) {
		w.violations++
	}
	count[repo]++
	w.mu.Unlock()
	return func() {
		w.mu.Lock()
		count[repo]--
		w.mu.Unlock()
	}
}

func (w *writerCheck) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.violations
}
