package admission

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// This file ports the five scenarios of the Go seed (seeds/seed_sim.py, run
// `python3 /work/shared/seeds/seed_sim.py` for its admission and completion
// order) to the real scheduler under testing/synctest. The sim's costs are
// the job types' DefaultCost (or a seeded cost estimate where one type has
// several costs), its durations are time.Sleep inside the job, its arrival
// instants are when the driver calls Submit or starts a RunSync goroutine.
//
// Each test asserts the property its scenario demonstrates. Where the
// admission instant of every job is determined (no two events at one
// instant can be ordered differently with a different outcome) it is also
// compared with the sim's, copied below from the sim's output.

// scnJob is one job of a scenario: a foreground request when key is not
// empty (RunSync from its own goroutine), a background job when it is
// (Submit). It arrives at `at` after the scenario starts and holds its seat
// for dur.
type scnJob struct {
	at  time.Duration
	typ JobType
	id  string
	key string
	dur time.Duration
}

func scnLabel(typ JobType, id string) string { return string(typ) + "/" + id }

// scnSpan is when one job held its seat, relative to the scenario start.
type scnSpan struct {
	start, end time.Duration
	ended      bool
}

// scnMake is the sim's make(): the three git job types, with the costs of
// the scenario as DefaultCost.
func scnMake(t *testing.T, capacity int, cloneCost, repackCost, pullCost time.Duration) *Scheduler {
	t.Helper()
	s, err := New(Config{Capacity: capacity})
	must(t, err)
	must(t, s.RegisterType("sync-clone", JobTypeConfig{MaxConcurrency: 8, ConflictGroup: "git", Priority: 8, DefaultCost: cloneCost}))
	must(t, s.RegisterType("repack", JobTypeConfig{MaxConcurrency: 3, ConflictGroup: "git", Priority: 4, DefaultCost: repackCost}))
	must(t, s.RegisterType("pull", JobTypeConfig{MaxConcurrency: 3, ConflictGroup: "git", Priority: 4, DefaultCost: pullCost}))
	return s
}

// scnSeedCost sets the learned cost estimate of (typ, id), as if earlier
// runs had measured it. The sim gives each job its own cost; the scheduler
// has one DefaultCost per type and learns the rest per (type, job ID).
func scnSeedCost(s *Scheduler, typ JobType, id string, est time.Duration) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	k := costKey{typ, id}
	s.seedCostLocked(k, &costEntry{key: k, est: est.Seconds(), at: now})
}

// scnCheck is checkInvariants reporting with t.Errorf (once per test), so
// that a driver goes on and every goroutine of its bubble still ends: a
// t.Fatal in a bubble's main goroutine while others are blocked makes
// synctest panic and takes the whole test binary down with it.
func scnCheck(t testing.TB, s *Scheduler) {
	t.Helper()
	if t.Failed() {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkInvariantsLocked(); err != nil {
		t.Errorf("invariant broken: %v\n%s", err, s.dumpLocked())
	}
}

// scnPlay runs jobs on s inside the caller's synctest bubble and returns
// when each job held its seat. The driver visits, in order, every arrival
// instant, every whole second up to horizon and every probe instant: it
// first lets the work due at that instant settle (synctest.Wait, so
// completions at an arrival instant come first), then starts the arrivals
// one at a time in slice order, each settled before the next (so same-instant
// arrivals reach the scheduler in the sim's submission order), then checks
// the invariants and runs the probe. It returns once every foreground
// goroutine has ended; the caller checks that every job ran and closes s.
func scnPlay(t *testing.T, s *Scheduler, jobs []scnJob, horizon time.Duration, probes map[time.Duration]func()) map[string]scnSpan {
	t.Helper()
	t0 := time.Now()
	var mu sync.Mutex
	spans := map[string]*scnSpan{}
	work := func(label string, dur time.Duration) func(context.Context) error {
		return func(context.Context) error {
			mu.Lock()
			if spans[label] != nil {
				t.Errorf("%s ran twice", label)
			}
			sp := &scnSpan{start: time.Since(t0)}
			spans[label] = sp
			mu.Unlock()
			time.Sleep(dur)
			mu.Lock()
			sp.end, sp.ended = time.Since(t0), true
			mu.Unlock()
			return nil
		}
	}

	var instants []time.Duration
	for _, j := range jobs {
		instants = append(instants, j.at)
	}
	for at := time.Duration(0); at <= horizon; at += time.Second {
		instants = append(instants, at)
	}
	for at := range probes {
		instants = append(instants, at)
	}
	slices.Sort(instants)
	instants = slices.Compact(instants)

	var wg sync.WaitGroup
	for _, at := range instants {
		time.Sleep(at - time.Since(t0))
		synctest.Wait()
		for _, j := range jobs {
			if j.at != at {
				continue
			}
			label := scnLabel(j.typ, j.id)
			if j.key == "" {
				if err := s.Submit(j.typ, j.id, work(label, j.dur)); err != nil {
					t.Errorf("Submit %s: %v", label, err)
				}
			} else {
				wg.Go(func() {
					if err := s.RunSync(context.Background(), j.typ, j.id, j.key, work(label, j.dur)); err != nil {
						t.Errorf("RunSync %s for %q: %v", label, j.key, err)
					}
				})
			}
			synctest.Wait()
		}
		scnCheck(t, s)
		if p := probes[at]; p != nil {
			p()
		}
	}
	wg.Wait()
	synctest.Wait()
	scnCheck(t, s)

	mu.Lock()
	defer mu.Unlock()
	out := make(map[string]scnSpan, len(spans))
	for _, j := range jobs {
		label := scnLabel(j.typ, j.id)
		sp := spans[label]
		switch {
		case sp == nil:
			t.Errorf("%s never ran by %v", label, horizon)
			continue
		case !sp.ended:
			t.Errorf("%s admitted at %v had not ended by %v", label, sp.start, horizon)
		case sp.end-sp.start != j.dur:
			t.Errorf("%s held its seat %v, want %v", label, sp.end-sp.start, j.dur)
		}
		out[label] = *sp
	}
	return out
}

// scnWantAdmits compares admission instants with the sim's (whole seconds).
func scnWantAdmits(t *testing.T, got map[string]scnSpan, want map[string]int) {
	t.Helper()
	for _, label := range slices.Sorted(maps.Keys(want)) {
		sp, ok := got[label]
		if !ok {
			continue // reported by scnPlay
		}
		if w := time.Duration(want[label]) * time.Second; sp.start != w {
			t.Errorf("%s admitted at %v, sim admits it at %v", label, sp.start, w)
		}
	}
}

// scnTimeline renders the admissions in order, for the test log.
func scnTimeline(spans map[string]scnSpan) string {
	labels := slices.Sorted(maps.Keys(spans))
	slices.SortStableFunc(labels, func(a, b string) int { return int(spans[a].start - spans[b].start) })
	var b strings.Builder
	for _, l := range labels {
		fmt.Fprintf(&b, " %s@%v", l, spans[l].start)
	}
	return b.String()
}

// scnQueue renders a snapshot's queue in dispatch order as type/id labels.
func scnQueue(snap Snapshot) []string {
	var out []string
	for _, q := range snap.Queue {
		out = append(out, scnLabel(q.Type, q.JobID))
	}
	return out
}

func scnRange(typ JobType, prefix string, from, to int, at time.Duration, key string, dur time.Duration) []scnJob {
	var js []scnJob
	for i := from; i <= to; i++ {
		js = append(js, scnJob{at: at, typ: typ, id: fmt.Sprintf("%s%d", prefix, i), key: key, dur: dur})
	}
	return js
}

// TestScenario1ForegroundNotBlockedByBackground (seed s1): six repacks and
// four pulls saturate the background tier (priority 4, cap 4) from t=0; a
// foreground clone arriving at t=3 starts at t=3, with zero wait, because
// the tier cap leaves seats that background work can never take. Every
// admission instant is determined and equals the sim's.
func TestScenario1ForegroundNotBlockedByBackground(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := scnMake(t, 8, 10*time.Second, 20*time.Second, 10*time.Second)
		jobs := slices.Concat(
			scnRange("repack", "r", 1, 6, 0, "", 8*time.Second),
			scnRange("pull", "r", 7, 10, 0, "", 6*time.Second),
			[]scnJob{{at: 3 * time.Second, typ: "sync-clone", id: "r99", key: "dev1", dur: 2 * time.Second}},
		)
		probes := map[time.Duration]func(){
			// Background saturated: its tier is at its cap, and 4 seats stay free.
			2 * time.Second: func() {
				snap := s.Snapshot()
				if snap.InUse != 4 || snap.Queued != 6 {
					t.Errorf("t=2: InUse %d, Queued %d; want 4 running (tier cap), 6 queued", snap.InUse, snap.Queued)
				}
			},
		}
		spans := scnPlay(t, s, jobs, 25*time.Second, probes)
		t.Log("admissions:", scnTimeline(spans))
		if got := spans["sync-clone/r99"].start; got != 3*time.Second {
			t.Errorf("foreground clone arriving at 3s admitted at %v, want 3s (zero wait)", got)
		}
		scnWantAdmits(t, spans, map[string]int{
			"repack/r1": 0, "repack/r2": 0, "repack/r3": 0, "pull/r7": 0,
			"sync-clone/r99": 3, "pull/r8": 6,
			"repack/r4": 8, "repack/r5": 8, "repack/r6": 8,
			"pull/r9": 12, "pull/r10": 16,
		})
		must(t, s.Close(t.Context()))
	})
}

// TestScenario2NewClientAheadOfBacklog (seed s2): client A queues ten clones
// at t=1 (five start, five wait); client B's two clones arrive at t=2 while
// every seat is held. B is served ahead of A's backlog: at t=2 the queue's
// dispatch order puts b1, b2 before a6..a10, both of B's clones start at the
// first seat opening (t=4, a wait of 2s), and two of A's clones queued before
// B's arrival (a9, a10) start only at the next opening (t=6). FIFO would
// admit a6..a10 at t=4 and B at t=6. Every admission instant equals the sim's.
func TestScenario2NewClientAheadOfBacklog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := scnMake(t, 8, 10*time.Second, 20*time.Second, 10*time.Second)
		jobs := slices.Concat(
			scnRange("repack", "repo", 1, 4, 0, "", 6*time.Second),
			scnRange("sync-clone", "a", 1, 10, 1*time.Second, "clientA", 3*time.Second),
			scnRange("sync-clone", "b", 1, 2, 2*time.Second, "clientB", 3*time.Second),
		)
		probes := map[time.Duration]func(){
			2 * time.Second: func() {
				got := scnQueue(s.Snapshot())
				want := []string{"sync-clone/b1", "sync-clone/b2",
					"sync-clone/a6", "sync-clone/a7", "sync-clone/a8", "sync-clone/a9", "sync-clone/a10",
					"repack/repo4"}
				if !slices.Equal(got, want) {
					t.Errorf("t=2: dispatch order %v\nwant %v", got, want)
				}
			},
		}
		spans := scnPlay(t, s, jobs, 30*time.Second, probes)
		t.Log("admissions:", scnTimeline(spans))
		for _, b := range []string{"sync-clone/b1", "sync-clone/b2"} {
			if wait := spans[b].start - 2*time.Second; wait != 2*time.Second {
				t.Errorf("%s waited %v, want 2s (the first seat opening after its arrival)", b, wait)
			}
			for _, a := range []string{"sync-clone/a9", "sync-clone/a10"} {
				if spans[a].start <= spans[b].start {
					t.Errorf("%s (queued at t=1) admitted at %v, not after %s at %v", a, spans[a].start, b, spans[b].start)
				}
			}
		}
		scnWantAdmits(t, spans, map[string]int{
			"repack/repo1": 0, "repack/repo2": 0, "repack/repo3": 0,
			"sync-clone/a1": 1, "sync-clone/a2": 1, "sync-clone/a3": 1, "sync-clone/a4": 1, "sync-clone/a5": 1,
			"sync-clone/b1": 4, "sync-clone/b2": 4, "sync-clone/a6": 4, "sync-clone/a7": 4, "sync-clone/a8": 4,
			"sync-clone/a9": 6, "sync-clone/a10": 6, "repack/repo4": 6,
		})
		must(t, s.Close(t.Context()))
	})
}

// scnSeedS3Costs gives scenario 3's repositories the costs the sim assigns
// them, as if earlier runs had measured them: linux 100s, small1-8 5s,
// med1-2 20s.
func scnSeedS3Costs(s *Scheduler) {
	scnSeedCost(s, "sync-clone", "linux", 100*time.Second)
	for i := 1; i <= 8; i++ {
		scnSeedCost(s, "sync-clone", fmt.Sprintf("small%d", i), 5*time.Second)
	}
	scnSeedCost(s, "sync-clone", "med1", 20*time.Second)
	scnSeedCost(s, "sync-clone", "med2", 20*time.Second)
}

// TestScenario3CostAware (seed s3, as in the sim): client A clones linux
// (cost 100) and client B eight small repositories (cost 5) at t=0; client C
// two medium ones (cost 20) at t=5. The expensive clone is charged 100 at
// admission (A's virtual time is 100, B's 35 after seven small clones), B's
// cheap clones are not held back by it (the eighth starts at the first seat
// opening, t=2), and C's clones start on arrival. Every admission instant
// equals the sim's. TestScenario3CostAwareUnderContention checks the same
// property when seats are scarce.
func TestScenario3CostAware(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := scnMake(t, 8, 10*time.Second, 20*time.Second, 10*time.Second)
		scnSeedS3Costs(s)
		jobs := slices.Concat(
			[]scnJob{{at: 0, typ: "sync-clone", id: "linux", key: "clientA", dur: 15 * time.Second}},
			scnRange("sync-clone", "small", 1, 8, 0, "clientB", 2*time.Second),
			scnRange("sync-clone", "med", 1, 2, 5*time.Second, "clientC", 4*time.Second),
		)
		probes := map[time.Duration]func(){
			0: func() {
				v := scnVirtual(s.Snapshot())
				if v["clientA"] != 100 || v["clientB"] != 35 {
					t.Errorf("t=0: virtual times %v; want clientA 100 (linux charged its cost), clientB 35 (7 × 5)", v)
				}
			},
		}
		spans := scnPlay(t, s, jobs, 25*time.Second, probes)
		t.Log("admissions:", scnTimeline(spans))
		if got := spans["sync-clone/small8"].start; got != 2*time.Second {
			t.Errorf("small8 admitted at %v, want 2s (the first seat opening)", got)
		}
		for _, m := range []string{"sync-clone/med1", "sync-clone/med2"} {
			if got := spans[m].start; got != 5*time.Second {
				t.Errorf("%s admitted at %v, want 5s (on arrival)", m, got)
			}
		}
		want := map[string]int{"sync-clone/linux": 0, "sync-clone/small8": 2, "sync-clone/med1": 5, "sync-clone/med2": 5}
		for i := 1; i <= 7; i++ {
			want[fmt.Sprintf("sync-clone/small%d", i)] = 0
		}
		scnWantAdmits(t, spans, want)
		must(t, s.Close(t.Context()))
	})
}

// scnVirtual maps each active key of a snapshot to its virtual time.
func scnVirtual(snap Snapshot) map[string]float64 {
	v := map[string]float64{}
	for _, k := range snap.Keys {
		v[k.Key] = k.VirtualTime
	}
	return v
}

// TestScenario3CostAwareUnderContention is seed s3 with 4 seats, so that
// client A also has further work waiting: A's linux clone (cost 100, 15s)
// and six default clones (cost 10, 4s) arrive first at t=0, B's eight small
// clones (cost 5, 2s) next, C's two medium clones (cost 20, 5s) at t=5 while
// every seat is held. Because the linux clone is charged 100 at admission, A
// sits far behind B and C in virtual time: at t=5 the dispatch order is C,
// then B, then A's queued a4..a6; C's first clone starts at the first seat
// opening after its arrival (t=6), and every job of B and C starts before
// any queued job of A. A scheduler charging per job instead of per cost
// would let A's a4 in before B's last clones.
func TestScenario3CostAwareUnderContention(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := scnMake(t, 4, 10*time.Second, 20*time.Second, 10*time.Second)
		scnSeedS3Costs(s)
		jobs := slices.Concat(
			[]scnJob{{at: 0, typ: "sync-clone", id: "linux", key: "clientA", dur: 15 * time.Second}},
			scnRange("sync-clone", "a", 1, 6, 0, "clientA", 4*time.Second),
			scnRange("sync-clone", "small", 1, 8, 0, "clientB", 2*time.Second),
			scnRange("sync-clone", "med", 1, 2, 5*time.Second, "clientC", 5*time.Second),
		)
		probes := map[time.Duration]func(){
			5 * time.Second: func() {
				got := scnQueue(s.Snapshot())
				want := []string{"sync-clone/med1", "sync-clone/med2",
					"sync-clone/small4", "sync-clone/small5", "sync-clone/small6", "sync-clone/small7", "sync-clone/small8",
					"sync-clone/a4", "sync-clone/a5", "sync-clone/a6"}
				if !slices.Equal(got, want) {
					t.Errorf("t=5: dispatch order %v\nwant %v", got, want)
				}
			},
		}
		spans := scnPlay(t, s, jobs, 30*time.Second, probes)
		t.Log("admissions:", scnTimeline(spans))
		if got := spans["sync-clone/med1"].start; got != 6*time.Second {
			t.Errorf("med1 (arrived at 5s) admitted at %v, want 6s (the first seat opening)", got)
		}
		firstA := min(spans["sync-clone/a4"].start, spans["sync-clone/a5"].start, spans["sync-clone/a6"].start)
		for label, sp := range spans {
			if strings.Contains(label, "/small") || strings.Contains(label, "/med") {
				if sp.start >= firstA {
					t.Errorf("%s admitted at %v, not before clientA's queued work (first at %v)", label, sp.start, firstA)
				}
			}
		}
		must(t, s.Close(t.Context()))
	})
}

// TestScenario4ConflictSafety (seed s4): a clone and a repack of repo1 share
// the conflict group "git", as do those of repo2. The two jobs of one
// repository never overlap (the repack waits, holding no seat, until the
// clone ends), while repo1's and repo2's work runs in parallel. Every
// admission instant equals the sim's.
func TestScenario4ConflictSafety(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := scnMake(t, 8, 10*time.Second, 20*time.Second, 10*time.Second)
		jobs := []scnJob{
			{at: 0, typ: "sync-clone", id: "repo1", key: "dev1", dur: 3 * time.Second},
			{at: 0, typ: "repack", id: "repo1", dur: 4 * time.Second},
			{at: 0, typ: "sync-clone", id: "repo2", key: "dev2", dur: 3 * time.Second},
			{at: 0, typ: "repack", id: "repo2", dur: 4 * time.Second},
		}
		probes := map[time.Duration]func(){
			1 * time.Second: func() {
				snap := s.Snapshot()
				if snap.InUse != 2 || len(snap.Queue) != 2 || snap.Queue[0].BlockedBy != "conflict" || snap.Queue[1].BlockedBy != "conflict" {
					t.Errorf("t=1: want 2 clones running and both repacks waiting on a conflict, got InUse %d queue %+v", snap.InUse, snap.Queue)
				}
			},
		}
		spans := scnPlay(t, s, jobs, 20*time.Second, probes)
		t.Log("admissions:", scnTimeline(spans))
		overlap := func(a, b scnSpan) bool { return a.start < b.end && b.start < a.end }
		for _, repo := range []string{"repo1", "repo2"} {
			c, r := spans["sync-clone/"+repo], spans["repack/"+repo]
			if overlap(c, r) {
				t.Errorf("%s: clone [%v, %v) and repack [%v, %v) overlap", repo, c.start, c.end, r.start, r.end)
			}
		}
		if !overlap(spans["sync-clone/repo1"], spans["sync-clone/repo2"]) || !overlap(spans["repack/repo1"], spans["repack/repo2"]) {
			t.Errorf("repo1 and repo2 work did not run in parallel: %s", scnTimeline(spans))
		}
		scnWantAdmits(t, spans, map[string]int{
			"sync-clone/repo1": 0, "sync-clone/repo2": 0, "repack/repo1": 3, "repack/repo2": 3,
		})
		must(t, s.Close(t.Context()))
	})
}

// TestScenario5ManyBackgroundTypes (seed s5): four background types of
// priority 4 (type cap 4 each) with twelve jobs queued at t=0 share one tier
// capped at 4 seats, so however many background types there are, all four
// foreground clones arriving at t=2 start at t=2. Every admission instant
// equals the sim's.
func TestScenario5ManyBackgroundTypes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := New(Config{Capacity: 8})
		must(t, err)
		bgTypes := []JobType{"repack", "pull", "gc", "verify"}
		for _, typ := range bgTypes {
			must(t, s.RegisterType(typ, JobTypeConfig{MaxConcurrency: 4, ConflictGroup: "git", Priority: 4, DefaultCost: 15 * time.Second}))
		}
		must(t, s.RegisterType("sync-clone", JobTypeConfig{MaxConcurrency: 8, ConflictGroup: "git", Priority: 8, DefaultCost: 10 * time.Second}))
		var jobs []scnJob
		for _, typ := range bgTypes {
			jobs = append(jobs, scnRange(typ, string(typ), 1, 3, 0, "", 6*time.Second)...)
		}
		jobs = append(jobs, scnRange("sync-clone", "clone", 1, 4, 2*time.Second, "clientA", 2*time.Second)...)
		probes := map[time.Duration]func(){
			2 * time.Second: func() {
				snap := s.Snapshot()
				if snap.InUse != 8 || snap.Queued != 8 {
					t.Errorf("t=2: InUse %d, Queued %d; want 8 running (4 background, 4 clones), 8 background queued", snap.InUse, snap.Queued)
				}
			},
		}
		spans := scnPlay(t, s, jobs, 30*time.Second, probes)
		t.Log("admissions:", scnTimeline(spans))
		for i := 1; i <= 4; i++ {
			if got := spans[fmt.Sprintf("sync-clone/clone%d", i)].start; got != 2*time.Second {
				t.Errorf("clone%d arriving at 2s admitted at %v, want 2s (zero wait)", i, got)
			}
		}
		scnWantAdmits(t, spans, map[string]int{
			"repack/repack1": 0, "repack/repack2": 0, "repack/repack3": 0, "pull/pull1": 0,
			"sync-clone/clone1": 2, "sync-clone/clone2": 2, "sync-clone/clone3": 2, "sync-clone/clone4": 2,
			"pull/pull2": 6, "pull/pull3": 6, "gc/gc1": 6, "gc/gc2": 6,
			"gc/gc3": 12, "verify/verify1": 12, "verify/verify2": 12, "verify/verify3": 12,
		})
		must(t, s.Close(t.Context()))
	})
}
