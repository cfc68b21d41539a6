package admission

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// This file drives the real scheduler and the reference model (model_test.go)
// side by side through the same operations and compares them after every
// step: the jobs admitted and pushed out, in order; every job's state; V_k of
// every key and V_sys; start tags and estimates; the queue order Snapshot
// would show; the counters. It also checks the scheduler's structural
// invariants (checkInvariantsLocked) and, from its own ledger of running
// jobs, the DESIGN §7 invariants: capacity, tier caps (exceeded only by
// urgent jobs), type and key caps, no two conflicting jobs at once, every job
// ends exactly once, no seat leaks.
//
// The real scheduler runs in this goroutine through its locked methods with
// explicit times, the way the public methods call them: enqueue then
// dispatch (Acquire), finish then dispatch (Release), unqueue (a queued
// waiter's context ends), finish without learning then dispatch (a seat
// granted to a waiter that gave up), and dispatch after time passes. Jobs are
// foreground so that no goroutine starts.

// Job types of the model tests. Tier caps: 6 for clone (above every
// capacity used, unless TierLimits lowers it), 2 for repack and gc together,
// 1 for scan.
var modelTypes = map[JobType]JobTypeConfig{
	// Foreground clones: conflict group "git", highest priority.
	"clone": {DefaultCost: 3 * time.Second, ConflictGroup: "git", Priority: 6},
	// Background-ish maintenance on the same repositories: conflicts with
	// clones of the same job ID, at most one at a time.
	"repack": {DefaultCost: 10 * time.Second, MaxConcurrency: 1, ConflictGroup: "git", Priority: 2},
	// Same tier as repack, another conflict group: conflicts only with gc.
	"gc": {DefaultCost: 4 * time.Second, MaxConcurrency: 2, ConflictGroup: "disk", Priority: 2},
	// No conflict group: conflicts with nothing.
	"scan": {DefaultCost: time.Second, Priority: 1},
}

var (
	modelTypeNames = []JobType{"clone", "repack", "gc", "scan"}
	modelKeys      = []string{"", "a", "b", "c"} // "c" uses DefaultKey
	modelJobIDs    = []string{"r0", "r1", "r2"}
)

// hJob is the driver's record of one arrival.
type hJob struct {
	id    int
	j     *job
	typ   JobType
	key   string
	jobID string
	fate  string // queued, running, rejected, pushedout, cancelled, completed, givenback
}

// harness runs the real scheduler and the model side by side.
type harness struct {
	t     testing.TB
	cfg   Config
	types map[JobType]JobTypeConfig
	s     *Scheduler
	m     *model
	base  time.Time
	off   time.Duration

	jobs    []*hJob
	byPtr   map[*job]*hJob
	running []*hJob // the ledger: admitted and not finished, admission order
	ops     []string

	admitted, completed, rejected, pushedOut, cancelled, givenBack int
}

func newHarness(t testing.TB, cfg Config, types map[JobType]JobTypeConfig) *harness {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("New(%+v): %v", cfg, err)
	}
	for _, name := range sortedTypeNames(types) {
		if err := s.RegisterType(name, types[name]); err != nil {
			t.Fatalf("RegisterType(%q): %v", name, err)
		}
	}
	return &harness{
		t: t, cfg: cfg, types: types, s: s, m: newModel(cfg, types),
		base:  time.Unix(1_000_000, 0),
		byPtr: map[*job]*hJob{},
	}
}

func sortedTypeNames(types map[JobType]JobTypeConfig) []JobType {
	var out []JobType
	for _, n := range modelTypeNames {
		if _, ok := types[n]; ok {
			out = append(out, n)
		}
	}
	if len(out) != len(types) {
		panic("harness: types outside modelTypeNames")
	}
	return out
}

func (h *harness) now() time.Time { return h.base.Add(h.off) }

func (h *harness) logf(format string, args ...any) {
	h.ops = append(h.ops, fmt.Sprintf("t=%-6v ", h.off)+fmt.Sprintf(format, args...))
}

func (h *harness) fatalf(format string, args ...any) {
	h.t.Helper()
	fatalAfter(h.t, h.s, h.ops, format, args...)
}

// fatalAfter fails a fuzz driver's test with the message, the operations
// that led there, and the scheduler's state (dumpLocked).
func fatalAfter(t testing.TB, s *Scheduler, ops []string, format string, args ...any) {
	t.Helper()
	s.mu.Lock()
	dump := s.dumpLocked()
	s.mu.Unlock()
	t.Fatalf("%s\nafter operations:\n  %s\nscheduler:\n%s", fmt.Sprintf(format, args...), strings.Join(ops, "\n  "), dump)
}

// --- operations ---------------------------------------------------------------

// arrive queues a job (as Acquire does) and returns its id and what the
// arrival caused: a pushed-out victim and the admissions of the dispatch.
func (h *harness) arrive(typ JobType, key, jobID string) (int, []mEvent) {
	h.t.Helper()
	id := len(h.jobs)
	hj := &hJob{id: id, typ: typ, key: key, jobID: jobID, j: &job{jobID: jobID, foreground: true}}
	h.jobs = append(h.jobs, hj)
	h.byPtr[hj.j] = hj
	h.logf("arrive    #%d %s/%s key=%q", id, typ, jobID, key)
	now := h.now()

	s := h.s
	s.mu.Lock()
	wake, err := s.enqueueLocked(hj.j, s.types[typ], key, now.UnixNano(), nil)
	if err == nil {
		wake = s.dispatchLocked(now.UnixNano(), wake)
	}
	got := h.realEvents(wake)
	ierr := s.checkInvariantsLocked()
	s.mu.Unlock()

	want, rejected := h.m.arrive(id, typ, key, jobID, now)
	want = append(want, h.m.dispatch(now)...)

	if (err != nil) != rejected {
		h.fatalf("arrival #%d: scheduler error %v, model rejected=%v", id, err, rejected)
	}
	if err != nil {
		if !errors.Is(err, ErrQueueFull) {
			h.fatalf("arrival #%d rejected with %v, want ErrQueueFull", id, err)
		}
		hj.fate = "rejected"
		h.rejected++
	} else {
		hj.fate = "queued"
	}
	h.apply(got, want, ierr)
	return id, got
}

// complete releases running job id after observed seat time (as Release
// does) and returns the admissions of the following dispatch.
func (h *harness) complete(id int, observed time.Duration) []mEvent {
	h.t.Helper()
	hj := h.mustBe(id, "running")
	h.logf("complete  #%d observed=%v", id, observed)
	now := h.now()
	s := h.s
	s.mu.Lock()
	s.finishLocked(hj.j, now.UnixNano(), observed, true)
	wake := s.dispatchLocked(now.UnixNano(), nil)
	got := h.realEvents(wake)
	ierr := s.checkInvariantsLocked()
	s.mu.Unlock()

	h.m.finish(id, observed, true, now)
	want := h.m.dispatch(now)
	h.endRunning(hj, "completed")
	h.completed++
	h.apply(got, want, ierr)
	return got
}

// giveBack hands back the seat of running job id as abandon does when a
// waiter gave up just as it was admitted: no charge, nothing learned,
// counted as cancelled, dispatch again.
func (h *harness) giveBack(id int) []mEvent {
	h.t.Helper()
	hj := h.mustBe(id, "running")
	h.logf("give back #%d", id)
	now := h.now()
	s := h.s
	s.mu.Lock()
	s.finishLocked(hj.j, now.UnixNano(), 0, false)
	wake := s.dispatchLocked(now.UnixNano(), nil)
	s.counters.Cancelled++
	hj.j.err = context.Canceled
	got := h.realEvents(wake)
	ierr := s.checkInvariantsLocked()
	s.mu.Unlock()

	h.m.finish(id, 0, false, now)
	want := h.m.dispatch(now)
	h.endRunning(hj, "givenback")
	h.givenBack++
	h.apply(got, want, ierr)
	return got
}

// cancel takes queued job id out of the queue as abandon does when a
// waiter's context ends. Like abandon, it does not dispatch; the model
// does (DESIGN §3), so a cancel that should have admitted someone shows up
// as a disagreement.
func (h *harness) cancel(id int) []mEvent {
	h.t.Helper()
	hj := h.mustBe(id, "queued")
	h.logf("cancel    #%d", id)
	now := h.now()
	s := h.s
	s.mu.Lock()
	s.unqueueLocked(hj.j, now.UnixNano())
	s.counters.Cancelled++
	hj.j.err = context.Canceled
	ierr := s.checkInvariantsLocked()
	s.mu.Unlock()

	h.m.cancel(id, now)
	want := h.m.dispatch(now)
	hj.fate = "cancelled"
	h.cancelled++
	h.apply(nil, want, ierr)
	return nil
}

// pause pauses or resumes a type (typ != "") or a key, then dispatches, as
// Pause, Resume, PauseKey and ResumeKey do.
func (h *harness) pause(typ JobType, key string, paused bool) []mEvent {
	h.t.Helper()
	if typ != "" {
		h.logf("pause     type %s %v", typ, paused)
	} else {
		h.logf("pause     key %q %v", key, paused)
	}
	now := h.now()
	s := h.s
	s.mu.Lock()
	switch {
	case typ != "" && paused:
		s.pauseTypeLocked(s.types[typ], now.UnixNano())
	case typ != "":
		s.resumeTypeLocked(s.types[typ], now.UnixNano())
	case paused:
		s.pauseKeyLocked(key, now.UnixNano())
	default:
		s.resumeKeyLocked(key, now.UnixNano())
	}
	wake := s.dispatchLocked(now.UnixNano(), nil)
	got := h.realEvents(wake)
	ierr := s.checkInvariantsLocked()
	s.mu.Unlock()

	h.m.pause(typ, key, paused, now)
	want := h.m.dispatch(now)
	h.apply(got, want, ierr)
	return got
}

// advance moves the clock and dispatches, as the next release or arrival
// would: aging may have promoted or made urgent a waiting job.
func (h *harness) advance(d time.Duration) []mEvent {
	h.t.Helper()
	h.off += d
	h.logf("advance   %v", d)
	now := h.now()
	s := h.s
	s.mu.Lock()
	wake := s.dispatchLocked(now.UnixNano(), nil)
	got := h.realEvents(wake)
	ierr := s.checkInvariantsLocked()
	s.mu.Unlock()

	want := h.m.dispatch(now)
	h.apply(got, want, ierr)
	return got
}

// drain completes every running job, oldest admission first, until nothing
// is left, then checks that no seat leaked and the counters balance.
func (h *harness) drain() {
	h.t.Helper()
	for _, typ := range modelTypeNames {
		if h.m.pausedTypes[typ] {
			h.pause(typ, "", false)
		}
	}
	for _, key := range modelKeys {
		if h.m.pausedKeys[key] {
			h.pause("", key, false)
		}
	}
	for len(h.running) > 0 {
		h.complete(h.running[0].id, time.Second)
	}
	s := h.s
	s.mu.Lock()
	inUse, queued, active, c := s.inUse, s.queued, len(s.activeKeysLocked()), s.counters
	res := 0 // conflict-table entries still held or waited on (idle ones may be kept)
	for _, r := range s.allResourcesLocked() {
		if r.holders+r.nwait > 0 {
			res++
		}
	}
	s.mu.Unlock()
	if inUse != 0 || queued != 0 || active != 0 || res != 0 || len(h.m.pending) != 0 {
		h.fatalf("after draining: inUse %d, queued %d, active keys %d, resources %d, model pending %d; want all 0",
			inUse, queued, active, res, len(h.m.pending))
	}
	for _, hj := range h.jobs {
		switch hj.fate {
		case "rejected", "pushedout", "cancelled", "completed", "givenback":
		default:
			h.fatalf("after draining, job #%d has not ended: %q", hj.id, hj.fate)
		}
	}
	if c.Submitted != c.Completed+c.RejectedQueueFull+c.Cancelled || c.Admitted != c.Completed+uint64(h.givenBack) {
		h.fatalf("after draining, counters do not balance: %+v", c)
	}
}

// --- bookkeeping and checks ---------------------------------------------------

func (h *harness) mustBe(id int, fate string) *hJob {
	h.t.Helper()
	if id < 0 || id >= len(h.jobs) || h.jobs[id].fate != fate {
		h.fatalf("test bug: job #%d is not %s", id, fate)
	}
	return h.jobs[id]
}

func (h *harness) endRunning(hj *hJob, fate string) {
	for i, r := range h.running {
		if r == hj {
			h.running = append(h.running[:i:i], h.running[i+1:]...)
			hj.fate = fate
			return
		}
	}
	h.fatalf("ledger: job #%d is not running", hj.id)
}

// realEvents translates a wake list (pushed-out victims, then admissions).
// Called with s.mu held.
func (h *harness) realEvents(wake []*job) []mEvent {
	var out []mEvent
	for _, j := range wake {
		hj := h.byPtr[j]
		if hj == nil {
			panic("harness: unknown job in wake list")
		}
		if j.err != nil {
			out = append(out, mEvent{Kind: "pushout", ID: hj.id})
		} else {
			out = append(out, mEvent{Kind: "admit", ID: hj.id, Eff: j.eff, Urgent: j.urgent})
		}
	}
	return out
}

func formatEvents(ev []mEvent) string {
	if len(ev) == 0 {
		return "(none)"
	}
	var b strings.Builder
	for i, e := range ev {
		if i > 0 {
			b.WriteString(", ")
		}
		if e.Kind == "admit" {
			fmt.Fprintf(&b, "admit #%d (eff %d, urgent %v)", e.ID, e.Eff, e.Urgent)
		} else {
			fmt.Fprintf(&b, "%s #%d", e.Kind, e.ID)
		}
	}
	return b.String()
}

// eventsEqual compares two event sequences. The effective priority of an
// urgent admission is not compared: urgent jobs are ordered by age alone, and
// the scheduler stops re-ranking a job once it is urgent, so the priority it
// records for one is the one it had when last re-ranked (see
// TestModelUrgentAdmissionRecordsStaleRank).
func eventsEqual(a, b []mEvent) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Urgent && y.Urgent {
			x.Eff, y.Eff = 0, 0
		}
		if x != y {
			return false
		}
	}
	return true
}

// apply compares one operation's outcome, moves the ledger along and runs
// every check.
func (h *harness) apply(got, want []mEvent, ierr error) {
	h.t.Helper()
	if ierr != nil {
		h.fatalf("scheduler invariant broken: %v", ierr)
	}
	if !eventsEqual(got, want) {
		h.fatalf("scheduler and model disagree\n  scheduler: %s\n  model:     %s", formatEvents(got), formatEvents(want))
	}
	for _, e := range got {
		hj := h.jobs[e.ID]
		switch e.Kind {
		case "pushout":
			if hj.fate != "queued" {
				h.fatalf("job #%d pushed out while %s", hj.id, hj.fate)
			}
			if !errors.Is(hj.j.err, ErrQueueFull) {
				h.fatalf("pushed-out job #%d has error %v, want ErrQueueFull", hj.id, hj.j.err)
			}
			hj.fate = "pushedout"
			h.pushedOut++
		case "admit":
			if hj.fate != "queued" {
				h.fatalf("job #%d admitted while %s", hj.id, hj.fate)
			}
			if err := h.checkAdmission(hj, e.Urgent); err != nil {
				h.fatalf("admitting #%d breaks DESIGN §7: %v", hj.id, err)
			}
			hj.fate = "running"
			h.running = append(h.running, hj)
			h.admitted++
		}
	}
	h.compareState()
}

// tierCap is computed here from the harness's own copy of the config.
func (h *harness) tierCap(p Priority) int {
	if n, ok := h.cfg.TierLimits[p]; ok {
		return n
	}
	return int(p)
}

func (h *harness) keyPolicy(key string) KeyPolicy {
	if p, ok := h.cfg.Keys[key]; ok {
		return p
	}
	return h.cfg.DefaultKey
}

// checkAdmission checks the DESIGN §3/§7 rules for starting hj next to the
// ledger's running jobs, independently of the scheduler and the model.
func (h *harness) checkAdmission(hj *hJob, urgent bool) error {
	c := h.types[hj.typ]
	if h.m.pausedTypes[hj.typ] || h.m.pausedKeys[hj.key] {
		return fmt.Errorf("type %s or key %q is paused", hj.typ, hj.key)
	}
	if len(h.running) >= h.cfg.Capacity {
		return fmt.Errorf("capacity %d exceeded", h.cfg.Capacity)
	}
	sameType, sameTier, sameKey := 0, 0, 0
	for _, r := range h.running {
		rc := h.types[r.typ]
		if r.typ == hj.typ {
			sameType++
		}
		if rc.Priority == c.Priority {
			sameTier++
		}
		if r.key == hj.key {
			sameKey++
		}
		if c.ConflictGroup != "" && rc.ConflictGroup == c.ConflictGroup && r.jobID == hj.jobID {
			return fmt.Errorf("conflicts with running #%d (%s/%s)", r.id, r.typ, r.jobID)
		}
	}
	if c.MaxConcurrency > 0 && sameType >= c.MaxConcurrency {
		return fmt.Errorf("type %s above MaxConcurrency %d", hj.typ, c.MaxConcurrency)
	}
	if m := h.keyPolicy(hj.key).MaxInFlight; m > 0 && sameKey >= m {
		return fmt.Errorf("key %q above MaxInFlight %d", hj.key, m)
	}
	if !urgent && sameTier >= h.tierCap(c.Priority) {
		return fmt.Errorf("tier %d above its cap %d by a job that is not urgent", c.Priority, h.tierCap(c.Priority))
	}
	return nil
}

// compareState compares everything observable after an operation.
func (h *harness) compareState() {
	h.t.Helper()
	s, m := h.s, h.m
	now := h.now()
	s.mu.Lock()
	defer s.mu.Unlock()

	// Seats and queue.
	if s.inUse != len(h.running) || len(m.running) != len(h.running) {
		h.unlockedFatal("seats: scheduler %d, model %d, ledger %d", s.inUse, len(m.running), len(h.running))
	}
	if s.queued != len(m.pending) {
		h.unlockedFatal("queued: scheduler %d, model %d", s.queued, len(m.pending))
	}
	// Every job's state.
	for _, hj := range h.jobs {
		mj := m.jobs[hj.id]
		var ms mState
		if mj != nil {
			ms = mj.state
		}
		want := map[string]mState{"queued": mQueued, "running": mRunning, "rejected": 0,
			"pushedout": mDone, "cancelled": mDone, "completed": mDone, "givenback": mDone}[hj.fate]
		var rs mState
		switch hj.j.state {
		case jobQueued, jobParked:
			rs = mQueued
		case jobRunning:
			rs = mRunning
		case jobDone:
			rs = mDone
		}
		if ms != want || rs != want {
			h.unlockedFatal("job #%d (%s): scheduler state %d, model state %d, ledger %s", hj.id, hj.fate, hj.j.state, ms, hj.fate)
		}
		if want == mRunning && (hj.j.startTag != mj.tag || hj.j.est != mj.est) {
			h.unlockedFatal("job #%d: scheduler start tag %v est %v, model %v %v", hj.id, hj.j.startTag, hj.j.est, mj.tag, mj.est)
		}
	}
	// Virtual times.
	if math.Abs(s.vsys-m.vsys) > 1e-9 {
		h.unlockedFatal("V_sys: scheduler %v, model %v", s.vsys, m.vsys)
	}
	for name, mk := range m.keys {
		var rk *keyState
		if m.busy(name) {
			rk = s.activeKeyLocked(name)
			if rk == nil {
				h.unlockedFatal("key %q active in the model, not in the scheduler", name)
			}
		} else {
			if s.activeKeyLocked(name) != nil {
				h.unlockedFatal("key %q idle in the model, active in the scheduler", name)
			}
			if now.Sub(mk.idleSince) > m.keyTTL {
				continue // forgotten or about to be: returns at V_sys either way
			}
			if rk = s.keys.get(name); rk == nil {
				h.unlockedFatal("idle key %q (idle since %v) lost before KeyTTL", name, mk.idleSince.Sub(h.base))
			}
		}
		if math.Abs(rk.v-mk.v) > 1e-9 {
			h.unlockedFatal("V[%q]: scheduler %v, model %v", name, rk.v, mk.v)
		}
	}
	// Ledger: the DESIGN §7 invariants over everything running now.
	tier := map[Priority]int{}
	tierUrgent := map[Priority]int{}
	for _, r := range h.running {
		p := h.types[r.typ].Priority
		tier[p]++
		if r.j.urgent {
			tierUrgent[p]++
		}
	}
	for p, n := range tier {
		if n-tierUrgent[p] > h.tierCap(p) {
			h.unlockedFatal("tier %d: %d running, %d urgent, cap %d", p, n, tierUrgent[p], h.tierCap(p))
		}
	}
	// Counters.
	c := s.counters
	if c.Submitted != uint64(len(h.jobs)) || c.Admitted != uint64(h.admitted) ||
		c.Completed != uint64(h.completed) || c.RejectedQueueFull != uint64(h.rejected+h.pushedOut) ||
		c.PushedOut != uint64(h.pushedOut) || c.Cancelled != uint64(h.cancelled+h.givenBack) {
		h.unlockedFatal("counters %+v; ledger: %d submitted, %d admitted, %d completed, %d rejected, %d pushed out, %d cancelled, %d given back",
			c, len(h.jobs), h.admitted, h.completed, h.rejected, h.pushedOut, h.cancelled, h.givenBack)
	}
	if c.Submitted != c.Completed+c.RejectedQueueFull+c.Cancelled+uint64(s.queued+s.inUse) {
		h.unlockedFatal("counters do not balance with %d queued and %d running: %+v", s.queued, s.inUse, c)
	}
	// The queue in dispatch order, as Snapshot shows it.
	gotQ := s.queueOrderLocked(s.activeKeysLocked(), now.UnixNano())
	wantJobs := m.order(now)
	if len(gotQ) != len(wantJobs) {
		h.unlockedFatal("snapshot queue has %d jobs, model %d", len(gotQ), len(wantJobs))
	}
	for i, q := range gotQ {
		mj := wantJobs[i]
		eff, urgent := m.rank(mj, now)
		want := QueuedSnapshot{Type: mj.typ, JobID: mj.jobID, Key: mj.key, BasePriority: mj.cfg.Priority,
			EffectivePriority: eff, Urgent: urgent, Wait: now.Sub(mj.enq), BlockedBy: m.blockedBy(mj, now)}
		if q.BlockedBy == "conflict" && m.behindFlowMate(mj) {
			// A job parked behind an older job of its own flow (same key
			// and type) on the same resource stays parked after the
			// resource is released, until that job takes the resource or
			// leaves; Snapshot reports it as held back by the conflict.
			// Whether it is parked depends on history the model does not
			// keep, so both answers are accepted here.
			want.BlockedBy = "conflict"
		}
		if q != want {
			h.unlockedFatal("snapshot queue[%d] = %+v, model #%d: %+v", i, q, mj.id, want)
		}
	}
}

// unlockedFatal is fatalf for callers holding s.mu.
func (h *harness) unlockedFatal(format string, args ...any) {
	h.t.Helper()
	h.t.Fatalf("%s\nafter operations:\n  %s\nscheduler:\n%s", fmt.Sprintf(format, args...), strings.Join(h.ops, "\n  "), h.s.dumpLocked())
}

// --- the fuzz target ------------------------------------------------------------

// maxFuzzOps bounds the operations decoded from one input.
const maxFuzzOps = 200

// fuzzConfig decodes the scheduler configuration from the first four bytes.
func fuzzConfig(b [4]byte) Config {
	cfg := Config{
		Capacity:  2 + int(b[0]%4),    // 2..5
		MaxQueue:  3 + int(b[0]>>2%8), // 3..10
		CostAlpha: []float64{0, 0.5, 1, 0.25}[b[0]>>5%4],
		KeyTTL:    time.Duration(20+20*int(b[3]%4)) * time.Second,
		CostTTL:   time.Duration(30+30*int(b[3]>>2%4)) * time.Second,
		Keys: map[string]KeyPolicy{
			"":  {Weight: 0.5},
			"a": {Weight: 2, MinSeats: 1},
			"b": {MaxInFlight: 1, MaxQueued: int(b[3] >> 6 % 4)},
		},
		DefaultKey: KeyPolicy{MaxInFlight: int(b[3] >> 4 % 3)},
	}
	if b[1]%4 != 0 {
		cfg.Aging = &AgingConfig{
			Grace:    time.Duration(b[1]>>2%4) * time.Second,
			Interval: time.Duration(1+b[1]>>4%3) * time.Second,
			Step:     Priority(b[1]>>6%2) + 1,
			// 5 is below clone's priority 6 (see the model's comment on Max).
			Max:    []Priority{0, 3, 5, 8}[b[2]%4],
			Urgent: []Priority{0, 7, 9, 12}[b[2]>>2%4],
		}
	}
	switch b[2] >> 4 % 4 {
	case 1:
		cfg.TierLimits = map[Priority]int{6: 1}
	case 2:
		cfg.TierLimits = map[Priority]int{2: 1}
	case 3:
		cfg.TierLimits = map[Priority]int{1: 2, 6: 2}
	}
	return cfg
}

// runFuzz decodes data into a configuration and up to maxFuzzOps operations
// of two bytes each (an opcode and an argument), runs them, then drains.
func runFuzz(t testing.TB, data []byte) {
	var head [4]byte
	copy(head[:], data)
	if len(data) >= 4 {
		data = data[4:]
	} else {
		data = nil
	}
	h := newHarness(t, fuzzConfig(head), modelTypes)
	for n := 0; len(data) >= 2 && n < maxFuzzOps; n++ {
		op, arg := data[0], data[1]
		data = data[2:]
		switch op % 10 {
		case 0, 1, 2: // arrive
			h.arrive(modelTypeNames[arg%4], modelKeys[arg>>2%4], modelJobIDs[int(arg>>4)%len(modelJobIDs)])
		case 3, 4: // complete a running job after 0..15.5s
			if len(h.running) > 0 {
				hj := h.running[int(arg%8)%len(h.running)]
				h.complete(hj.id, time.Duration(arg>>3)*500*time.Millisecond)
			}
		case 5: // cancel a queued job
			var queued []*hJob
			for _, hj := range h.jobs {
				if hj.fate == "queued" {
					queued = append(queued, hj)
				}
			}
			if len(queued) > 0 {
				h.cancel(queued[int(arg)%len(queued)].id)
			}
		case 6: // a waiter gives back the seat it was just granted
			if len(h.running) > 0 {
				h.giveBack(h.running[int(arg)%len(h.running)].id)
			}
		case 7: // time passes: 0..7.5s, or 10..73s (key and cost expiry)
			d := time.Duration(arg%16) * 500 * time.Millisecond
			if arg&0x80 != 0 {
				d = time.Duration(10+int(arg%64)) * time.Second
			}
			h.advance(d)
		case 8: // pause or resume a type
			typ := modelTypeNames[arg%4]
			h.pause(typ, "", arg&0x10 != 0)
		case 9: // pause or resume a key
			h.pause("", modelKeys[arg%4], arg&0x10 != 0)
		}
	}
	if err := debugPageRenders(h.s); err != nil {
		h.fatalf("%v", err)
	}
	h.drain()
}

// fuzzSeeds are added to the committed corpus in testdata/fuzz/FuzzDispatch.
var fuzzSeeds = [][]byte{
	{},
	// Capacity 2, no aging: a clone and a repack on r0 conflict.
	{0, 0, 0, 0, 0, 0x00, 0, 0x01, 0, 0x04, 3, 0, 3, 0},
	// Aging on, urgent at 7, Max 5: scans age past the tier cap.
	{1, 0x05, 0x05, 0, 0, 0x03, 0, 0x33, 0, 0x23, 7, 0x06, 7, 0x06, 3, 0, 7, 0x0f, 3, 0},
}

func FuzzDispatch(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		runFuzz(t, data)
	})
}

// --- table tests: hand-written operation sequences through the same driver ---

func wantEvents(t *testing.T, what string, got []mEvent, want ...mEvent) {
	t.Helper()
	if !eventsEqual(got, want) {
		t.Fatalf("%s: got %s, want %s", what, formatEvents(got), formatEvents(want))
	}
}

func admit(id int, eff Priority) mEvent { return mEvent{Kind: "admit", ID: id, Eff: eff} }

// TestModelConflictParkAndUnpark: a job whose resource is held waits without
// a seat and blocks nobody; when the resource is released the best waiter
// takes it.
func TestModelConflictParkAndUnpark(t *testing.T) {
	h := newHarness(t, Config{Capacity: 2, MaxQueue: 10}, modelTypes)
	c0, ev := h.arrive("clone", "a", "r0")
	wantEvents(t, "first clone", ev, admit(c0, 6))
	rp, ev := h.arrive("repack", "", "r0")
	wantEvents(t, "repack of a repository being cloned", ev)
	s0, ev := h.arrive("scan", "b", "r0") // no conflict group: runs beside the clone
	wantEvents(t, "scan behind a parked job", ev, admit(s0, 1))
	c1, ev := h.arrive("clone", "b", "r0")
	wantEvents(t, "second clone of r0", ev)
	g0, ev := h.arrive("gc", "", "r0") // group "disk": conflicts with nothing running
	wantEvents(t, "gc with every seat taken", ev)
	// The clone on r0 ends: the waiting clone (priority 6) takes r0 ahead of
	// the repack and the gc (priority 2).
	ev = h.complete(c0, 3*time.Second)
	wantEvents(t, "release of r0", ev, admit(c1, 6))
	ev = h.complete(s0, time.Second)
	wantEvents(t, "a seat, r0 still held", ev, admit(g0, 2))
	ev = h.complete(c1, 3*time.Second)
	wantEvents(t, "second release of r0", ev, admit(rp, 2))
	h.drain()
}

// TestModelKeyCapParks: a key at MaxInFlight waits without blocking other
// keys and resumes when one of its jobs ends.
func TestModelKeyCapParks(t *testing.T) {
	h := newHarness(t, Config{Capacity: 3, Keys: map[string]KeyPolicy{"b": {MaxInFlight: 1}}}, modelTypes)
	b0, ev := h.arrive("clone", "b", "r0")
	wantEvents(t, "b's first", ev, admit(b0, 6))
	b1, ev := h.arrive("clone", "b", "r1")
	wantEvents(t, "b's second, over its cap", ev)
	a0, ev := h.arrive("scan", "a", "r2")
	wantEvents(t, "a lower-priority job of another key", ev, admit(a0, 1))
	ev = h.complete(b0, time.Second)
	wantEvents(t, "b below its cap again", ev, admit(b1, 6))
	h.drain()
}

// TestModelUrgentExceedsTierCap: the scan tier's cap is 1; a scan that ages
// to Urgent is admitted beside the running one, and only then.
func TestModelUrgentExceedsTierCap(t *testing.T) {
	h := newHarness(t, Config{Capacity: 3, Aging: &AgingConfig{Interval: time.Second, Urgent: 7}}, modelTypes)
	s0, ev := h.arrive("scan", "a", "r0")
	wantEvents(t, "first scan", ev, admit(s0, 1))
	s1, ev := h.arrive("scan", "b", "r1")
	wantEvents(t, "second scan, tier at its cap", ev)
	wantEvents(t, "aged 6 of 7", h.advance(5*time.Second))
	ev = h.advance(time.Second)
	wantEvents(t, "aged 7: urgent", ev, mEvent{Kind: "admit", ID: s1, Urgent: true})
	h.s.mu.Lock()
	n := h.s.tiers[1].running
	h.s.mu.Unlock()
	if n != 2 {
		t.Fatalf("scan tier runs %d jobs, want 2 (cap 1 plus the urgent one)", n)
	}
	// A third scan is not urgent: it waits for the tier to drop below its cap.
	s2, ev := h.arrive("scan", "c", "r2")
	wantEvents(t, "third scan", ev)
	wantEvents(t, "one scan done, tier still at its cap", h.complete(s0, time.Second))
	wantEvents(t, "tier below its cap", h.complete(s1, time.Second), admit(s2, 1))
	h.drain()
}

// TestModelPushOut: a full queue gives the newest job of the longest key to
// an arrival from a shorter key, and turns away an arrival from the longest.
func TestModelPushOut(t *testing.T) {
	h := newHarness(t, Config{Capacity: 2, MaxQueue: 3}, modelTypes)
	x0, _ := h.arrive("clone", "a", "r0")
	x1, _ := h.arrive("clone", "a", "r1")
	a2, _ := h.arrive("scan", "a", "r2")
	a3, _ := h.arrive("scan", "a", "r2")
	a4, ev := h.arrive("scan", "a", "r2")
	wantEvents(t, "queue filled", ev)
	b0, ev := h.arrive("scan", "b", "r0")
	wantEvents(t, "b arrives at a full queue", ev, mEvent{Kind: "pushout", ID: a4})
	a5, ev := h.arrive("scan", "a", "r0")
	wantEvents(t, "a (2 queued, the longest) arrives", ev)
	c0, ev := h.arrive("gc", "c", "r0")
	wantEvents(t, "c arrives", ev, mEvent{Kind: "pushout", ID: a3})
	b1, ev := h.arrive("scan", "b", "r1") // a, b, c have one each: nobody is longer than b
	wantEvents(t, "b arrives with keys tied", ev)
	for id, fate := range map[int]string{a4: "pushedout", a3: "pushedout", a5: "rejected", b1: "rejected", a2: "queued", b0: "queued", c0: "queued"} {
		if h.jobs[id].fate != fate {
			t.Errorf("job #%d is %s, want %s", id, h.jobs[id].fate, fate)
		}
	}
	_, _ = x0, x1
	h.drain()
}

// TestModelAgingFlipsOrder: a gc (priority 2) that waited long enough goes
// ahead of a clone (priority 6) that arrived later; with less wait it does
// not. Grace 1s, Interval 1s, Step 2: the gc's aged priority after w seconds
// is 2 + 2·floor(w-1).
func TestModelAgingFlipsOrder(t *testing.T) {
	for _, tc := range []struct {
		wait    time.Duration
		gcFirst bool
		gcEff   Priority
	}{
		{time.Second, false, 2},     // grace: no promotion
		{2 * time.Second, false, 4}, // one promotion: 4 < 6
		{3 * time.Second, true, 6},  // 6 = 6: keys tie on V, the older goes first
		{3500 * time.Millisecond, true, 6},
		{4 * time.Second, true, 8}, // 8 > 6
	} {
		t.Run(tc.wait.String(), func(t *testing.T) {
			h := newHarness(t, Config{Capacity: 1, Aging: &AgingConfig{Grace: time.Second, Interval: time.Second, Step: 2}}, modelTypes)
			hold, _ := h.arrive("scan", "c", "r0")
			g, _ := h.arrive("gc", "a", "r1")
			h.advance(tc.wait)
			c, _ := h.arrive("clone", "b", "r2")
			ev := h.complete(hold, time.Second)
			if tc.gcFirst {
				wantEvents(t, "first release", ev, admit(g, tc.gcEff))
			} else {
				wantEvents(t, "first release", ev, admit(c, 6))
			}
			h.drain()
		})
	}
}

// TestModelGiveBack: a seat granted to a waiter that gave up is handed back
// without charge (V_k returns to where it was, nothing is learned) and goes
// to the next waiter at once.
func TestModelGiveBack(t *testing.T) {
	h := newHarness(t, Config{Capacity: 1}, modelTypes)
	j0, _ := h.arrive("clone", "a", "r0")
	if v := h.m.keys["a"].v; v != 3 {
		t.Fatalf("V_a after admission = %v, want the estimate 3", v)
	}
	j1, ev := h.arrive("clone", "b", "r1")
	wantEvents(t, "second arrival", ev)
	wantEvents(t, "give-back", h.giveBack(j0), admit(j1, 6))
	if v := h.m.keys["a"].v; v != 0 {
		t.Fatalf("V_a after give-back = %v, want 0", v) // the harness checked the scheduler agrees
	}
	h.complete(j1, 5*time.Second)
	j2, _ := h.arrive("clone", "a", "r0")
	h.s.mu.Lock()
	est := h.jobs[j2].j.est
	h.s.mu.Unlock()
	if est != 3 {
		t.Fatalf("estimate after a give-back = %v, want DefaultCost 3 (nothing learned)", est)
	}
	h.drain()
	if c := h.s.Snapshot().Counters; c.Cancelled != 1 || c.Completed != 2 || c.Admitted != 3 {
		t.Fatalf("counters %+v", c)
	}
}

// TestModelUrgentAdmissionRecordsStaleRank: the same job admitted at the
// same wait must carry the same aging promotions (DESIGN §4: promotions =
// floor((wait − Grace)/Interval), computed at dispatch) whatever dispatches
// happened while it waited.
func TestModelUrgentAdmissionRecordsStaleRank(t *testing.T) {
	for _, midway := range []bool{false, true} {
		h := newHarness(t, Config{Capacity: 1, Aging: &AgingConfig{Interval: time.Second, Urgent: 7}}, modelTypes)
		hold, _ := h.arrive("clone", "a", "r0")
		s, _ := h.arrive("scan", "b", "r1")
		if midway {
			h.advance(6 * time.Second) // a dispatch at the instant the scan turns urgent
			h.advance(4 * time.Second)
		} else {
			h.advance(10 * time.Second)
		}
		h.complete(hold, time.Second)
		h.s.mu.Lock()
		promoted, eff, total := h.jobs[s].j.promoted, h.jobs[s].j.eff, h.s.counters.AgingPromotions
		h.s.mu.Unlock()
		if promoted != 10 || eff != 11 || total != 10 {
			t.Errorf("dispatch at 6s: %v: scan admitted after 10s with %d promotions (eff %d), counter %d; want 10 (eff 11)", midway, promoted, eff, total)
		}
		h.drain()
	}
}

// TestModelParkedFlowMateAfterCancel: two jobs of one flow wait on a held
// resource; at its release the older returns to the queue but a clone takes
// the free seat, and the older is then cancelled. The younger must not stay
// parked on a resource nobody holds (fixed in b0fc67c).
func TestModelParkedFlowMateAfterCancel(t *testing.T) {
	h := newHarness(t, Config{Capacity: 2}, modelTypes)
	g0, _ := h.arrive("gc", "a", "r0")
	g1, _ := h.arrive("gc", "", "r0") // parked on disk/r0
	g2, _ := h.arrive("gc", "", "r0") // parked behind it
	c0, _ := h.arrive("clone", "c", "r2")
	c1, _ := h.arrive("clone", "c", "r1")
	wantEvents(t, "release of disk/r0", h.complete(g0, time.Second), admit(c1, 6))
	h.cancel(g1)
	wantEvents(t, "a seat opens", h.complete(c0, time.Second), admit(g2, 2))
	h.drain()
}

// TestModelReleaseThenReorder: a key's virtual time changes at completion,
// and the same completion releases a resource whose waiter returns to a type
// heap that also holds a flow of that key. k3 (V 10) must go before k2
// (V 20) whatever order the scheduler updates its heaps in.
func TestModelReleaseThenReorder(t *testing.T) {
	h := newHarness(t, Config{Capacity: 2}, modelTypes)
	k3, _ := h.arrive("scan", "k3", "r9")
	h.complete(k3, 10*time.Second) // V(k3) = 10
	k2, _ := h.arrive("scan", "k2", "r9")
	h.complete(k2, 20*time.Second)     // V(k2) = 20
	j, _ := h.arrive("gc", "k1", "r0") // V(k1) = 4
	h.arrive("gc", "k2", "r0")         // parked on disk/r0
	h.arrive("scan", "k4", "r9")       // takes the second seat
	q3, _ := h.arrive("gc", "k3", "r1")
	h.arrive("gc", "k1", "r2")
	// k1's job overruns (V(k1) = 30) and releases disk/r0: the gc heap holds
	// k3 (10), k1 (30) and the returned k2 (20). The free seat goes to k3.
	wantEvents(t, "release", h.complete(j, 30*time.Second), admit(q3, 2))
	h.drain()
}

var modelSequences = flag.Int("model.sequences", 150, "random operation sequences TestModelRandomSequences runs")

// TestModelRandomSequences runs the fuzz driver on pseudo-random inputs from
// a fixed seed, longer than the fuzzer's mutations usually grow: a
// deterministic complement to the corpus. Run more with -model.sequences.
func TestModelRandomSequences(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range *modelSequences {
		data := randomFuzzInput(r)
		if !t.Run(fmt.Sprint(i), func(t *testing.T) { runFuzz(t, data) }) {
			t.Fatalf("input %q", data)
		}
	}
}

// randomFuzzInput returns a configuration and up to maxFuzzOps operations,
// some sequences biased towards arrivals (queue bounds), short time steps
// (aging without expiry) or no cancellations.
func randomFuzzInput(r *rand.Rand) []byte {
	b := make([]byte, 4+2*r.IntN(maxFuzzOps+1))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	mode := r.IntN(4)
	for i := 4; i+1 < len(b); i += 2 {
		switch {
		case mode == 1 && r.IntN(3) > 0:
			b[i] = byte(r.IntN(3)) // arrive
		case mode == 2 && b[i]%10 == 7:
			b[i+1] &= 0x7f // short advance
		case mode == 3 && (b[i]%10 == 5 || b[i]%10 == 6):
			b[i] = 0 // arrive instead of cancel or give back
		}
	}
	return b
}
