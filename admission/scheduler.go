package admission

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/fairseat/fairseat/internal/freelist"
	"github.com/fairseat/fairseat/internal/lengths"
	"github.com/fairseat/fairseat/internal/ringheap"
)

// Request is what a transport asks admission for: the job type of the route,
// the resource it works on, the caller's fairness key and how far the
// request's priority moves from its type's. The zero value is not valid (the
// type must be registered). It is a plain value.
type Request struct {
	Type        JobType
	JobID       string
	FairnessKey string
	// PriorityOffset moves the request's base priority from its type's
	// Priority by this much (a criticality: below for work that may wait,
	// above for work that must not), clamped into the type's tier — never
	// onto or past another registered type's priority, and, for a type that
	// ages, below Aging.Urgent. 0 = the type's priority. See the package
	// doc's "Priority offsets".
	PriorityOffset Priority
}

// A Scheduler admits requests and background jobs to a number of seats,
// fixed or adaptive (see the package doc). Create it with [New]; the zero value is not usable.
// It is safe for concurrent use.
type Scheduler struct {
	// The fields that every Acquire and Release touch come first, together
	// in six cache lines with cfg and counters: on a busy server a call
	// finds them cold (written last by another core), and each line is a
	// miss. (The layout had them over thirteen lines.)

	epoch   time.Time // New's clock reading; now() counts from it. Never changes.
	epochNs int64     // epoch in Unix nanoseconds. Never changes.
	obs     *observer // telemetry and events; otel.go says which of its fields mu guards. Never changes.

	mu sync.Mutex // guards the fields below, up to closeDone, except cfg (see there)

	latest  int64   // the latest instant a locked section has worked at (lockAt)
	inUse   int     // seats held == running.Len()
	queued  int     // queued and parked jobs, <= cfg.MaxQueue
	vsys    float64 // V_sys, never decreases
	seq     uint64  // last assigned job sequence number
	closing bool    // Close was called
	stopped bool    // Close is done: no timer is armed again and no timer function starts (afterFunc)
	dryRun  bool    // Config.DryRun, or SetDryRun
	// overSeated is set when SetCapacity or SetTypeLimit lowered a limit
	// below the jobs running under it (never pre-empted); the test-only
	// invariant checks then allow the excess.
	overSeated bool

	keys       keyTable                            // key state: active keys, and idle ones up to MaxKeys and KeyTTL
	costs      *simplelru.LRU[costKey, *costEntry] // learned estimates, bounded
	costsFront *costEntry                          // nil or the front (newest) of costs: looking it up or marking it used needs no map
	// costsFront is set by every call that makes an entry the newest (Get,
	// Add). An LRU drops its newest entry only when it holds no other, by
	// an eviction inside Add, and the caller of that Add then sets the new
	// front. It stays because it measured worth it: a caller that comes
	// back while nothing else arrived (an idle server, one client) finds
	// its estimate without the LRU's look-up and list update, 8 % of the
	// instructions of an uncontended Acquire+Release (benchmarks/
	// ADMISSION.md, session 7); a miss costs one comparison.
	resources map[ConflictGroup]resourceTable       // held, waited-on or idle resources, by group
	idleRes   int                                   // entries of resources with no holder and no waiter
	pressure  *pressureGate                         // nil = no gate
	adaptive  *adaptive                             // nil = fixed capacity (Config.Adaptive)
	running   ringheap.Heap[runKey, *job, runOrder] // running jobs by start tag (V_sys)
	freeJobs  freelist.List[job]                    // records of released foreground permits
	// cfg never changes after New, except Capacity, which SetCapacity
	// and adaptive capacity change under mu; its Keys are moved to policies. Its first two
	// lines are hot too.
	cfg      Config
	counters Counters

	// The rest is used less often; the fields after closeDone never change
	// after New.

	types map[JobType]*typeState
	tiers map[Priority]*tierState
	// ready lists the types with at least one flow in their heap; dispatch
	// looks at the top of each.
	ready []*typeState

	policies    map[string]*KeyPolicy                       // Config.Keys, then SetKeyPolicy; cfg.Keys is nil
	pausedKeys  map[string]*pause                           // PauseKey; keyState.paused mirrors it for tracked keys
	weights     map[string]float64                          // SetWeight overrides, by key
	pending     map[costKey]*job                            // queued background jobs of types with a DuplicatePolicy
	retrying    map[*job]bool                               // background jobs waiting out a retry backoff
	promos      ringheap.Queue[promoKey, *flow, promoOrder] // flows by next promotion instant
	lengths     lengths.Buckets[*keyState]                  // keys with queued jobs, by count (push-out)
	freeFlows   freelist.List[flow]                         // recycled flows, no jobs
	freeRes     freelist.List[resource]                     // recycled conflict entries, no holder or waiter
	freeWaiters freelist.List[jobQueue]                     // emptied waiter queues of resources

	bgQueued, bgRunning int           // background jobs queued and running
	bgIdle              chan struct{} // closed when closing and no background job is left
	closeDone           chan struct{} // closed when the first Close returns

	store      *costStoreState // WithCostStore; nil = none. coststore.go says which fields mu guards.
	log        *slog.Logger
	baseCtx    context.Context    // parent of background jobs' contexts
	cancelBase context.CancelFunc // cancels them at Close
	wg         sync.WaitGroup     // background job goroutines
	timers     sync.WaitGroup     // timer functions running (afterFunc); Close waits for them
}

// New returns a scheduler for cfg, or an error wrapping [ErrInvalidConfig]
// that names the bad field.
func New(cfg Config, opts ...Option) (*Scheduler, error) {
	c, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	o := buildOptions(opts)
	if err := validateCostStore(&o); err != nil {
		return nil, err
	}
	s := &Scheduler{
		cfg:         c,
		log:         o.logger,
		types:       make(map[JobType]*typeState),
		tiers:       make(map[Priority]*tierState),
		keys:        newKeyTable(),
		pausedKeys:  make(map[string]*pause),
		weights:     make(map[string]float64),
		pending:     make(map[costKey]*job),
		retrying:    make(map[*job]bool),
		resources:   make(map[ConflictGroup]resourceTable),
		freeFlows:   freelist.New[flow](maxFree, nil),
		freeRes:     freelist.New[resource](maxFree, nil),
		freeJobs:    freelist.New[job](maxFree, nil),
		freeWaiters: freelist.New[jobQueue](maxFree, nil),
	}
	if s.costs, err = simplelru.NewLRU[costKey, *costEntry](c.MaxCostEntries, s.onCostEvicted); err != nil {
		return nil, fmt.Errorf("%w: MaxCostEntries: %v", ErrInvalidConfig, err)
	}
	// Each configured key's policy is allocated once, and the state of the
	// key points at it (as every other key's at cfg.DefaultKey), so that a
	// key's state fits two cache lines.
	s.policies = make(map[string]*KeyPolicy, len(c.Keys))
	for name, p := range c.Keys {
		s.policies[name] = &p
	}
	s.cfg.Keys = nil
	s.dryRun = c.DryRun
	if c.Adaptive != nil {
		s.adaptive = newAdaptive(*c.Adaptive)
	}
	if c.Pressure != nil {
		s.pressure = &pressureGate{cfg: c.Pressure, timer: s.afterFunc(time.Hour, s.redispatch)}
		s.pressure.timer.Stop()
	}
	s.baseCtx, s.cancelBase = context.WithCancel(context.Background())
	s.epoch = time.Now()
	s.epochNs = s.epoch.UnixNano()
	s.obs = newObserver(s, &o)
	if o.costStore != nil {
		s.startCostStore(o.costStore, o.costEvery) // last: nothing after it may fail
	}
	return s, nil
}

// now reads the clock once and returns the instant in Unix nanoseconds.
//
// Every instant inside the scheduler is such an int64: arrivals, aging
// clocks, admissions, idle keys, cost entries, pauses, TTLs. It counts from
// New's reading (epochNs) on the monotonic clock alone, one clock read where
// time.Now takes two, so wall-clock steps never move it; it is the wall time
// only as of New. The scheduler only ever subtracts its own readings (which
// lockAt keeps from running backwards), and an int64 subtracts, compares
// and stores without the arithmetic of time.Time's wall and monotonic
// fields, which cost about a tenth of an uncontended Acquire and Release. timeAt turns an instant back into a
// time.Time where one leaves the package (events, Snapshot).
func (s *Scheduler) now() int64 { return s.epochNs + int64(time.Since(s.epoch)) }

// lockAt takes s.mu for a section whose caller read the clock, at now,
// just before, and returns the instant the section works at: now, or the
// latest instant a section has worked at if that is later. The clock is
// read before the lock, to keep the sections short, so a caller that
// waited for the lock (or was descheduled between the two) holds an
// instant older than those of the sections that ran in between. Taken as
// it was, time ran backwards inside the scheduler: a queued job thawed at
// an instant before the one it froze at had its aging clock moved back,
// and turned urgent, free to pass its tier cap, before its starvation
// bound; waits came out negative. In 90 s of TestSoakScheduler on two
// busy cores, 53 thaws ran back, by up to 44 ms, and 13,838 admissions
// of 15 million had a negative wait, down to -46 ms; with lockAt, none
// (benchmarks/ADMISSION.md, session 28). The instants the scheduler
// records now never decrease, so every difference of two of them is a
// time that passed; each is still no later than the clock when its
// section ran.
func (s *Scheduler) lockAt(now int64) int64 {
	s.mu.Lock()
	if now < s.latest {
		return s.latest
	}
	s.latest = now
	return now
}

// afterFunc is time.AfterFunc for the scheduler's timers (background TTLs
// and retry backoffs, pause deadlines, the pressure gate's re-check, the
// cost store's saves). f runs in the timer's goroutine, as with
// time.AfterFunc, but only while Close has not finished (stopped), and
// counted in timers, so that Close can wait for every timer function that
// is already running: none is still at work — reporting an expired job,
// say — when Close returns. timers.Add happens under mu and only before
// stopped is set, which Close does under mu before it waits, so no Add can
// race with the Wait.
func (s *Scheduler) afterFunc(d time.Duration, f func()) *time.Timer {
	return time.AfterFunc(d, func() {
		s.mu.Lock()
		if s.stopped {
			s.mu.Unlock()
			return
		}
		s.timers.Add(1)
		s.mu.Unlock()
		defer s.timers.Done()
		f()
	})
}

// timeAt is instant ns as a time.Time with a monotonic reading, as time.Now
// returns.
func (s *Scheduler) timeAt(ns int64) time.Time { return s.epoch.Add(time.Duration(ns - s.epochNs)) }

// sinceNs is the time from instant ns to instant now.
func sinceNs(now, ns int64) time.Duration { return time.Duration(now - ns) }

// RegisterType registers job type t. Registering the same type again with an
// identical config is a no-op; with a different config it is an error, as is
// a config that could never admit a job. It wraps [ErrInvalidConfig]. The
// type's estimates loaded from a [WithCostStore] store become its learned
// costs.
func (s *Scheduler) RegisterType(t JobType, c JobTypeConfig) error {
	c, err := c.validate(t, &s.cfg)
	if err != nil {
		return err
	}
	now := s.lockAt(s.now())
	defer s.mu.Unlock()
	if old, ok := s.types[t]; ok {
		if old.cfg != c {
			return fmt.Errorf("%w: job type %q is already registered with a different config (%+v, now %+v)", ErrInvalidConfig, t, old.cfg, c)
		}
		return nil
	}
	tier := s.tiers[c.Priority]
	if tier == nil {
		tier = &tierState{prio: c.Priority, cap: tierCap(&s.cfg, c.Priority)}
		s.tiers[c.Priority] = tier
	}
	var res resourceTable
	if g := c.ConflictGroup; g != "" {
		if res = s.resources[g]; res == nil {
			res = resourceTable{}
			s.resources[g] = res
		}
	}
	s.types[t] = &typeState{
		name:     t,
		res:      res,
		cfg:      c,
		limit:    c.MaxConcurrency,
		smithA:   c.OrderAging, // 0 unless Order is ShortestFirst
		aging:    agingOf(&s.cfg, c),
		tier:     tier,
		readyIdx: -1,
		obs:      s.obs.newTypeObs(t, c),
	}
	s.adoptCostsLocked(s.types[t], now)
	return nil
}

func (s *Scheduler) typeLocked(t JobType) (*typeState, error) {
	ts, ok := s.types[t]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownJobType, t)
	}
	return ts, nil
}

// maxFree bounds each list of records kept for reuse.
const maxFree = 1024

// newJobLocked returns a zeroed job record, reused when one is free.
func (s *Scheduler) newJobLocked() *job { return s.freeJobs.Get() }

// freeJobLocked recycles the record of a released foreground permit. The
// generation moves on, so the old Permit handle can no longer release it.
// Its wake-up channel is kept: a released permit's waiter took the only
// token (records of waiters that gave up are never recycled).
func (s *Scheduler) freeJobLocked(j *job) {
	*j = job{gen: j.gen + 1, ready: j.ready}
	s.freeJobs.Put(j)
}

// foldIdentifier bounds fairness keys and job IDs (see MaxIdentifierLen).
func foldIdentifier(s string) string {
	if len(s) <= MaxIdentifierLen {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// weightFor is the weight of key name with policy p: SetWeight's override,
// else the policy's.
func (s *Scheduler) weightFor(name string, p *KeyPolicy) float64 {
	if w, ok := s.weights[name]; ok {
		return w
	}
	return p.weight()
}

// policyFor is the KeyPolicy of a fairness key, shared with its state.
func (s *Scheduler) policyFor(name string) *KeyPolicy {
	if p, ok := s.policies[name]; ok {
		return p
	}
	return &s.cfg.DefaultKey
}

// estimateLocked is the learned cost of (t, id) in seconds, and its entry
// when one is tracked (possibly expired, in which case DefaultCost is used).
//
// Getting the LRU's newest entry again would move nothing, so a repeat of
// the last (type, job ID) seen skips the map: costsFront is that entry.
func (s *Scheduler) estimateLocked(t *typeState, id string, now int64) (float64, *costEntry) {
	e := s.costsFront
	if e == nil || e.key != (costKey{t.name, id}) {
		var ok bool
		if e, ok = s.costs.Get(costKey{t.name, id}); !ok {
			return t.cfg.DefaultCost.Seconds(), nil
		}
		s.costsFront = e
	}
	return e.estimate(t, now, s.cfg.CostTTL), e
}

func (e *costEntry) estimate(t *typeState, now int64, ttl time.Duration) float64 {
	if sinceNs(now, e.at) > ttl {
		return t.cfg.DefaultCost.Seconds()
	}
	return e.est
}

// learnLocked feeds j's observed cost into the EMA of (type, job ID). The
// entry found at admission is updated in place, so a release costs no lookup;
// if it was evicted since, the observation is lost, as any evicted state is.
func (s *Scheduler) learnLocked(j *job, observed float64, now int64) *costEntry {
	t, e := j.typ, j.cost
	if e == nil {
		k := costKey{t.name, j.jobID}
		var ok bool
		if e, ok = s.costs.Get(k); !ok {
			e = &costEntry{key: k, est: t.cfg.DefaultCost.Seconds(), at: now}
			s.costs.Add(k, e)
			s.costAddedLocked(t, e)
		}
		s.costsFront = e
	}
	a := s.cfg.CostAlpha
	prev, counted := e.est, e.at != 0 // for the cost metric: an evicted entry has a zero time
	e.est = a*observed + (1-a)*e.estimate(t, now, s.cfg.CostTTL)
	e.at = now
	s.costChangedLocked(t, e, prev, counted)
	return e
}
