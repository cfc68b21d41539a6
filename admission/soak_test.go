package admission

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fairseat/fairseat/internal/soaktest"
)

// TestSoakScheduler drives one scheduler with random load, faults and
// runtime control from many goroutines, on the wall clock, and checks the
// invariants from the jobs' own counters (soak_ledger_test.go), then that
// every call and submission had exactly one outcome, that nothing is left
// running or queued after Close, and that key churn leaves the heap
// bounded. It runs for a few seconds inside go test, and as long as
// FAIRSEAT_SOAK says:
//
//	FAIRSEAT_SOAK=10m go test -race -run '^TestSoakScheduler$' -v -timeout 30m ./admission
//
// Nothing it asserts depends on timing: a slow machine runs fewer
// operations, never a different verdict.
func TestSoakScheduler(t *testing.T) {
	soakScheduler(t, false)
}

// TestSoakSchedulerAdaptive is TestSoakScheduler with adaptive capacity
// (soakAdaptive): the controller moves the capacity on its own, probes,
// sheds by queue delay and backs off under a pressure source the control
// goroutine swings, while SetAdaptiveBounds moves its bounds. The ledger
// cannot see the controller's changes when they happen (events arrive
// later), so it holds the seats in use to the bound the controller cannot
// pass, Max, kept as a history like a capacity set by hand; and each
// snapshot must show the capacity within its own bounds. The jobs hold
// their seats from no time at all to 2 ms, so the controller meets noise
// too.
//
//	FAIRSEAT_SOAK=10m go test -race -run SoakSchedulerAdaptive -v -timeout 30m ./admission
func TestSoakSchedulerAdaptive(t *testing.T) {
	soakScheduler(t, true)
}

func soakScheduler(t *testing.T, adaptive bool) {
	d := soaktest.Duration(t, time.Second)
	seed := soaktest.Seed(t)
	runtime.GC()
	heap0 := heapInUse()
	k := newSoak(t, seed, adaptive)
	took := k.run(d)
	k.check()
	runtime.GC()
	heap1 := heapInUse()
	runtime.KeepAlive(k.s)
	k.checkHeap(heap0, heap1)
	name := "admission (scheduler)"
	if adaptive {
		name = "admission (scheduler, adaptive capacity)"
	}
	k.sum.Log(t, name, took)
	k.sum.Check(t)
}

// The soak's configuration: seats, tiers and queues small enough that every
// limit binds, aging quick enough that background work turns urgent.
const (
	soakMaxKeys  = 1000
	soakMaxCosts = 500
	soakChurn    = 100_000 // distinct fairness keys at the least
	soakFgWorker = 10
	soakBgWorker = 2
	soakChurners = 4
)

var soakTiers = map[Priority]int{40: 6, 20: 2, 10: 3}

var soakAging = AgingConfig{Grace: 10 * time.Millisecond, Interval: 10 * time.Millisecond, Step: 4, Urgent: 30}

var soakTypes = map[JobType]JobTypeConfig{
	"read":   {Priority: 40, NoAging: true, ConflictGroup: "repo", Access: Shared, MaxWait: 50 * time.Millisecond, DefaultCost: time.Millisecond},
	"write":  {Priority: 40, NoAging: true, ConflictGroup: "repo", MaxConcurrency: 3, MaxWait: 100 * time.Millisecond, DefaultCost: 2 * time.Millisecond},
	"api":    {Priority: 40, NoAging: true, Order: ShortestFirst, DefaultCost: time.Millisecond},
	"index":  {Priority: 20, MaxWait: 200 * time.Millisecond, Retry: RetryPolicy{MaxAttempts: 3, Initial: 2 * time.Millisecond, Max: 8 * time.Millisecond}},
	"repack": {Priority: 10, ConflictGroup: "repo", MaxConcurrency: 2, Duplicates: Coalesce, MaxWait: 300 * time.Millisecond, Retry: RetryPolicy{MaxAttempts: 3, Initial: 2 * time.Millisecond, Max: 8 * time.Millisecond}},
	"gc":     {Priority: 10, ConflictGroup: "repo", Access: Shared, Duplicates: Supersede, Retry: RetryPolicy{MaxAttempts: 2, Initial: time.Millisecond}},
}

var (
	soakFgTypes   = []JobType{"read", "read", "write", "api", "api", "index"}
	soakBgTypes   = []JobType{"index", "repack", "repack", "gc", "gc"}
	soakNamedKeys = []string{"tenant-a", "tenant-b"}
	soakAllTypes  = []JobType{"read", "write", "api", "index", "repack", "gc"}
)

// soakAdaptive is the adaptive capacity of TestSoakSchedulerAdaptive:
// bounds around the fixed soak's 8 seats (the control goroutine moves them
// within [soakMinLow, soakMaxHigh]), probes every few rounds, and a
// queue-delay target the soak's short jobs pass now and then. Min stays at
// least 2: SetKeyPolicy gives each named key up to one MinSeats, which must
// fit in it.
var soakAdaptive = AdaptiveConfig{Min: soakMinLow, Max: soakMaxHigh, ProbeInterval: minProbeEvery, QueueDelayTarget: 2 * time.Millisecond, QueueDelayInterval: 10 * time.Millisecond}

const (
	soakMinLow  = 2
	soakMaxHigh = 12
)

// soakConfig is the soak's configuration; with adaptive, soakAdaptive and
// a pressure gate reading pressure (which holds background work, priority
// 10, from 0.8, and lowers the adaptive limit from 1).
func soakConfig(adaptive bool, pressure PressureSource) Config {
	c := Config{
		Capacity:   8,
		TierLimits: soakTiers,
		Aging:      &soakAging,
		Keys: map[string]KeyPolicy{
			"":         {Weight: 2},
			"tenant-a": {Weight: 3, MinSeats: 1},
			"tenant-b": {MaxInFlight: 1, MaxQueued: 30},
		},
		DefaultKey:     KeyPolicy{MaxInFlight: 2, MaxQueued: 8},
		MaxQueue:       150,
		MaxKeys:        soakMaxKeys,
		KeyTTL:         200 * time.Millisecond,
		MaxCostEntries: soakMaxCosts,
		CostTTL:        time.Second,
	}
	if adaptive {
		a := soakAdaptive
		c.Adaptive = &a
		c.Pressure = &PressureConfig{Source: pressure, Threshold: 0.8, MinPriority: 10, Interval: 5 * time.Millisecond}
	}
	return c
}

// Errors and panics the soak's jobs inject.
var errSoakFn = errors.New("soak: job failed")

type soakPanic struct{}

// soak is one run. Its counters are atomics or guarded by mu.
type soak struct {
	t      *testing.T
	seed   uint64
	s      *Scheduler
	ledger *soakLedger
	sum    soaktest.Summary

	adaptive bool          // adaptive capacity (TestSoakSchedulerAdaptive)
	pressure atomic.Uint64 // with adaptive: the pressure source's reading, math.Float64bits
	store    *soakStore    // with adaptive: the cost store, which keeps the limit

	stop   atomic.Bool // workers finish their operation and return
	quiet  atomic.Bool // workers other than the churners idle
	closed atomic.Bool // Close has been called

	keys      atomic.Int64 // fresh fairness keys used (churn)
	started   atomic.Int64 // foreground calls made
	returned  atomic.Int64 // foreground calls returned
	completed atomic.Int64 // seats held and given back (foreground and background)
	events    atomic.Int64

	mu       sync.Mutex
	outcomes map[string]int64         // foreground and Submit results, by kind
	pairs    map[costKey]*soakTally   // background accounting by (type, job ID)
	notRun   map[string]int64         // background jobs reported not to run, by reason
	failures map[bool]int64           // background failures logged, by "will retry"
	fails    int64                    // background attempts that returned an error or panicked
	byKind   map[EventKind]int64      // events delivered
	byReason map[CapacityReason]int64 // EventCapacityChanged delivered, by reason
}

// soakTally accounts for the background jobs of one (type, job ID): each
// accepted submission and each retry queues the job once ("placement"),
// and each placement ends in a run or a report that it did not run, or is
// absorbed by a queued duplicate (Coalesced, which reports nothing).
type soakTally struct {
	accepted, retries, runs, notRun int64
}

// soakSub is one background submission.
type soakSub struct {
	typ      JobType
	id       string
	calls    atomic.Int32
	running  atomic.Bool
	rejected atomic.Bool
	from     atomic.Uint64 // ledger clock at submission, then at each attempt's end
	first    time.Time
	maxCalls int32
}

func newSoak(t *testing.T, seed uint64, adaptive bool) *soak {
	k := &soak{
		t: t, seed: seed, adaptive: adaptive,
		outcomes: map[string]int64{}, pairs: map[costKey]*soakTally{},
		notRun: map[string]int64{}, failures: map[bool]int64{}, byKind: map[EventKind]int64{}, byReason: map[CapacityReason]int64{},
	}
	cfg := soakConfig(adaptive, PressureFunc(func() float64 { return math.Float64frombits(k.pressure.Load()) }))
	opts := []Option{WithLogger(slog.New(&soakLog{k: k})), WithEventHandler(k.event)}
	if adaptive {
		// Saves every 20 ms race the controller; the run starts at a
		// loaded limit, not at Initial.
		k.store = &soakStore{}
		opts = append(opts, WithCostStore(k.store, 20*time.Millisecond))
	}
	s, err := New(cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if adaptive && s.Snapshot().Capacity != soakLoadedLimit {
		t.Fatalf("soak: started at %d seats, not at the loaded limit %d", s.Snapshot().Capacity, soakLoadedLimit)
	}
	for _, name := range soakAllTypes {
		if err := s.RegisterType(name, soakTypes[name]); err != nil {
			t.Fatal(err)
		}
	}
	k.s = s
	l := &soakLedger{
		tierCap:    soakTiers,
		urgentIn:   soakUrgentAfter,
		report:     func(format string, args ...any) { k.sum.Violationf(t, format, args...) },
		diag:       func() string { return soakDiag(s.Snapshot()) },
		live:       map[*soakRun]bool{},
		capacity:   newLimitLog(s.Snapshot().Capacity),
		typeLimit:  map[JobType]*limitLog{},
		keyLimit:   map[string]*limitLog{},
		defaultKey: cfg.DefaultKey.MaxInFlight,
		dry:        newLimitLog(0),
		typePaused: map[JobType]*limitLog{},
		keyPaused:  map[string]*limitLog{},
		byType:     map[JobType]int{},
		byTier:     map[Priority]int{},
		urgentBy:   map[Priority]int{},
		byKey:      map[string]int{},
		byRes:      map[string][2]int{},
	}
	for _, name := range soakAllTypes {
		l.typeLimit[name] = newLimitLog(limitOf(soakTypes[name].MaxConcurrency))
		l.typePaused[name] = newLimitLog(0)
	}
	for name, p := range cfg.Keys {
		l.keyLimit[name] = newLimitLog(limitOf(p.MaxInFlight))
		l.keyPaused[name] = newLimitLog(0)
	}
	if adaptive {
		l.capacity = newLimitLog(cfg.Adaptive.Max) // the controller stays within it
	}
	k.ledger = l
	return k
}

// soakDiag is the part of a snapshot a violation's report shows.
func soakDiag(snap Snapshot) string {
	var b strings.Builder
	fmt.Fprintf(&b, "in use %d of %d, dry-run %v, %d urgent admissions;", snap.InUse, snap.Capacity, snap.DryRun, snap.Counters.UrgentAdmissions)
	for _, t := range snap.Tiers {
		fmt.Fprintf(&b, " tier %d: %d running (limit %d), %d queued;", t.Priority, t.Running, t.Limit, t.Queued)
	}
	return b.String()
}

// limitOf turns a cap where 0 means none into a number to compare with.
func limitOf(n int) int {
	if n == 0 {
		return math.MaxInt
	}
	return n
}

// soakUrgentAfter is the starvation bound of a job of base priority p (its
// own, with WithPriority): it cannot be urgent sooner. Negative: never (the
// foreground tier does not age).
func soakUrgentAfter(p Priority) time.Duration {
	if p >= 40 {
		return -1
	}
	a := soakAging
	n := (a.Urgent - p + a.Step - 1) / a.Step
	return a.Grace + time.Duration(n)*a.Interval
}

// run runs the load for d, then closes the scheduler while it is still
// under load, and waits for every goroutine. It returns how long it ran.
func (k *soak) run(d time.Duration) time.Duration {
	start := time.Now()
	var wg sync.WaitGroup
	for i := range soakFgWorker {
		wg.Go(func() { k.loop(i, k.foreground) })
	}
	for i := range soakBgWorker {
		wg.Go(func() { k.loop(100+i, k.background) })
	}
	var churn sync.WaitGroup
	for i := range soakChurners {
		churn.Go(func() { k.churn(i) })
	}
	ctl := make(chan struct{})
	go func() {
		defer close(ctl)
		rng := rand.New(rand.NewPCG(k.seed, 200))
		for !k.stop.Load() {
			k.control(rng)
		}
	}()

	time.Sleep(d)
	if k.keys.Load() < soakChurn {
		// The short run reaches the churn sooner with the seats to itself.
		k.quiet.Store(true)
		for k.keys.Load() < soakChurn {
			time.Sleep(10 * time.Millisecond)
		}
		k.quiet.Store(false)
		time.Sleep(50 * time.Millisecond)
	}
	// Close under load: workers keep calling until Close has begun.
	rng := rand.New(rand.NewPCG(k.seed, 300))
	closeCtx, cancel := context.WithTimeout(context.Background(), []time.Duration{2 * time.Millisecond, 10 * time.Second}[rng.IntN(2)])
	defer cancel()
	k.closed.Store(true)
	k.sum.Faults.Add(1)
	err := k.s.Close(closeCtx)
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		k.sum.Violationf(k.t, "Close: %v", err)
	}
	k.stop.Store(true)
	done := make(chan struct{})
	go func() { wg.Wait(); churn.Wait(); <-ctl; close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		buf := make([]byte, 1<<20)
		k.t.Fatalf("workers still blocked a minute after Close (a call that never returned):\n%s", buf[:runtime.Stack(buf, true)])
	}
	return time.Since(start)
}

// loop runs op with worker i's random source until the soak stops.
func (k *soak) loop(i int, op func(rng *rand.Rand)) {
	rng := rand.New(rand.NewPCG(k.seed, uint64(i)))
	for !k.stop.Load() {
		if k.quiet.Load() {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		op(rng)
	}
}

// churn admits requests from fresh fairness keys, one after another.
func (k *soak) churn(i int) {
	for n := 0; !k.stop.Load(); n++ {
		key := "churn-" + strconv.Itoa(i) + "-" + strconv.Itoa(n)
		k.keys.Add(1)
		r := k.newRun("api", key, "")
		k.started.Add(1)
		p, err := k.s.Acquire(context.Background(), Request{Type: "api", FairnessKey: key})
		k.returned.Add(1)
		k.sum.Operations.Add(1)
		if err != nil {
			k.outcome(err, true)
			if k.closed.Load() {
				return
			}
			continue
		}
		k.hold(r, nil)
		p.Release()
		k.completed.Add(1)
	}
}

func (k *soak) newRun(typ JobType, key, id string) *soakRun {
	cfg := soakTypes[typ]
	r := &soakRun{typ: typ, tier: cfg.Priority, prio: cfg.Priority, key: foldIdentifier(key), excl: cfg.Access == Exclusive,
		from: k.ledger.tick(), first: time.Now()}
	if cfg.ConflictGroup != "" {
		r.res = foldIdentifier(id)
	}
	return r
}

// hold puts r in the ledger, runs work (if any) and takes r out, even if
// work panics.
func (k *soak) hold(r *soakRun, work func()) {
	if b := soakUrgentAfter(r.prio); b >= 0 && time.Since(r.first) >= b {
		r.urgent = true
	}
	k.ledger.start(r)
	defer k.ledger.end(r)
	if work != nil {
		work()
	}
}

// pickKey draws a fairness key: fresh ones (churn), a hot set, the named
// tenants, and keys longer than MaxIdentifierLen or with unprintable bytes.
func (k *soak) pickKey(rng *rand.Rand) string {
	switch n := rng.IntN(20); {
	case n < 7:
		return fmt.Sprintf("fresh-%d", k.keys.Add(1))
	case n < 13:
		return fmt.Sprintf("hot-%02d", rng.IntN(40))
	case n < 17:
		return soakNamedKeys[rng.IntN(2)]
	case n < 19:
		return strings.Repeat("L", MaxIdentifierLen-1+rng.IntN(3)) + fmt.Sprint(rng.IntN(4))
	default:
		return fmt.Sprintf("bin-\x00\xff%c", rune(rng.IntN(0x80)))
	}
}

// pickID draws a job ID: two dozen resources, now and then a fresh one or
// one past MaxIdentifierLen.
func pickID(rng *rand.Rand) string {
	switch n := rng.IntN(20); {
	case n < 17:
		return fmt.Sprintf("r%02d", rng.IntN(24))
	case n < 19:
		return fmt.Sprintf("u%d", rng.Uint32())
	default:
		return strings.Repeat("x", MaxIdentifierLen+rng.IntN(2))
	}
}

// pickCtx draws a caller's context: none, a deadline, a cancellation at a
// random moment, or one already cancelled.
func (k *soak) pickCtx(rng *rand.Rand) (context.Context, context.CancelFunc) {
	switch n := rng.IntN(10); {
	case n < 5:
		return context.Background(), func() {}
	case n < 7:
		k.sum.Faults.Add(1)
		return context.WithTimeout(context.Background(), time.Duration(rng.IntN(15_000))*time.Microsecond)
	case n < 9:
		k.sum.Faults.Add(1)
		ctx, cancel := context.WithCancel(context.Background())
		t := time.AfterFunc(time.Duration(rng.IntN(10_000))*time.Microsecond, cancel)
		return ctx, func() { t.Stop(); cancel() }
	default:
		k.sum.Faults.Add(1)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		return ctx, cancel
	}
}

func holdTime(rng *rand.Rand) time.Duration { return time.Duration(rng.IntN(2000)) * time.Microsecond }

// foreground makes one Acquire or RunSync call.
func (k *soak) foreground(rng *rand.Rand) {
	typ := soakFgTypes[rng.IntN(len(soakFgTypes))]
	key, id := k.pickKey(rng), pickID(rng)
	ctx, cancel := k.pickCtx(rng)
	defer cancel()
	r := k.newRun(typ, key, id)
	k.started.Add(1)
	defer k.returned.Add(1)
	k.sum.Operations.Add(1)
	hold := holdTime(rng)
	if rng.IntN(2) == 0 {
		p, err := k.s.Acquire(ctx, Request{Type: typ, JobID: id, FairnessKey: key})
		if err != nil {
			k.outcome(err, true)
			return
		}
		k.hold(r, func() { time.Sleep(hold) }) // past ctx's deadline, if it has one
		p.Release()
		k.completed.Add(1)
		k.count("ran")
		return
	}
	behaviour := rng.IntN(20)
	var ran atomic.Int32
	fn := func(ctx context.Context) error {
		ran.Add(1)
		var err error
		k.hold(r, func() {
			switch {
			case behaviour < 11:
				time.Sleep(hold)
			case behaviour < 14:
				err = errSoakFn
			case behaviour < 16:
				panic(soakPanic{})
			default: // blocks until its deadline or cancellation, then a little past it
				select {
				case <-ctx.Done():
				case <-time.After(30 * time.Millisecond):
				}
				time.Sleep(time.Millisecond)
				err = fmt.Errorf("%w: %w", errSoakFn, ctx.Err())
			}
		})
		return err
	}
	if behaviour >= 11 {
		k.sum.Faults.Add(1)
	}
	err, panicked := runSyncRecovering(k.s, ctx, typ, id, key, fn)
	n := ran.Load()
	switch {
	case panicked:
		if behaviour < 14 || behaviour >= 16 || n != 1 {
			k.sum.Violationf(k.t, "RunSync panicked with behaviour %d, fn ran %d times", behaviour, n)
		}
	case err == nil || errors.Is(err, errSoakFn):
		if n != 1 {
			k.sum.Lostf(k.t, "RunSync returned %v but fn ran %d times", err, n)
		}
	default:
		if n != 0 {
			k.sum.Lostf(k.t, "RunSync returned admission error %v after fn ran %d times", err, n)
		}
		k.outcome(err, true)
		return
	}
	k.completed.Add(1)
	k.count("ran")
}

// runSyncRecovering calls RunSync and recovers the soak's own panic.
func runSyncRecovering(s *Scheduler, ctx context.Context, typ JobType, id, key string, fn func(context.Context) error) (err error, panicked bool) {
	defer func() {
		if v := recover(); v != nil {
			if _, ok := v.(soakPanic); !ok {
				panic(v)
			}
			panicked = true
		}
	}()
	return s.RunSync(ctx, typ, id, key, fn), false
}

// outcome counts an admission error by kind; any other error is a
// violation.
func (k *soak) outcome(err error, foreground bool) {
	kind := ""
	switch {
	case errors.Is(err, context.Canceled):
		kind = "cancelled"
	case errors.Is(err, context.DeadlineExceeded):
		kind = "deadline"
	case errors.Is(err, ErrQueueFull):
		kind = "queue full"
	case errors.Is(err, ErrWaitTimeout) && foreground:
		kind = "wait timeout"
	case errors.Is(err, ErrClosed):
		kind = "closed"
	case errors.Is(err, ErrOverloaded) && foreground && k.adaptive:
		kind = "overloaded"
	default:
		k.sum.Violationf(k.t, "unexpected error (foreground %v): %v", foreground, err)
		return
	}
	var rej *RejectedError
	if kind != "cancelled" && kind != "deadline" && !errors.As(err, &rej) {
		k.sum.Violationf(k.t, "rejection %v is not a *RejectedError", err)
	}
	k.count(kind)
}

func (k *soak) count(kind string) {
	k.mu.Lock()
	k.outcomes[kind]++
	k.mu.Unlock()
}

func (k *soak) tally(typ JobType, id string) *soakTally {
	k.mu.Lock()
	defer k.mu.Unlock()
	key := costKey{typ, foldIdentifier(id)}
	p := k.pairs[key]
	if p == nil {
		p = &soakTally{}
		k.pairs[key] = p
	}
	return p
}

// background submits one background job.
func (k *soak) background(rng *rand.Rand) {
	typ := soakBgTypes[rng.IntN(len(soakBgTypes))]
	cfg := soakTypes[typ]
	id := fmt.Sprintf("r%02d", rng.IntN(24))
	if cfg.ConflictGroup == "" {
		id = fmt.Sprintf("idx-%d", rng.IntN(8))
	}
	var opts []SubmitOption
	key := ""
	if rng.IntN(4) == 0 {
		opts = append(opts, WithTTL(time.Duration(1+rng.IntN(50))*time.Millisecond))
	}
	prio := cfg.Priority
	if rng.IntN(4) == 0 {
		prio += Priority(rng.IntN(9) - 4)
		if prio > 20 || (cfg.Priority == 20 && prio < 16) {
			prio = cfg.Priority
		}
		opts = append(opts, WithPriority(prio))
	}
	if rng.IntN(3) == 0 {
		key = k.pickKey(rng)
		opts = append(opts, WithFairnessKey(key))
	}
	sub := &soakSub{typ: typ, id: id, first: time.Now(), maxCalls: int32(max(1, cfg.Retry.MaxAttempts))}
	sub.from.Store(k.ledger.tick())
	pair := k.tally(typ, id)
	behaviours := [3]int{rng.IntN(20), rng.IntN(20), rng.IntN(20)} // per attempt
	hold := holdTime(rng)
	fn := func(ctx context.Context) error {
		if sub.running.Swap(true) {
			k.sum.Violationf(k.t, "a submission of %s/%s runs twice at once", typ, id)
		}
		defer sub.running.Store(false)
		if sub.rejected.Load() {
			k.sum.Lostf(k.t, "a rejected submission of %s/%s ran", typ, id)
		}
		n := sub.calls.Add(1)
		if n > sub.maxCalls {
			k.sum.Violationf(k.t, "%s/%s ran %d times, at most %d attempts", typ, id, n, sub.maxCalls)
		}
		k.mu.Lock()
		pair.runs++
		k.mu.Unlock()
		k.completed.Add(1)
		r := &soakRun{typ: typ, tier: cfg.Priority, prio: prio, key: foldIdentifier(key), excl: cfg.Access == Exclusive,
			from: sub.from.Load(), first: sub.first, attempt: int(n)}
		if cfg.ConflictGroup != "" {
			r.res = foldIdentifier(id)
		}
		var err error
		b := behaviours[min(int(n)-1, 2)]
		if b >= 10 {
			k.sum.Faults.Add(1)
		}
		if b >= 10 && b < 18 {
			k.mu.Lock()
			k.fails++
			k.mu.Unlock()
		}
		k.hold(r, func() {
			switch {
			case b < 10:
				time.Sleep(hold)
			case b < 13:
				err = fmt.Errorf("%w: %s/%s", errSoakFn, typ, id)
			case b < 17:
				err = Retryable(fmt.Errorf("%w (retryable): %s/%s", errSoakFn, typ, id))
			case b < 18:
				panic(soakPanic{})
			default: // blocks until Close cancels it, or a while
				select {
				case <-ctx.Done():
				case <-time.After(20 * time.Millisecond):
				}
			}
		})
		sub.from.Store(k.ledger.tick())
		return err
	}
	time.Sleep(time.Duration(rng.IntN(500)) * time.Microsecond) // background work arrives more slowly than requests
	k.sum.Operations.Add(1)
	err := k.s.SubmitWith(context.Background(), typ, id, fn, opts...)
	if err != nil {
		sub.rejected.Store(true)
		if n := sub.calls.Load(); n != 0 {
			k.sum.Lostf(k.t, "SubmitWith(%s/%s) failed with %v after its fn ran %d times", typ, id, err, n)
		}
		k.outcome(err, false)
		return
	}
	k.mu.Lock()
	pair.accepted++
	k.mu.Unlock()
	k.count("submitted")
}

// control makes one runtime-control call, now and then with a bad
// argument, which must fail with ErrInvalidConfig and change nothing.
// While the soak is quiet it lifts every pause and dry-run instead, so that
// the churners are never held.
func (k *soak) control(rng *rand.Rand) {
	time.Sleep(time.Duration(200+rng.IntN(3000)) * time.Microsecond)
	if k.closed.Load() {
		return
	}
	if k.quiet.Load() {
		k.liftAll()
		return
	}
	k.sum.Operations.Add(1)
	s, l := k.s, k.ledger
	typ := soakAllTypes[rng.IntN(len(soakAllTypes))]
	key := soakNamedKeys[rng.IntN(2)]
	var err error
	switch n := rng.IntN(100); {
	case n < 15 && k.adaptive:
		lo := soakMinLow + rng.IntN(3)
		hi := lo + rng.IntN(soakMaxHigh-lo+1)
		err = l.change(func() *limitLog { return l.capacity }, hi, func() error { return s.SetAdaptiveBounds(lo, hi) })
		if rng.IntN(2) == 0 { // swing the pressure: at or above the gate's threshold a third of the time
			k.pressure.Store(math.Float64bits(1.2 * rng.Float64()))
		}
	case n < 15:
		c := 4 + rng.IntN(9)
		err = l.change(func() *limitLog { return l.capacity }, c, func() error { return s.SetCapacity(c) })
	case n < 25:
		c := rng.IntN(5)
		err = l.change(func() *limitLog { return l.typeLimit[typ] }, limitOf(c), func() error { return s.SetTypeLimit(typ, c) })
	case n < 32:
		err = s.SetWeight([]string{key, "hot-01", ""}[rng.IntN(3)], 0.25+4*rng.Float64())
	case n < 35:
		s.ResetWeights()
	case n < 45:
		p := KeyPolicy{Weight: float64(rng.IntN(4)), MinSeats: rng.IntN(2), MaxInFlight: rng.IntN(4), MaxQueued: rng.IntN(40)}
		err = l.change(func() *limitLog { return l.keyLimit[key] }, limitOf(p.MaxInFlight), func() error { return s.SetKeyPolicy(key, p) })
	case n < 55: // pause a type: until Resume (checked), or for a while (not checked: it lifts by itself)
		if rng.IntN(2) == 0 {
			err = l.pause(func() *limitLog { return l.typePaused[typ] }, true, func() error { return s.Pause(typ, 0) })
		} else {
			d := time.Duration(1+rng.IntN(20)) * time.Millisecond
			err = l.pause(func() *limitLog { return l.typePaused[typ] }, false, func() error { return s.Pause(typ, d) })
		}
	case n < 70:
		err = l.pause(func() *limitLog { return l.typePaused[typ] }, false, func() error { return s.Resume(typ) })
	case n < 75:
		if rng.IntN(2) == 0 {
			err = l.pause(func() *limitLog { return l.keyPaused[key] }, true, func() error { return s.PauseKey(key, 0) })
		} else {
			err = l.pause(func() *limitLog { return l.keyPaused[key] }, false, func() error { return s.PauseKey(key, time.Millisecond) })
		}
	case n < 85:
		err = l.pause(func() *limitLog { return l.keyPaused[key] }, false, func() error { s.ResumeKey(key); return nil })
	case n < 87: // dry-run for a moment
		_ = l.change(func() *limitLog { return l.dry }, 1, func() error { s.SetDryRun(true); return nil })
		time.Sleep(time.Duration(rng.IntN(2000)) * time.Microsecond)
		_ = l.change(func() *limitLog { return l.dry }, 0, func() error { s.SetDryRun(false); return nil })
	case n < 92:
		snap := s.Snapshot()
		if snap.InUse < 0 || snap.Queued < 0 || len(snap.Keys) > SnapshotMaxKeys || len(snap.Queue) > SnapshotMaxQueue {
			k.sum.Violationf(k.t, "snapshot out of bounds: in use %d, queued %d, %d keys, %d queued shown", snap.InUse, snap.Queued, len(snap.Keys), len(snap.Queue))
		}
		if a := snap.Adaptive; k.adaptive && (a == nil || snap.Capacity < a.Min || snap.Capacity > a.Max ||
			!(a.Limit >= float64(a.Min) && a.Limit <= float64(a.Max)) || len(a.History) > CapacityHistory) {
			k.sum.Violationf(k.t, "adaptive snapshot out of bounds: capacity %d, %+v", snap.Capacity, a)
		}
	default:
		bad := []func() error{
			func() error { return s.SetCapacity(-1) },
			func() error { return s.SetCapacity(0) },
			func() error { return s.SetWeight(key, math.NaN()) },
			func() error { return s.SetWeight(key, math.Inf(1)) },
			func() error { return s.SetTypeLimit(typ, -3) },
			func() error { return s.SetKeyPolicy(key, KeyPolicy{Weight: -1}) },
			func() error { return s.Pause(typ, -time.Second) },
			func() error { return s.SetAdaptiveBounds(3, 2) },
		}
		if k.adaptive { // a capacity set by hand while adaptive, and a Min under 1
			bad = append(bad, func() error { return s.SetCapacity(8) }, func() error { return s.SetAdaptiveBounds(0, 4) })
		} else { // no bounds to move
			bad = append(bad, func() error { return s.SetAdaptiveBounds(2, 12) })
		}
		err := bad[rng.IntN(len(bad))]()
		if !errors.Is(err, ErrInvalidConfig) {
			k.sum.Violationf(k.t, "a bad control argument gave %v, want ErrInvalidConfig", err)
		}
		return
	}
	if err != nil && !(errors.Is(err, ErrClosed) && k.closed.Load()) {
		k.sum.Violationf(k.t, "control call failed: %v", err)
	}
}

// liftAll resumes every type and named key and turns dry-run off.
func (k *soak) liftAll() {
	s, l := k.s, k.ledger
	for _, typ := range soakAllTypes {
		_ = l.pause(func() *limitLog { return l.typePaused[typ] }, false, func() error { return s.Resume(typ) })
	}
	for _, key := range soakNamedKeys {
		_ = l.pause(func() *limitLog { return l.keyPaused[key] }, false, func() error { s.ResumeKey(key); return nil })
	}
	_ = l.change(func() *limitLog { return l.dry }, 0, func() error { s.SetDryRun(false); return nil })
}

// event counts the events delivered, now and then slowly enough that the
// buffer overflows.
func (k *soak) event(e Event) {
	k.events.Add(1)
	k.mu.Lock()
	k.byKind[e.Kind]++
	if e.Kind == EventCapacityChanged {
		k.byReason[e.CapacityReason]++
	}
	k.mu.Unlock()
	if e.Kind == EventAllocationChanged && e.Time.UnixNano()%50 == 0 {
		time.Sleep(time.Millisecond)
	}
}
