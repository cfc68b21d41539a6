package admission

// Benchmarks for the admission scheduler. Results and the commands that
// produced them are recorded in benchmarks/ADMISSION.md.
//
//   - BenchmarkUncontended: one goroutine, Acquire+Release with a free seat,
//     against golang.org/x/sync/semaphore in the same run.
//   - BenchmarkSaturated: Capacity 4, 64 goroutines, 16 fairness keys, every
//     goroutine acquiring and releasing in a loop; semaphore.Weighted(4) as
//     the baseline.
//   - BenchmarkDispatch: the cost of one release that admits one queued job
//     (finish + dispatch + enqueue of a replacement, so the queue size stays
//     constant), driven single-goroutine through the locked internals with a
//     fake clock, at 100 queued jobs over 10 keys, 10,000 over 1,000 and
//     100,000 over 10,000; plain, with aging, with conflicts, and mixed
//     (unlike weights and seat times), and a naive O(n) scan as the baseline.
//   - BenchmarkMemory: heap bytes per queued job and per idle (tracked) key.
//   - BenchmarkTurnover: the peer harness's BenchmarkKeys (one request per
//     key, 4 seats, 10 to 10,000 keys) through the locked internals, without
//     goroutines: a release, the same key's next request (it goes idle and
//     is activated again) and the admission of the best queued job. It is
//     deterministic enough for callgrind (benchmarks/turnover-misses.sh).

import (
	"context"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/semaphore"
)

// benchType is the job type used throughout: a foreground clone that
// conflicts on its repository, with a learned-cost seed of 5 s.
const benchType JobType = "sync-clone"

var benchTypeConfig = JobTypeConfig{
	DefaultCost:   5 * time.Second,
	ConflictGroup: "git",
	Priority:      PriorityForeground,
}

func benchScheduler(b *testing.B, cfg Config, tc JobTypeConfig) *Scheduler {
	b.Helper()
	s, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	if err := s.RegisterType(benchType, tc); err != nil {
		b.Fatal(err)
	}
	return s
}

// mallocs returns the number of heap allocations so far.
func mallocs() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.Mallocs
}

// reportMallocs reports heap allocations per operation as a fraction: the
// allocs/op column of -benchmem is an integer division, truncated.
func reportMallocs(b *testing.B, since uint64, ops int) {
	b.ReportMetric(float64(mallocs()-since)/float64(ops), "mallocs/op")
}

// ---------------------------------------------------------------------------
// 1. Uncontended Acquire+Release.

func BenchmarkUncontended(b *testing.B) {
	ctx := context.Background()
	b.Run("impl=semaphore", func(b *testing.B) {
		sem := semaphore.NewWeighted(4)
		b.ReportAllocs()
		m0 := mallocs()
		for b.Loop() {
			if err := sem.Acquire(ctx, 1); err != nil {
				b.Fatal(err)
			}
			sem.Release(1)
		}
		reportMallocs(b, m0, b.N)
	})
	for _, v := range []struct {
		name string
		cfg  Config
	}{
		{"impl=fairseat", Config{Capacity: 4}},
		// Adaptive capacity pinned at the same seats: each Release feeds
		// the controller (see BenchmarkSaturated).
		{"impl=fairseat-adaptive", Config{Adaptive: &AdaptiveConfig{Min: 4, Max: 4, Initial: 4}}},
	} {
		b.Run(v.name, func(b *testing.B) {
			uncontendedLoop(ctx, b, benchScheduler(b, v.cfg, benchTypeConfig))
		})
	}
}

// uncontendedLoop is the loop of the uncontended benchmarks: b.N times
// Acquire and Release on s, one repository and one key, reporting the
// allocations.
func uncontendedLoop(ctx context.Context, b *testing.B, s *Scheduler) {
	r := Request{Type: benchType, JobID: "repo-0", FairnessKey: "client-0"}
	b.ReportAllocs()
	m0 := mallocs()
	for b.Loop() {
		p, err := s.Acquire(ctx, r)
		if err != nil {
			b.Fatal(err)
		}
		p.Release()
	}
	reportMallocs(b, m0, b.N)
}

// ---------------------------------------------------------------------------
// 2. Saturated: more waiters than seats.

const (
	saturatedCapacity   = 4
	saturatedGoroutines = 64
	saturatedKeys       = 16
)

// runSaturated starts saturatedGoroutines goroutines that together perform
// b.N acquire+release cycles, and reports admissions per second. The
// goroutines are started and parked on a barrier before the timer starts.
func runSaturated(b *testing.B, cycle func(g int) error) {
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, saturatedGoroutines)
	for g := range saturatedGoroutines {
		n := b.N / saturatedGoroutines
		if g < b.N%saturatedGoroutines {
			n++
		}
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			for range n {
				if err := cycle(g); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	ready.Wait()
	b.ReportAllocs()
	m0 := mallocs()
	b.ResetTimer()
	close(start)
	done.Wait()
	b.StopTimer()
	reportMallocs(b, m0, b.N)
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "admissions/s")
}

func BenchmarkSaturated(b *testing.B) {
	ctx := context.Background()
	b.Run("impl=semaphore", func(b *testing.B) {
		sem := semaphore.NewWeighted(saturatedCapacity)
		runSaturated(b, func(int) error {
			if err := sem.Acquire(ctx, 1); err != nil {
				return err
			}
			sem.Release(1)
			return nil
		})
	})
	for _, v := range []struct {
		name string
		cfg  Config
	}{
		{"impl=fairseat", Config{Capacity: saturatedCapacity}},
		// Adaptive capacity pinned at the same seats (Min = Max): every
		// completion feeds the controller (inflation.go, adaptive.go,
		// probe.go), and the seats stay those of the fixed capacity, so the
		// difference is the controller's cost per admission.
		{"impl=fairseat-adaptive", Config{Adaptive: &AdaptiveConfig{Min: saturatedCapacity, Max: saturatedCapacity, Initial: saturatedCapacity}}},
	} {
		b.Run(v.name, func(b *testing.B) { benchSaturatedFairseat(b, v.cfg) })
	}
}

// benchSaturatedFairseat is BenchmarkSaturated's run of a fairseat
// scheduler of configuration cfg: saturatedGoroutines goroutines, one
// repository each, over saturatedKeys fairness keys.
func benchSaturatedFairseat(b *testing.B, cfg Config) {
	ctx := context.Background()
	s := benchScheduler(b, cfg, benchTypeConfig)
	reqs := make([]Request, saturatedGoroutines)
	for g := range reqs {
		reqs[g] = Request{
			Type:        benchType,
			JobID:       "repo-" + strconv.Itoa(g), // no conflicts: one repository per goroutine
			FairnessKey: "client-" + strconv.Itoa(g%saturatedKeys),
		}
	}
	runSaturated(b, func(g int) error {
		p, err := s.Acquire(ctx, reqs[g])
		if err != nil {
			return err
		}
		p.Release()
		return nil
	})
	snap := s.Snapshot()
	if snap.InUse != 0 || snap.Queued != 0 || snap.Counters.Admitted != snap.Counters.Completed {
		b.Fatalf("scheduler not drained: %+v", snap.Counters)
	}
	if a := snap.Adaptive; a != nil {
		// The share of admissions that fed the controller (the first of
		// each repository has no reference yet).
		b.ReportMetric(float64(a.Samples)/float64(b.N), "samples/op")
	}
}

// ---------------------------------------------------------------------------
// 3. Dispatch cost against queue size.

// dispatchSizes are the queue sizes compared (the middle one shows the shape
// of the growth between the two the target names).
var dispatchSizes = []struct{ queued, keys int }{
	{100, 10},
	{10_000, 1_000},
	{100_000, 10_000},
}

// dispatchCapacity is the number of seats in the dispatch benchmarks; one is
// freed and refilled per operation.
const dispatchCapacity = 4

// dispatchStep is how far the fake clock advances per operation (a release
// every microsecond, the rate of the 1,000,000 admissions/s target).
const dispatchStep = time.Microsecond

// dispatchObserved is the seat time charged at each finish (the type's
// DefaultCost, so virtual time advances by exactly one estimate per job).
const dispatchObserved = 5 * time.Second

// dispatchConflictRepos is the number of repositories shared by all keys in
// the conflicts variant: with dispatchCapacity of them held at any time,
// about half of the candidates dispatch looks at are parked.
const dispatchConflictRepos = 8

type dispatchVariant struct {
	name  string
	aging *AgingConfig
	// repos is the number of repositories shared by all keys, each job
	// drawing one at random (fixed seed); 0 means one repository per key.
	repos         int
	conflictGroup ConflictGroup
	// mixed gives key i weight 1 + i%3 and every job a seat time drawn
	// from [1 s, 9 s] instead of dispatchObserved: estimates differ between
	// keys and are corrected at every completion, so virtual times come out
	// of order (plain's alike jobs give the best case of the flows' ring).
	mixed bool
}

var dispatchVariants = []dispatchVariant{
	{
		// One repository per key; no conflict group.
		name: "plain",
	},
	{
		// Aging on: Grace 0, one promotion per 10 ms of waiting (with the
		// 1 µs clock step, each flow head is promoted once per 10,000
		// operations; at 100,000 queued a job waits about 100 ms, i.e. about
		// 10 promotions, at 100 queued none). Urgent is out of reach.
		name:  "aging",
		aging: &AgingConfig{Grace: 0, Interval: 10 * time.Millisecond, Step: 1, Urgent: 100},
	},
	{
		// Conflict group on, every job on one of 8 repositories shared by all
		// keys, drawn at random: up to dispatchCapacity of them are held, and
		// a candidate whose repository is held is parked.
		name:          "conflicts",
		conflictGroup: "git",
		repos:         dispatchConflictRepos,
	},
	{
		// Plain, but keys weighted 1, 2 or 3 and seat times drawn at random:
		// the worst case of the flows' ring, kept beside plain so that the
		// ring's best case is never the only one reported.
		name:  "mixed",
		mixed: true,
	},
}

// dispatchBench is a scheduler driven through its locked internals: a fixed
// number of queued jobs and dispatchCapacity running ones.
type dispatchBench struct {
	s       *Scheduler
	ts      *typeState
	now     int64  // an instant (see Scheduler.now)
	running []*job // FIFO: the oldest admission finishes first
	buf     []*job
	repos   []string   // shared repositories (conflicts variant), or nil
	rng     *rand.Rand // draws from repos
	mixed   bool       // seat times drawn from rng (variant mixed)
	count   bool       // step counts parks (untimed sampling only)
	parks   int        // jobs parked by dispatch while count is set
}

// parkedLocked is the number of parked jobs.
func (d *dispatchBench) parkedLocked() int {
	n := 0
	for _, r := range d.s.allResourcesLocked() {
		n += r.nwait
	}
	return n
}

func newDispatchBench(b *testing.B, v dispatchVariant, queued, keys int) *dispatchBench {
	b.Helper()
	cfg := Config{
		Capacity:       dispatchCapacity,
		Aging:          v.aging,
		MaxQueue:       queued + dispatchCapacity,
		MaxKeys:        2 * keys,
		MaxCostEntries: 2 * keys,
	}
	tc := JobTypeConfig{DefaultCost: dispatchObserved, ConflictGroup: v.conflictGroup, Priority: PriorityForeground}
	s := benchScheduler(b, cfg, tc)
	d := &dispatchBench{s: s, ts: s.types[benchType], now: s.now(), buf: make([]*job, 0, 8)}
	for r := range v.repos {
		d.repos = append(d.repos, "shared-repo-"+strconv.Itoa(r))
	}
	d.rng = rand.New(rand.NewPCG(1, 2))
	d.mixed = v.mixed
	s.mu.Lock()
	defer s.mu.Unlock()
	if v.mixed {
		for i := range keys {
			s.weights["client-"+strconv.Itoa(i)] = float64(1 + i%3)
		}
	}
	// Enqueue queued+dispatchCapacity jobs round-robin over the keys, then
	// dispatch to fill the seats: queued jobs remain.
	for i := range queued + dispatchCapacity {
		k := strconv.Itoa(i % keys)
		id := "repo-" + k
		if d.repos != nil {
			id = d.repos[d.rng.IntN(len(d.repos))]
		}
		d.now += int64(dispatchStep)
		j := s.newJobLocked()
		j.jobID, j.foreground = id, true
		// An arrival with nothing queued may be admitted by enqueueLocked itself.
		w, err := s.enqueueLocked(j, d.ts, "client-"+k, d.now, nil)
		if err != nil {
			b.Fatal(err)
		}
		d.running = append(d.running, w...)
	}
	d.running = s.dispatchLocked(d.now, d.running)
	if len(d.running) != dispatchCapacity || s.queued != queued {
		b.Fatalf("setup: %d running, %d queued; want %d, %d", len(d.running), s.queued, dispatchCapacity, queued)
	}
	// Warm up: turn the whole queue over once, so every key has been admitted
	// (its cost estimate exists, as in steady state) and the parked and aged
	// population is in its steady state before the timer starts.
	for range queued {
		d.step(b)
	}
	return d
}

// step is one release that admits one queued job, plus the arrival that
// keeps the queue size constant: it finishes the oldest running job,
// dispatches (which admits exactly one job, possibly after parking some),
// recycles the finished record as Permit.Release does, and enqueues a
// replacement for the admitted job's key with a record from newJobLocked, as
// Acquire does. The caller holds s.mu.
func (d *dispatchBench) step(b *testing.B) {
	s := d.s
	d.now += int64(dispatchStep)
	var old *job
	d.running, old = popOldest(d.running)
	observed := dispatchObserved
	if d.mixed {
		observed = time.Second + time.Duration(d.rng.IntN(8001))*time.Millisecond
	}
	s.finishLocked(old, d.now, observed, true)
	parked := 0
	if d.count {
		parked = d.parkedLocked()
	}
	wake := s.dispatchLocked(d.now, d.buf[:0])
	if len(wake) != 1 {
		b.Fatalf("dispatch admitted %d jobs, want 1", len(wake))
	}
	if d.count {
		d.parks += d.parkedLocked() - parked // dispatch only parks, never unparks
	}
	a := wake[0]
	d.running = append(d.running, a)
	id := a.jobID
	if d.repos != nil {
		id = d.repos[d.rng.IntN(len(d.repos))]
	}
	s.freeJobLocked(old)  // as Permit.Release does
	j := s.newJobLocked() // as Acquire does: the record just freed
	j.jobID, j.foreground = id, true
	if w, err := s.enqueueLocked(j, d.ts, a.key.name, d.now, nil); err != nil || len(w) != 0 {
		b.Fatalf("replacement arrival: %v, admitted %d at once (the queue is never empty here)", err, len(w))
	}
}

// popOldest takes the first (oldest) job off running.
func popOldest(running []*job) ([]*job, *job) {
	old := running[0]
	copy(running, running[1:])
	return running[:len(running)-1], old
}

func BenchmarkDispatch(b *testing.B) {
	for _, v := range dispatchVariants {
		for _, sz := range dispatchSizes {
			b.Run("impl=fairseat/variant="+v.name+"/queued="+strconv.Itoa(sz.queued)+"/keys="+strconv.Itoa(sz.keys), func(b *testing.B) {
				d := newDispatchBench(b, v, sz.queued, sz.keys)
				s := d.s
				s.mu.Lock()
				defer s.mu.Unlock()
				b.ReportAllocs()
				m0 := mallocs()
				for b.Loop() {
					d.step(b)
				}
				reportMallocs(b, m0, b.N)
				// Untimed: check the state, then sample what an operation did.
				if s.queued != sz.queued || s.inUse != dispatchCapacity {
					b.Fatalf("queue drifted: %d queued, %d running", s.queued, s.inUse)
				}
				if err := s.checkInvariantsLocked(); err != nil {
					b.Fatalf("invariant broken: %v", err)
				}
				const samples = 10_000
				admitted0, promos0 := s.counters.Admitted, s.counters.AgingPromotions
				d.count = true
				parked, waitingFlows := 0, 0
				for range samples {
					d.step(b)
					parked += d.parkedLocked()
					for _, r := range s.allResourcesLocked() {
						waitingFlows += len(r.waiters)
					}
				}
				n := float64(s.counters.Admitted - admitted0)
				b.ReportMetric(float64(s.counters.AgingPromotions-promos0)/n, "promotions/admitted-job")
				b.ReportMetric(float64(d.parks)/n, "parks/admission")
				b.ReportMetric(float64(parked)/samples, "parked-jobs")
				b.ReportMetric(float64(waitingFlows)/samples, "waiting-flows")
			})
		}
	}
	for _, sz := range dispatchSizes {
		b.Run("impl=naive/variant=plain/queued="+strconv.Itoa(sz.queued)+"/keys="+strconv.Itoa(sz.keys), func(b *testing.B) {
			n := newNaiveSched(sz.queued, sz.keys)
			b.ReportAllocs()
			m0 := mallocs()
			for b.Loop() {
				n.step()
			}
			reportMallocs(b, m0, b.N)
			if len(n.pending) != sz.queued || len(n.running) != dispatchCapacity {
				b.Fatalf("queue drifted: %d queued, %d running", len(n.pending), len(n.running))
			}
		})
	}
}

// naiveSched is the baseline: the pending jobs in one slice, and each
// dispatch scans all of them for the best by (priority desc, virtual time
// asc, arrival asc).
type naiveSched struct {
	pending []*naiveJob
	running []*naiveJob
	seq     uint64
}

type naiveKey struct {
	v, w float64
}

type naiveJob struct {
	key   *naiveKey
	prio  Priority
	seq   uint64
	est   float64
	jobID string
}

func naiveLess(a, b *naiveJob) bool {
	if a.prio != b.prio {
		return a.prio > b.prio
	}
	if a.key.v != b.key.v {
		return a.key.v < b.key.v
	}
	return a.seq < b.seq
}

func newNaiveSched(queued, keys int) *naiveSched {
	n := &naiveSched{}
	ks := make([]*naiveKey, keys)
	for k := range ks {
		ks[k] = &naiveKey{w: 1}
	}
	for i := range queued + dispatchCapacity {
		k := i % keys
		n.seq++
		n.pending = append(n.pending, &naiveJob{key: ks[k], prio: PriorityForeground, seq: n.seq, jobID: "repo-" + strconv.Itoa(k)})
	}
	for range dispatchCapacity {
		n.running = append(n.running, n.admit())
	}
	return n
}

// admit removes the best pending job (order is kept by seq, so a swap-remove
// is enough) and charges its key.
func (n *naiveSched) admit() *naiveJob {
	best := 0
	for i := 1; i < len(n.pending); i++ {
		if naiveLess(n.pending[i], n.pending[best]) {
			best = i
		}
	}
	j := n.pending[best]
	last := len(n.pending) - 1
	n.pending[best] = n.pending[last]
	n.pending[last] = nil
	n.pending = n.pending[:last]
	j.est = dispatchObserved.Seconds()
	j.key.v += j.est / j.key.w
	return j
}

// step mirrors dispatchBench.step: finish the oldest running job, admit the
// best pending one, enqueue a replacement reusing the finished record.
func (n *naiveSched) step() {
	old := n.running[0]
	copy(n.running, n.running[1:])
	n.running = n.running[:len(n.running)-1]
	old.key.v += (dispatchObserved.Seconds() - old.est) / old.key.w
	a := n.admit()
	n.running = append(n.running, a)
	n.seq++
	*old = naiveJob{key: a.key, prio: a.prio, seq: n.seq, jobID: a.jobID}
	n.pending = append(n.pending, old)
}

// ---------------------------------------------------------------------------
// 4. Memory per queued job and per idle key.

// heapAfterGC returns the live heap after a full collection.
func heapAfterGC() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func BenchmarkMemory(b *testing.B) {
	// Queued jobs: N foreground requests queued the way Acquire queues them
	// (enqueue, dispatch, a ready channel when not admitted). The caller
	// goroutines' stacks are not counted. Key names and job IDs are built
	// inside the measured region, so the strings the scheduler keeps count.
	for _, sz := range []struct{ queued, keys int }{{100_000, 10}, {100_000, 10_000}} {
		b.Run("what=queued-job/queued="+strconv.Itoa(sz.queued)+"/keys="+strconv.Itoa(sz.keys), func(b *testing.B) {
			var total float64
			iters := 0
			for b.Loop() {
				b.StopTimer()
				s := benchScheduler(b, Config{Capacity: 1, MaxQueue: sz.queued + 1, MaxKeys: 2 * sz.keys, MaxCostEntries: 2 * sz.keys}, benchTypeConfig)
				ts := s.types[benchType]
				now := s.now()
				before := heapAfterGC()
				b.StartTimer()
				s.mu.Lock()
				for i := range sz.queued + 1 { // the first one is admitted
					k := strconv.Itoa(i % sz.keys)
					j := s.newJobLocked()
					j.jobID, j.foreground = "repo-"+k, true
					if _, err := s.enqueueLocked(j, ts, "client-"+k, now, nil); err != nil {
						b.Fatal(err)
					}
					s.dispatchLocked(now, nil)
					if j.state != jobRunning {
						j.ready = make(chan struct{})
					}
				}
				queued := s.queued
				s.mu.Unlock()
				b.StopTimer()
				after := heapAfterGC()
				runtime.KeepAlive(s)
				if queued != sz.queued {
					b.Fatalf("%d queued, want %d", queued, sz.queued)
				}
				total += (float64(after) - float64(before)) / float64(sz.queued)
				iters++
				b.StartTimer()
			}
			b.ReportMetric(total/float64(iters), "B/queued-job")
		})
	}
	// Idle keys: one job per key enqueued, admitted and completed, so the
	// key's state stays in the LRU (MaxKeys is twice the key count, nothing
	// is evicted). All jobs share one job ID, so one cost entry is kept.
	for _, keys := range []int{10_000, 100_000} {
		b.Run("what=idle-key/keys="+strconv.Itoa(keys), func(b *testing.B) {
			var total float64
			iters := 0
			for b.Loop() {
				b.StopTimer()
				s := benchScheduler(b, Config{Capacity: 1, MaxKeys: 2 * keys}, benchTypeConfig)
				ts := s.types[benchType]
				now := s.now()
				before := heapAfterGC()
				b.StartTimer()
				s.mu.Lock()
				for i := range keys {
					j := s.newJobLocked()
					j.jobID, j.foreground = "repo", true
					w, err := s.enqueueLocked(j, ts, "client-"+strconv.Itoa(i), now, nil)
					if err != nil {
						b.Fatal(err)
					}
					if w = s.dispatchLocked(now, w); len(w) != 1 {
						b.Fatalf("admitted %d", len(w))
					}
					s.finishLocked(j, now, time.Second, true)
					s.freeJobLocked(j) // as Permit.Release does
				}
				tracked, active := s.keys.len(), len(s.activeKeysLocked())
				s.mu.Unlock()
				b.StopTimer()
				after := heapAfterGC()
				runtime.KeepAlive(s)
				if tracked != keys || active != 0 {
					b.Fatalf("%d keys tracked, %d active; want %d, 0", tracked, active, keys)
				}
				total += (float64(after) - float64(before)) / float64(keys)
				iters++
				b.StartTimer()
			}
			b.ReportMetric(total/float64(iters), "B/idle-key")
		})
	}
}

// ---------------------------------------------------------------------------
// 5. Key turnover: BenchmarkKeys of the peer harness without its goroutines.

// turnoverKeys are the active-key counts of BenchmarkTurnover (the harness's
// KeyCounts).
var turnoverKeys = []int{10, 100, 1000, 10_000}

// turnoverBench is a scheduler driven through its locked internals the way
// the harness's BenchmarkKeys drives it through goroutines: every key has
// exactly one request, queued or running, on dispatchCapacity seats. A step
// is a release and the next request of the same caller: the oldest running
// job finishes (its key goes idle), its key arrives again at once (it is
// activated, a flow is made for it and ordered), and dispatch admits the
// best queued job. No job ID (the harness's requests carry none). Seat
// times are drawn around the estimate, as a real seat time varies, so that
// virtual times come out of order as they do in the harness (alike seat
// times would keep every flow in the ring).
type turnoverBench struct {
	s       *Scheduler
	ts      *typeState
	now     int64
	running []*job // FIFO: the oldest admission finishes first
	buf     []*job
	rng     *rand.Rand
	touched int // stacks touched (BenchmarkTurnoverStacks)
}

func newTurnoverBench(b *testing.B, keys int) *turnoverBench {
	b.Helper()
	cfg := Config{Capacity: dispatchCapacity, MaxQueue: keys, MaxKeys: 2 * keys}
	s := benchScheduler(b, cfg, JobTypeConfig{DefaultCost: time.Millisecond, Priority: PriorityForeground})
	d := &turnoverBench{s: s, ts: s.types[benchType], now: s.now(), buf: make([]*job, 0, 8), rng: rand.New(rand.NewPCG(1, 2))}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range keys {
		d.now += int64(dispatchStep)
		j := s.newJobLocked()
		j.foreground = true
		w, err := s.enqueueLocked(j, d.ts, "k"+strconv.Itoa(i), d.now, nil)
		if err != nil {
			b.Fatal(err)
		}
		d.running = append(d.running, w...)
	}
	d.running = s.dispatchLocked(d.now, d.running)
	if len(d.running) != dispatchCapacity || s.queued != keys-dispatchCapacity {
		b.Fatalf("setup: %d running, %d queued; want %d, %d", len(d.running), s.queued, dispatchCapacity, keys-dispatchCapacity)
	}
	for range 2 * keys { // every key served twice: steady state
		d.step(b)
	}
	return d
}

// step is one release and the same caller's next request; the caller holds
// s.mu.
func (d *turnoverBench) step(b *testing.B) {
	s := d.s
	d.now += int64(dispatchStep)
	var old *job
	d.running, old = popOldest(d.running)
	observed := time.Duration(500_000 + d.rng.IntN(1_000_001)) // 0.5 to 1.5 ms, to the nanosecond as measured
	s.finishLocked(old, d.now, observed, true)
	wake := s.dispatchLocked(d.now, d.buf[:0])
	name := old.key.name
	s.freeJobLocked(old) // as Permit.Release does
	j := s.newJobLocked()
	j.foreground = true
	wake, err := s.enqueueLocked(j, d.ts, name, d.now, wake)
	if err != nil {
		b.Fatal(err)
	}
	wake = s.dispatchLocked(d.now, wake) // as Acquire does
	if len(wake) != 1 {
		b.Fatalf("a step admitted %d jobs, want 1", len(wake))
	}
	d.running = append(d.running, wake[0])
}

func BenchmarkTurnover(b *testing.B) {
	for _, keys := range turnoverKeys {
		b.Run("keys="+strconv.Itoa(keys), func(b *testing.B) { runTurnover(b, keys, nil) })
	}
}

// BenchmarkTurnoverStacks is BenchmarkTurnover with the harness's
// goroutines stood in for: after each step, 2 KiB of one of the keys' 8
// KiB "stacks" (a buffer of keys × 8 KiB, the one touched scattered by a
// multiplicative hash of the step) is read and written, as waking a parked goroutine touches its stack. The
// scheduler's data then competes for the cache as it does in the harness,
// where 10,000 goroutine stacks pass through it; touchStack is outside
// step, so the cache simulator of turnover-misses.sh counts step's misses
// alone, with the stacks' effect on them.
func BenchmarkTurnoverStacks(b *testing.B) {
	for _, keys := range []int{10, 10_000} {
		b.Run("keys="+strconv.Itoa(keys), func(b *testing.B) { runTurnover(b, keys, make([]byte, keys*stackBytes)) })
	}
}

// stackBytes is a parked goroutine's stack in BenchmarkTurnoverStacks, and
// stackTouched what waking it touches.
const (
	stackBytes   = 8 << 10
	stackTouched = 2 << 10
)

// touchStack reads and writes stackTouched bytes of one stack in stacks,
// a cache line at a time.
func (d *turnoverBench) touchStack(stacks []byte) {
	d.touched++
	at := int(uint64(d.touched)*0x9e3779b97f4a7c15>>32%uint64(len(stacks)/stackBytes)) * stackBytes
	for i := at; i < at+stackTouched; i += 64 {
		stacks[i]++
	}
}

func runTurnover(b *testing.B, keys int, stacks []byte) {
	d := newTurnoverBench(b, keys)
	s := d.s
	s.mu.Lock()
	defer s.mu.Unlock()
	b.ReportAllocs()
	m0 := mallocs()
	for b.Loop() {
		d.step(b)
		if stacks != nil {
			d.touchStack(stacks)
		}
	}
	reportMallocs(b, m0, b.N)
	if s.queued != keys-dispatchCapacity || s.inUse != dispatchCapacity {
		b.Fatalf("drifted: %d queued, %d running", s.queued, s.inUse)
	}
	if err := s.checkInvariantsLocked(); err != nil {
		b.Fatalf("invariant broken: %v", err)
	}
}
