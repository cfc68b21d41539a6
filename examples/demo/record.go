package main

import (
	"context"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// A record is what the demo knows about one request or background job.
type record struct {
	client  string // clientHeavy, ..., clientBackground
	op      string // jobClone, jobFetch, jobRepack, jobPull
	repo    string
	arrived time.Time // reached the server (a request) or was queued (a job)
	started time.Time // got its seat; zero if it never did
	ended   time.Time // finished, gave up or was refused; zero if still waiting
	done    bool      // ran to completion
}

// recorder collects the records of one run. It is safe for concurrent use;
// the records it hands out are changed only through its methods.
type recorder struct {
	mu      sync.Mutex
	records []*record // guarded by mu, and so are their fields
}

func (r *recorder) arrive(client, op, repo string) *record {
	rec := &record{client: client, op: op, repo: repo, arrived: time.Now()}
	r.mu.Lock()
	r.records = append(r.records, rec)
	r.mu.Unlock()
	return rec
}

func (r *recorder) start(rec *record) {
	now := time.Now()
	r.mu.Lock()
	rec.started = now
	r.mu.Unlock()
}

func (r *recorder) finish(rec *record, ok bool) {
	now := time.Now()
	r.mu.Lock()
	rec.ended = now
	rec.done = ok && !rec.started.IsZero()
	r.mu.Unlock()
}

// snapshot returns a copy of every record so far.
func (r *recorder) snapshot() []record {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]record, len(r.records))
	for i, rec := range r.records {
		out[i] = *rec
	}
	return out
}

// progress returns how many requests and jobs are done and how many are
// still waiting for a seat.
func (r *recorder) progress() (done, waiting int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rec := range r.records {
		switch {
		case rec.done:
			done++
		case rec.started.IsZero() && rec.ended.IsZero():
			waiting++
		}
	}
	return done, waiting
}

// The stopwatch interceptor runs first, before the gate, so it sees each
// request arrive; the handler marks when it got its seat (markStarted).
// It reads the caller's name from x-client only to label the record: the
// gate derives its own fairness key.
type startMarkKey struct{}

type startMark struct {
	r   *recorder
	rec *record
}

func (r *recorder) stopwatch() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		client := "unknown"
		if vs := metadata.ValueFromIncomingContext(ctx, clientMetadata); len(vs) > 0 {
			client = vs[0]
		}
		op := strings.ToLower(info.FullMethod[strings.LastIndex(info.FullMethod, "/")+1:])
		repo := ""
		if sv, ok := req.(*wrapperspb.StringValue); ok {
			repo = sv.GetValue()
		}
		rec := r.arrive(client, op, repo)
		resp, err := handler(context.WithValue(ctx, startMarkKey{}, startMark{r, rec}), req)
		r.finish(rec, err == nil)
		return resp, err
	}
}

// markStarted records that the request of ctx has its seat. Handlers call it
// first thing.
func markStarted(ctx context.Context) {
	if m, ok := ctx.Value(startMarkKey{}).(startMark); ok {
		m.r.start(m.rec)
	}
}
