package main

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	"github.com/fairseat/fairseat/admission"
	"github.com/fairseat/fairseat/interceptors"
)

// Job types, which are also the names of the operations in the table.
const (
	jobClone  = "clone"
	jobFetch  = "fetch"
	jobRepack = "repack"
	jobPull   = "pull"
)

// clientMetadata is the metadata key in which the demo's clients say who
// they are. A real server would get this from a gateway that authenticated
// the caller; the demo believes it from loopback peers only.
const clientMetadata = "x-client"

// A gate is how the server makes work wait for a seat: requests through
// its gRPC interceptor, background jobs through submit. The demo runs the
// same load behind two gates and compares.
type gate interface {
	// interceptor admits a request, holds its seat while the handler runs
	// and releases it.
	interceptor() grpc.UnaryServerInterceptor
	// submit queues background work, which runs when it gets a seat.
	submit(op, repo string, fn func(context.Context) error) error
	// close stops background work, queued or running, and waits for it.
	close()
}

// semaphoreGate is what a server without fairseat typically does: one
// counting semaphore of the same capacity for everything. It is first come,
// first served, knows nothing about callers, and does not know that two
// writers of one repository must not run at once.
type semaphoreGate struct {
	sem    *semaphore.Weighted
	ctx    context.Context // of background work; cancelled by close
	cancel context.CancelFunc
	wg     sync.WaitGroup // background goroutines
}

func newSemaphoreGate(capacity int) *semaphoreGate {
	ctx, cancel := context.WithCancel(context.Background())
	return &semaphoreGate{sem: semaphore.NewWeighted(int64(capacity)), ctx: ctx, cancel: cancel}
}

func (g *semaphoreGate) interceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if err := g.sem.Acquire(ctx, 1); err != nil {
			return nil, status.FromContextError(err).Err()
		}
		defer g.sem.Release(1)
		return handler(ctx, req)
	}
}

func (g *semaphoreGate) submit(_, _ string, fn func(context.Context) error) error {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		if err := g.sem.Acquire(g.ctx, 1); err != nil {
			return // closed before it got a seat
		}
		defer g.sem.Release(1)
		_ = fn(g.ctx)
	}()
	return nil
}

func (g *semaphoreGate) close() {
	g.cancel()
	g.wg.Wait()
}

// fairseatGate puts the same server behind a fairseat scheduler.
type fairseatGate struct {
	sched *admission.Scheduler
}

func newFairseatGate(capacity int) (*fairseatGate, error) {
	sched, err := admission.New(admission.Config{
		Capacity: capacity,
		// Background jobs start below every request. After waiting 1s they
		// climb 10 levels every 500ms until they reach the requests' level
		// (Max), where they take turns with the callers by virtual time: so
		// maintenance is never starved by a busy foreground, and never
		// jumps ahead of it either.
		Aging: &admission.AgingConfig{
			Grace:    time.Second,
			Interval: 500 * time.Millisecond,
			Step:     10,
			Max:      admission.PriorityForeground,
		},
	}, admission.WithLogger(slog.New(slog.DiscardHandler))) // the demo stops with jobs still queued, on purpose
	if err != nil {
		return nil, err
	}
	types := []struct {
		name admission.JobType
		cfg  admission.JobTypeConfig
	}{
		{jobClone, admission.JobTypeConfig{
			DefaultCost:   300 * time.Millisecond, // until the scheduler has seen the repository
			ConflictGroup: "git",                  // never beside a repack or pull of the repository
			Access:        admission.Shared,       // clones of one repository run together
			Priority:      admission.PriorityForeground,
		}},
		// Fetch reads too: fetches and clones of one repository run
		// together, never beside a repack or pull of it.
		{jobFetch, admission.JobTypeConfig{
			DefaultCost:   100 * time.Millisecond,
			ConflictGroup: "git",
			Access:        admission.Shared,
			Priority:      admission.PriorityForeground,
		}},
		{jobRepack, admission.JobTypeConfig{
			DefaultCost:    time.Second,
			MaxConcurrency: 2,
			ConflictGroup:  "git",
			Priority:       admission.PriorityBackground,
		}},
		{jobPull, admission.JobTypeConfig{
			DefaultCost:    300 * time.Millisecond,
			MaxConcurrency: 2,
			ConflictGroup:  "git",
			Priority:       admission.PriorityBackground,
		}},
	}
	for _, t := range types {
		if err := sched.RegisterType(t.name, t.cfg); err != nil {
			return nil, err
		}
	}
	return &fairseatGate{sched: sched}, nil
}

func (g *fairseatGate) interceptor() grpc.UnaryServerInterceptor {
	loopback := interceptors.PeerIn(netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128"))
	return interceptors.UnaryServerInterceptor(g.sched,
		interceptors.WithRoutes(interceptors.Routes{
			cloneMethod: {Type: jobClone, JobID: interceptors.Field("value")},
			fetchMethod: {Type: jobFetch, JobID: interceptors.Field("value")},
		}),
		// Who is calling: the x-client metadata, believed from loopback
		// peers only (a real server would trust its gateway's addresses,
		// or use ClientCert or ClientIP).
		interceptors.WithKeyFunc(interceptors.TrustedMetadata(clientMetadata, loopback)),
	)
}

func (g *fairseatGate) submit(op, repo string, fn func(context.Context) error) error {
	return g.sched.Submit(admission.JobType(op), repo, fn)
}

// close closes the scheduler with a context that has already ended: the
// run is over, so background jobs still queued are dropped rather than
// drained, and those running are cancelled.
func (g *fairseatGate) close() {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := g.sched.Close(ctx); err != nil && !errors.Is(err, context.Canceled) {
		panic(err) // cannot happen: Close fails only with ctx's error
	}
}
