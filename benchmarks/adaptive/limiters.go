package adaptive

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/failsafe-go/failsafe-go/adaptivelimiter"
	"github.com/platinummonkey/go-concurrency-limits/core"
	"github.com/platinummonkey/go-concurrency-limits/limit"

	"github.com/fairseat/fairseat/admission"
	"github.com/fairseat/fairseat/benchmarks/peer"
)

// A Limiter admits the simulated requests. Do waits for a seat, runs fn
// holding it and releases it; it returns an error without running fn when
// the limiter refuses the request. Limit is the limit now. Implementations
// are safe for concurrent use.
type Limiter interface {
	Do(ctx context.Context, key, jobID string, fn func()) error
	Limit() int
	Close() error
}

// An Entry is one limiter under comparison.
type Entry struct {
	Name  string
	Fixed bool // a fixed capacity, for the goal's "best fixed"
	Peer  bool // another library
	// Oracle marks the references that know the true capacity (Oracle):
	// no limiter that holds to C can do better, so they measure what is
	// left to gain. Late is how long after a change of C the reference
	// follows it (0 for the oracle itself).
	Oracle bool
	Late   time.Duration
	New    func() (Limiter, error)
}

// Adaptive limiters start at Initial seats between 1 and Max: the peers'
// own defaults (Gradient2's, Vegas's and failsafe-go's initial limit is
// 20), the same for all.
const (
	Initial = 20
	Max     = 200
)

// Entries are the limiters of a run of sc: fixed capacities too low (c/2),
// right (c) and too high (4c), the oracle, fairseat adaptive,
// go-concurrency-limits' Gradient2 and Vegas, failsafe-go's adaptive
// limiter.
func Entries(sc Scenario) []Entry {
	c := sc.C
	fixed := func(n int) func() (Limiter, error) {
		return func() (Limiter, error) { return newFairseat(admission.Config{Capacity: n}) }
	}
	return []Entry{
		{Name: "fixed c/2", Fixed: true, New: fixed(c / 2)},
		{Name: "fixed c", Fixed: true, New: fixed(c)},
		{Name: "fixed 4c", Fixed: true, New: fixed(4 * c)},
		Oracle(sc, 0),
		Oracle(sc, OracleLate),
		{Name: "fairseat adaptive", New: func() (Limiter, error) {
			return newFairseat(admission.Config{Adaptive: &admission.AdaptiveConfig{Min: 1, Max: Max, Initial: Initial}})
		}},
		{Name: "gcl gradient2", Peer: true, New: func() (Limiter, error) {
			// NewDefaultGradient2Limit's parameters, but a minimum of 1
			// (its default minimum is 20, above this server's capacity).
			l, err := limit.NewGradient2Limit("bench", Initial, Max, 1, func(int) int { return 4 }, 0.2, 600,
				limit.NoopLimitLogger{}, core.EmptyMetricRegistryInstance)
			if err != nil {
				return nil, err
			}
			return newGCL(l)
		}},
		{Name: "gcl vegas", Peer: true, New: func() (Limiter, error) {
			return newGCL(limit.NewDefaultVegasLimitWithLimit("bench", Initial, limit.NoopLimitLogger{}, core.EmptyMetricRegistryInstance))
		}},
		{Name: "failsafe-go adaptive", Peer: true, New: func() (Limiter, error) {
			return &failsafe{adaptivelimiter.NewBuilder[any]().WithLimits(1, Max, Initial).Build()}, nil
		}},
	}
}

// Oracle is fairseat with a fixed capacity of Tolerance·C, rounded, set
// anew late after each instant sc changes the true capacity C. With late
// 0 ("oracle") it is where fairseat adaptive settles, reached with no delay
// and no probe: what a limiter that holds to C, and knew C, would do; a
// limiter that does better on goodput did work faster than C allows (the
// simulated server fixes a job's seat time when it starts, so a job started
// just before the load rises is not slowed by it). With late OracleLate it
// is what such a limiter could at best do if it learned C from its
// completions, as fairseat adaptive and the peers do.
func Oracle(sc Scenario, late time.Duration) Entry {
	seats := func(c int) int { return int(math.Round(admission.DefaultAdaptiveTolerance * float64(c))) }
	name := "oracle"
	if late > 0 {
		name = fmt.Sprintf("oracle %v late", late)
	}
	return Entry{Name: name, Oracle: true, Late: late, New: func() (Limiter, error) {
		l, err := newFairseat(admission.Config{Capacity: seats(sc.C)})
		if err != nil || sc.SlowTo == 0 {
			return l, err
		}
		s := l.(fairseatLimiter).s
		go func() { // Run starts its clock at the same instant
			time.Sleep(sc.SlowFrom + late)
			_ = s.SetCapacity(seats(sc.CapacityAt(sc.SlowFrom)))
			time.Sleep(sc.SlowTo - sc.SlowFrom)
			_ = s.SetCapacity(seats(sc.CapacityAt(sc.SlowTo))) // fails harmlessly if the run has ended
		}()
		return l, nil
	}}
}

// OracleLate is how late the second oracle follows a change of the true
// capacity: about when the first completions of jobs started after the
// change reach a limiter. The light jobs take 30 to 70 ms, the first to
// start after the change waits for a seat, and the jobs started before it
// keep completing at the old speed for up to 340 ms: in 9 runs of the slow
// disk, the first completions that read the recovered server lowered
// fairseat adaptive's short-term inflation 50 to 90 ms after C doubled,
// and one or two completions are not yet a measurement.
const OracleLate = 100 * time.Millisecond

// jobType is the one job type of the fairseat limiters: foreground, no
// aging (fairness alone serves requests), the tier cap lifted to Max.
const jobType admission.JobType = "job"

// fairseatLimiter is admission.Scheduler, fixed or adaptive, with the
// fairness key and job ID of each request.
type fairseatLimiter struct{ s *admission.Scheduler }

func newFairseat(cfg admission.Config) (Limiter, error) {
	cfg.TierLimits = map[admission.Priority]int{admission.PriorityForeground: max(Max, cfg.Capacity)}
	cfg.MaxQueue = 1 << 20 // waits rather than sheds, as every limiter here
	s, err := admission.New(cfg)
	if err != nil {
		return nil, err
	}
	if err := s.RegisterType(jobType, admission.JobTypeConfig{Priority: admission.PriorityForeground, NoAging: true,
		DefaultCost: 50 * time.Millisecond}); err != nil {
		return nil, err
	}
	return fairseatLimiter{s}, nil
}

func (l fairseatLimiter) Do(ctx context.Context, key, jobID string, fn func()) error {
	p, err := l.s.Acquire(ctx, admission.Request{Type: jobType, JobID: jobID, FairnessKey: key})
	if err != nil {
		return err
	}
	defer p.Release()
	fn()
	return nil
}

func (l fairseatLimiter) Limit() int { return l.s.Snapshot().Capacity }

// Probing says whether a probe has halved the adaptive limit.
func (l fairseatLimiter) Probing() bool {
	a := l.s.Snapshot().Adaptive
	return a != nil && a.Probing
}

func (l fairseatLimiter) Close() error { return l.s.Close(context.Background()) }

// gclLimiter is go-concurrency-limits (peer.AdaptiveGCL): no keys, no job
// IDs, a FIFO backlog.
type gclLimiter struct{ g *peer.AdaptiveGCL }

func newGCL(l core.Limit) (Limiter, error) {
	g, err := peer.NewAdaptiveGCL(l, Initial)
	if err != nil {
		return nil, err
	}
	return gclLimiter{g}, nil
}

func (l gclLimiter) Do(ctx context.Context, key, _ string, fn func()) error {
	return l.g.Do(ctx, key, fn)
}
func (l gclLimiter) Limit() int   { return l.g.Limit() }
func (l gclLimiter) Close() error { return l.g.Close() }

// failsafe is failsafe-go's adaptive limiter without queueing options: its
// AcquirePermit waits on a semaphore sized by the limit.
type failsafe struct {
	l adaptivelimiter.AdaptiveLimiter[any]
}

func (f *failsafe) Do(ctx context.Context, _, _ string, fn func()) error {
	p, err := f.l.AcquirePermit(ctx)
	if err != nil {
		return err
	}
	fn()
	p.Record()
	return nil
}

func (f *failsafe) Limit() int   { return f.l.Limit() }
func (f *failsafe) Close() error { return nil }
