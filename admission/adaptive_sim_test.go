package admission

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fairseat/fairseat/internal/simserver"
)

// Adaptive capacity against a simulated server (internal/simserver), under
// testing/synctest: a job's seat time is base × max(1, running/C), running
// the jobs the server runs at its start (itself included) and C the
// server's true capacity. Past C the server does no more work, each job
// just takes longer: the limit that keeps latency at base and the server
// busy is C.

// simClient is one caller: loops goroutines, each asking for a job, waiting
// for a seat, doing it and pausing think before the next.
type simClient struct {
	key   string
	loops int
	think time.Duration
	// job draws the next job: its ID and base time, elapsed into the run.
	job func(rng *rand.Rand, elapsed time.Duration) (string, time.Duration)
	// seed varies the draws of job from one run to the next; with 0 every
	// run draws the same jobs, and runs differ only in the order in which
	// goroutines woken at one instant run.
	seed uint32
}

// simResult is what a run measured.
type simResult struct {
	limits []int                      // capacity at each tick
	probe  []bool                     // whether a probe had halved it then
	waits  map[string][]time.Duration // per key, of admitted requests, in order of admission
	done   map[string]int             // jobs completed per key
	shed   map[string]int             // ErrOverloaded rejections per key
	work   time.Duration              // base time of all completed jobs
}

// goodput is the work done per second of d, in seats of base time: at most
// the true capacity.
func (r simResult) goodput(d time.Duration) float64 { return r.work.Seconds() / d.Seconds() }

// simTick is how often a run samples the capacity.
const simTick = 100 * time.Millisecond

// simRun plays clients against v through s for d, calling at(elapsed) at
// every tick before sampling (to change the server or the load), then
// closes s. It runs inside a synctest bubble. complete, if not nil, is
// called after each job with its seat time (a contrast limiter's input).
func simRun(t *testing.T, s *Scheduler, v *simserver.Server, clients []simClient, d time.Duration,
	at func(elapsed time.Duration), complete func(seat time.Duration)) simResult {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	start := time.Now()
	res := simResult{waits: map[string][]time.Duration{}, done: map[string]int{}, shed: map[string]int{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for ci, c := range clients {
		for l := range c.loops {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(c.seed)<<32|uint64(ci), uint64(l)))
				for ctx.Err() == nil {
					id, base := c.job(rng, time.Since(start))
					asked := time.Now()
					var seat time.Duration
					err := s.RunSync(ctx, "job", id, c.key, func(context.Context) error {
						wait := time.Since(asked)
						seat = v.Serve(base)
						mu.Lock()
						res.waits[c.key] = append(res.waits[c.key], wait)
						res.done[c.key]++
						res.work += base
						mu.Unlock()
						return nil
					})
					switch {
					case err == nil:
						if complete != nil {
							complete(seat)
						}
					case ctx.Err() != nil:
						return
					case isOverloaded(err):
						mu.Lock()
						res.shed[c.key]++
						mu.Unlock()
						time.Sleep(10 * time.Millisecond) // a client backs off before retrying
						continue
					default:
						t.Errorf("RunSync: %v", err)
						return
					}
					if c.think > 0 {
						time.Sleep(c.think)
					}
				}
			})
		}
	}
	for el := simTick; el <= d; el += simTick {
		time.Sleep(simTick)
		if at != nil {
			at(el)
		}
		snap := s.Snapshot()
		res.limits = append(res.limits, snap.Capacity)
		res.probe = append(res.probe, snap.Adaptive != nil && snap.Adaptive.Probing)
	}
	cancel()
	wg.Wait()
	must(t, s.Close(context.Background()))
	return res
}

func isOverloaded(err error) bool {
	rej, ok := err.(*RejectedError)
	return ok && rej.Reason == ErrOverloaded && !rej.PerKey
}

// simScheduler is an adaptive scheduler with one job type, "job", of
// foreground priority, whose tier cap is lifted to Max.
func simScheduler(t *testing.T, a AdaptiveConfig, opts ...Option) *Scheduler {
	t.Helper()
	s, err := New(Config{Adaptive: &a, TierLimits: map[Priority]int{PriorityForeground: a.Max}}, opts...)
	must(t, err)
	must(t, s.RegisterType("job", JobTypeConfig{Priority: PriorityForeground, NoAging: true, DefaultCost: 50 * time.Millisecond}))
	return s
}

// simRepos draws a job from 100 repositories: 20 heavy ones (base
// heavyBase), chosen with probability heavy(elapsed), and 80 light ones
// (base 30 ms to 70 ms by repository).
func simRepos(heavyBase time.Duration, heavy func(time.Duration) float64) func(*rand.Rand, time.Duration) (string, time.Duration) {
	return func(rng *rand.Rand, el time.Duration) (string, time.Duration) {
		if rng.Float64() < heavy(el) {
			return fmt.Sprintf("heavy-%d", rng.IntN(20)), heavyBase
		}
		i := rng.IntN(80)
		return fmt.Sprintf("light-%d", i), 30*time.Millisecond + time.Duration(i%5)*10*time.Millisecond
	}
}

func constant(f float64) func(time.Duration) float64 { return func(time.Duration) float64 { return f } }

// settling returns the first tick from which every later limit in [from,
// to) is within ±tol of c (-1: never), and the smallest and largest limit
// from then on. Ticks inside a probe are left out: a probe halves the limit
// on purpose, for a round.
func (r simResult) settling(from, to, c int, tol float64) (at int, lo, hi int) {
	at, lo, hi = -1, math.MaxInt, 0
	for i := to - 1; i >= from; i-- {
		if r.probe[i] {
			continue
		}
		if math.Abs(float64(r.limits[i]-c)) > tol*float64(c) {
			break
		}
		at, lo, hi = i, min(lo, r.limits[i]), max(hi, r.limits[i])
	}
	return at, lo, hi
}

func tickTime(i int) time.Duration { return time.Duration(i+1) * simTick }

// TestAdaptiveSettles: from far above (4·C) and from the floor (Min), the
// limit settles within ±25% of the true capacity and stays there under a
// steady saturating load. (It failed 2 times in 2,000 runs from 4·C until
// the samples that measure their references stayed out of short, and none
// in 4,000 since: measuresRef. synctest runs differ by the order in which
// goroutines woken at one instant run.)
func TestAdaptiveSettles(t *testing.T) {
	const c = 16
	for _, initial := range []int{4 * c, 1} {
		t.Run(fmt.Sprintf("initial=%d", initial), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := simScheduler(t, AdaptiveConfig{Min: 1, Max: 8 * c, Initial: initial})
				v := simserver.New(c)
				load := []simClient{{key: "a", loops: 6 * c, job: simRepos(200*time.Millisecond, constant(0.1))}}
				const d = 40 * time.Second
				res := simRun(t, s, v, load, d, nil, nil)
				at, lo, hi := res.settling(0, len(res.limits), c, 0.25)
				_, lo10, hi10 := res.settling(tick(10*time.Second), len(res.limits), c, 0.25)
				t.Logf("C=%d from %d: settled at %v, then limit in [%d, %d] out of probes, in [%d, %d] from 10s; goodput %.2f of %d; limits every second: %v",
					c, initial, tickTime(at), lo, hi, lo10, hi10, res.goodput(d), c, everySecond(res.limits))
				if at < 0 || tickTime(at) > 15*time.Second {
					t.Fatalf("limit not within ±25%% of %d from 15s on: settled at %v; limits every second %v",
						c, tickTime(at), everySecond(res.limits))
				}
			})
		})
	}
}

// TestAdaptiveSettlesOnAThrashingServer: on a server that does less in
// all past C (simserver.SeatTime, a factor of 0.3), the limit settles as it
// does on one that does not, and holding to C keeps the work done there:
// a fixed capacity of 4·C, whose server thrashes, does far less.
func TestAdaptiveSettlesOnAThrashingServer(t *testing.T) {
	const c, d = 16, 40 * time.Second
	load := []simClient{{key: "a", loops: 6 * c, job: simRepos(200*time.Millisecond, constant(0.1))}}
	run := func(t *testing.T, s *Scheduler) simResult {
		v := simserver.New(c)
		v.SetThrash(0.3)
		return simRun(t, s, v, load, d, nil, nil)
	}
	var fixed float64
	synctest.Test(t, func(t *testing.T) {
		s, err := New(Config{Capacity: 4 * c, TierLimits: map[Priority]int{PriorityForeground: 4 * c}})
		must(t, err)
		must(t, s.RegisterType("job", JobTypeConfig{Priority: PriorityForeground, NoAging: true, DefaultCost: 50 * time.Millisecond}))
		fixed = run(t, s).goodput(d)
	})
	for _, initial := range []int{4 * c, 1} {
		t.Run(fmt.Sprintf("initial=%d", initial), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				res := run(t, simScheduler(t, AdaptiveConfig{Min: 1, Max: 8 * c, Initial: initial}))
				at, lo, hi := res.settling(0, len(res.limits), c, 0.25)
				t.Logf("C=%d from %d: settled at %v, then limit in [%d, %d] out of probes; goodput %.2f of %d (fixed 4·C: %.2f); limits every second: %v",
					c, initial, tickTime(at), lo, hi, res.goodput(d), c, fixed, everySecond(res.limits))
				if at < 0 || tickTime(at) > 15*time.Second {
					t.Errorf("limit not within ±25%% of %d from 15s on: settled at %v", c, tickTime(at))
				}
				if g := res.goodput(d); g < 0.85*c || g < 1.5*fixed {
					t.Errorf("goodput %.2f seats, want at least 85%% of C = %d and 1.5 times fixed 4·C's %.2f", g, c, fixed)
				}
			})
		})
	}
}

// TestAdaptiveSettlesOnASharedServer: on a server that shares itself among
// its jobs at every instant (simserver.NewShared, as a CPU or a disk does),
// the limit settles as it does on one that fixes a seat time at the job's
// start, from the floor and from the true capacity. From far above C it
// settles later and higher (the package doc, "Adaptive capacity": a shared
// server, and benchmarks/ADMISSION.md, sessions 22 and 35):
// TestAdaptiveSharedFromFarAbove.
func TestAdaptiveSettlesOnASharedServer(t *testing.T) {
	const c = 16
	for _, initial := range []int{c, 1} {
		t.Run(fmt.Sprintf("initial=%d", initial), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := simScheduler(t, AdaptiveConfig{Min: 1, Max: 8 * c, Initial: initial})
				load := []simClient{{key: "a", loops: 6 * c, job: simRepos(200*time.Millisecond, constant(0.1))}}
				const d = 40 * time.Second
				res := simRun(t, s, simserver.NewShared(c), load, d, nil, nil)
				at, lo, hi := res.settling(0, len(res.limits), c, 0.25)
				t.Logf("C=%d from %d: settled at %v, then limit in [%d, %d] out of probes; goodput %.2f of %d; limits every second: %v",
					c, initial, tickTime(at), lo, hi, res.goodput(d), c, everySecond(res.limits))
				if at < 0 || tickTime(at) > 15*time.Second {
					t.Errorf("limit not within ±25%% of %d from 15s on: settled at %v", c, tickTime(at))
				}
			})
		})
	}
}

// TestAdaptiveSharedFromFarAbove: on a shared server from Initial = 4·C,
// the probes that find the server saturated well below the limit restore
// it only to about Tolerance times their own (restoreTo), so the mean limit
// from 10 s is about 1.2·C: the median over 15 runs at most 1.3·C. Before
// that restore, each probe gave the limit back and it came down by the
// law's few per cent a round: a median of 22.2 seats for C = 16 (60 runs,
// none under 20.7; 19.2 to 19.3 since, none over 20.8; benchmarks/ADMISSION.md,
// session 35).
func TestAdaptiveSharedFromFarAbove(t *testing.T) {
	const c, runs = 16, 15
	m, means := sharedFromFarAbove(t, c, runs, simRepos(200*time.Millisecond, constant(0.1)))
	if m > 1.3*c {
		t.Errorf("shared server from %d seats: median over %d runs of the mean limit from 10s %.1f, want at most %.1f; each run's: %.1f", 4*c, runs, m, 1.3*c, means)
	}
}

// TestAdaptiveNoisySharedFromFarAbove: the same server from 4·C, with seat
// times spread log-normally by 0.5. Its level is higher (about 1.6·C, as
// from Min), and the limit seldom runs away past the 96 jobs in flight:
// over 30 runs the median of the mean limit from 10 s is at most 30 seats,
// and at most two runs' is above 60. Before a probe that cuts held the
// limit it restores (restoreTo) and the probe clock counted unused samples
// (stepLocked), over 600 runs the median was 32.3 seats, 163 runs were
// above 60 and 98 above 90; since, over 1,800, 26.0 seats, 8 and 1
// (benchmarks/ADMISSION.md, session 36).
func TestAdaptiveNoisySharedFromFarAbove(t *testing.T) {
	const c, runs = 16, 30
	m, means := sharedFromFarAbove(t, c, runs, noisy(0.5, simRepos(200*time.Millisecond, constant(0.1))))
	high := 0
	for _, x := range means {
		if x > 60 {
			high++
		}
	}
	if m > 30 || high > 2 {
		t.Errorf("noisy shared server from %d seats: over %d runs the mean limit from 10s has median %.1f (want at most 30), and %d runs above 60 (want at most 2); each run's: %.1f", 4*c, runs, m, high, means)
	}
}

// sharedFromFarAbove runs 6·c closed loops of job on simserver.NewShared(c)
// for 40 s from Initial = 4·c, runs times (each its own draw), and returns
// the median of each run's mean limit from 10 s and all of them sorted.
func sharedFromFarAbove(t *testing.T, c, runs int, job func(*rand.Rand, time.Duration) (string, time.Duration)) (float64, []float64) {
	t.Helper()
	return medianOverRuns(runs, func(n int) float64 {
		var mean float64
		synctest.Test(t, func(t *testing.T) {
			s := simScheduler(t, AdaptiveConfig{Min: 1, Max: 8 * c, Initial: 4 * c})
			load := []simClient{{key: "a", loops: 6 * c, seed: uint32(n), job: job}}
			const d = 40 * time.Second
			res := simRun(t, s, simserver.NewShared(c), load, d, nil, nil)
			mean = res.meanLimit(tick(10*time.Second), len(res.limits))
			t.Logf("run %d: mean limit from 10s %.1f; limits every second: %v", n, mean, everySecond(res.limits))
		})
		return mean
	})
}

// medianOverRuns calls run for n = 0 to runs-1 (each its own draw) and
// returns the median of what they returned, and all of it sorted.
func medianOverRuns(runs int, run func(n int) float64) (float64, []float64) {
	v := make([]float64, runs)
	for n := range runs {
		v[n] = run(n)
	}
	slices.Sort(v)
	return v[runs/2], v
}

// everySecond is every tenth limit, for logs.
func everySecond(limits []int) []int {
	var out []int
	for i := 9; i < len(limits); i += 10 {
		out = append(out, limits[i])
	}
	return out
}

// meanLimit is the mean limit over ticks [from, to), probes left out.
func (r simResult) meanLimit(from, to int) float64 {
	sum, n := 0, 0
	for i := from; i < to; i++ {
		if !r.probe[i] {
			sum += r.limits[i]
			n++
		}
	}
	return float64(sum) / float64(max(n, 1))
}

func tick(d time.Duration) int { return int(d / simTick) }

// TestAdaptiveFollowsCapacity: the true capacity halves mid-run (a slow
// disk) and comes back; the limit follows it down and back up. The fall
// brings one probe, which finds the references sound: the rest of the
// fall is congestion, and brings no other.
func TestAdaptiveFollowsCapacity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const c = 32
		log := &eventLog{}
		s := simScheduler(t, AdaptiveConfig{Min: 1, Max: 8 * c, Initial: c}, WithEventHandler(log.handle))
		start := time.Now()
		v := simserver.New(c)
		load := []simClient{{key: "a", loops: 6 * c, job: simRepos(200*time.Millisecond, constant(0.1))}}
		const drop, back, d = 20 * time.Second, 40 * time.Second, 60 * time.Second
		res := simRun(t, s, v, load, d, func(el time.Duration) {
			switch el {
			case drop:
				v.SetCapacity(c / 2)
			case back:
				v.SetCapacity(c)
			}
		}, nil)
		down, dlo, dhi := res.settling(tick(drop), tick(back), c/2, 0.25)
		up, ulo, uhi := res.settling(tick(back), len(res.limits), c, 0.25)
		var slowProbes []time.Duration // probe starts while the capacity is halved
		for _, e := range log.take() {
			if at := e.Time.Sub(start); e.Kind == EventCapacityChanged && e.CapacityReason == CapacityProbe && e.New < e.Previous && at >= drop && at < back {
				slowProbes = append(slowProbes, at)
			}
		}
		t.Logf("C %d -> %d at %v: within ±25%% after %v, then [%d, %d], probes at %v; C -> %d at %v: within ±25%% after %v, then [%d, %d]; limits every second %v",
			c, c/2, drop, tickTime(down)-drop, dlo, dhi, slowProbes, c, back, tickTime(up)-back, ulo, uhi, everySecond(res.limits))
		if len(slowProbes) > 1 {
			t.Errorf("%d probes while the capacity was halved (at %v), want at most 1: the first found the references sound", len(slowProbes), slowProbes)
		}
		if down < 0 || tickTime(down)-drop > 10*time.Second {
			t.Errorf("limit did not follow the capacity down to %d within 10s: %v", c/2, everySecond(res.limits))
		}
		if up < 0 || tickTime(up)-back > 10*time.Second {
			t.Errorf("limit did not follow the capacity back up to %d within 10s: %v", c, everySecond(res.limits))
		}
	})
}

// TestAdaptiveProbesRare: once the limit has settled on references that
// hold, probes stop (the next is ProbeInterval rounds away), so a steady
// server runs at the limit, not at half of it one round in a hundred.
// From far above C and from Min, after 10s: at most one probe, and the
// limit below C in at most 1% of the ticks.
func TestAdaptiveProbesRare(t *testing.T) {
	const c, settled, d = 16, 10 * time.Second, 60 * time.Second
	for _, initial := range []int{4 * c, 1} {
		t.Run(fmt.Sprintf("initial=%d", initial), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				log := &eventLog{}
				a := AdaptiveConfig{Min: 1, Max: 8 * c, Initial: initial}
				s, err := New(Config{Adaptive: &a, TierLimits: map[Priority]int{PriorityForeground: a.Max}}, WithEventHandler(log.handle))
				must(t, err)
				must(t, s.RegisterType("job", JobTypeConfig{Priority: PriorityForeground, NoAging: true, DefaultCost: 50 * time.Millisecond}))
				start := time.Now()
				load := []simClient{{key: "a", loops: 6 * c, job: simRepos(200*time.Millisecond, constant(0.1))}}
				res := simRun(t, s, simserver.New(c), load, d, nil, nil)
				var probes []time.Duration // starts
				for _, e := range log.take() {
					if e.Kind == EventCapacityChanged && e.CapacityReason == CapacityProbe && e.New < e.Previous {
						probes = append(probes, e.Time.Sub(start))
					}
				}
				late, below := 0, 0
				for _, p := range probes {
					if p >= settled {
						late++
					}
				}
				for _, l := range res.limits[tick(settled):] {
					if l < c {
						below++
					}
				}
				t.Logf("from %d: probes at %v; after %v: %d probes, limit below %d at %d of %d ticks; goodput %.2f of %d",
					initial, probes, settled, late, c, below, len(res.limits)-tick(settled), res.goodput(d), c)
				if late > 1 || below > (len(res.limits)-tick(settled))/100 {
					t.Errorf("after %v: %d probes (want at most 1), limit below %d at %d ticks (want at most 1%%); every second %v",
						settled, late, c, below, everySecond(res.limits))
				}
			})
		})
	}
}

// TestAdaptiveJobsGetDearer: at constant true capacity every job's seat
// time doubles (a deploy). That reads as congestion at first, and the limit
// falls; the fall brings a probe, whose jobs show that they are slow at
// half the load too: they take their references again, the baseline is
// re-anchored on their inflation, completions at a lower load retake the
// references taken before that verdict (epochs) and probes follow until
// the references hold, so the limit comes back: from 8s after the change,
// probes left out, its mean is at least 3/4 of C and it never falls below
// C/2 (without the probe it stayed at Min for seconds). It comes back
// about C or above, on references partly taken above it: over 9,000 runs
// the mean was 13.4 to 27.3, median 19.4.
func TestAdaptiveJobsGetDearer(t *testing.T) {
	const c = 16
	r := costChange(t, c, 1, 2, 0, 0)
	t.Logf("jobs twice as dear at %v: lowest limit %d, from 8s later in [%d, %d], mean %.1f (probes left out); every second %v",
		costChangeAt, r.lowest, r.lo, r.hi, r.mean, r.perSecond)
	if r.mean < 0.75*c || r.lo < c/2 {
		t.Errorf("from 8s after the jobs got dearer: mean limit %.1f (want at least %v), lowest %d (want at least %d); every second %v",
			r.mean, 0.75*c, r.lo, c/2, r.perSecond)
	}
}

// TestAdaptiveJobsGetCheaper is TestAdaptiveJobsGetDearer the other way:
// every job costs twice its time until 20 s, then its time. The old
// references read the server as calm, and the limit climbs until
// congestion makes the jobs as slow as their references were, about 2·C,
// unless something brings a probe: the jobs at the limit running faster
// than their references for a round does (noteFaster), the probes take the
// references again, and the limit does not grow while they find them
// congested (held). Over the 8 s after the change, probes left out, the
// mean limit is at most 1.375·C (for C = 16 without the hold a median of
// 21.0 and up to 25.6 in 1,000 runs, the highest limit a median of 29 and
// up to 40; with it, 17.1 to 17.5 and up to 20.7 in 4,000, the highest 18
// and up to 30); from 8 s after the change it is at most 1.25·C (without
// noteFaster it was about 33), and the limit never falls below C/2.
func TestAdaptiveJobsGetCheaper(t *testing.T) {
	const c = 16
	r := costChange(t, c, 2, 1, 0, 0)
	t.Logf("jobs twice as cheap at %v: mean limit in the 8s after %.1f; from 8s later lowest %d, mean %.1f (probes left out); every second %v",
		costChangeAt, r.early, r.lo, r.mean, r.perSecond)
	if r.early > 1.375*c || r.mean > 1.25*c || r.lo < c/2 {
		t.Errorf("jobs twice as cheap: mean limit in the 8s after %.1f (want at most %v); from 8s later mean limit %.1f (want at most %v), lowest %d (want at least %d); every second %v",
			r.early, 1.375*c, r.mean, 1.25*c, r.lo, c/2, r.perSecond)
	}
}

// TestAdaptiveNoisyJobsGetCheaper is TestAdaptiveJobsGetCheaper where seat
// times vary, log-normally by 0.5. A round faster than the references
// beyond chance (noteFaster) then comes too late: the calm rounds grow the
// limit by half again each, and congestion soon makes the jobs as slow as
// their old references. What brings the probe is the rise past the highest
// limit held before (noteRise). Over 15 runs, the median of the mean limit
// from 8 s after the change is at most 2·C: in 300 runs, a run's mean was
// above 2·C in 33 and 42 with the rise's probe, in 250 without (median
// 43.6 seats, and it stays there for minutes; benchmarks/ADMISSION.md,
// session 34).
func TestAdaptiveNoisyJobsGetCheaper(t *testing.T) {
	const c, runs = 16, 15
	m, means := medianOverRuns(runs, func(n int) float64 { return costChange(t, c, 2, 1, 0.5, uint32(n)).mean })
	t.Logf("jobs twice as cheap, seat times spread by 0.5: mean limit from 8s after the change, sorted: %.1f", means)
	if m > 2*c {
		t.Errorf("jobs twice as cheap, seat times spread by 0.5: median over %d runs of the mean limit from 8s after the change %.1f, want at most %d; each run's: %.1f", runs, m, 2*c, means)
	}
}

// costChangeAt is when costChange changes every job's cost.
const costChangeAt = 20 * time.Second

// costChangeResult is what costChange saw: the lowest limit from the
// change on, and the mean until 8 s after it (early); from then on, probes
// left out, the lowest, the highest and the mean; and the limit every
// second.
type costChangeResult struct {
	lowest, lo, hi int
	early, mean    float64
	perSecond      []int
}

// costChange runs 40 s of simRepos' load (a tenth heavy) on a server of c
// seats from Initial = c, every job costing before times its base time
// until costChangeAt and after times it from then on; with sigma > 0 each
// job's time is spread log-normally by sigma (noisy), the clients' random
// source seeded with seed.
func costChange(t *testing.T, c int, before, after time.Duration, sigma float64, seed uint32) costChangeResult {
	t.Helper()
	const d = 40 * time.Second
	repos := simRepos(300*time.Millisecond, constant(0.1))
	if sigma > 0 {
		repos = noisy(sigma, repos)
	}
	job := func(rng *rand.Rand, el time.Duration) (string, time.Duration) {
		id, base := repos(rng, el)
		if el < costChangeAt {
			return id, base * before
		}
		return id, base * after
	}
	var r costChangeResult
	synctest.Test(t, func(t *testing.T) {
		s := simScheduler(t, AdaptiveConfig{Min: 1, Max: 8 * c, Initial: c})
		res := simRun(t, s, simserver.New(c), []simClient{{key: "a", loops: 6 * c, seed: seed, job: job}}, d, nil, nil)
		from := tick(costChangeAt + 8*time.Second)
		r.lo, r.hi = math.MaxInt, 0
		for i := from; i < len(res.limits); i++ {
			if !res.probe[i] {
				r.lo, r.hi = min(r.lo, res.limits[i]), max(r.hi, res.limits[i])
			}
		}
		r.lowest = slices.Min(res.limits[tick(costChangeAt):])
		r.early = res.meanLimit(tick(costChangeAt), from)
		r.mean = res.meanLimit(from, len(res.limits))
		r.perSecond = everySecond(res.limits)
	})
	return r
}

// rawGradient is the contrast of TestAdaptiveMixShift: a gradient on raw
// seat time, the signal of Gradient2 and the other peers, written as
// Gradient2 computes it with its defaults: per sample,
//
//	long  = EMA of the seat time over 600 samples
//	g     = clamp(1.5 · long / sample, 0.5, 1)
//	limit = 0.8·limit + 0.2·(limit·g + sqrt(limit))
//
// It sets the capacity of a fixed-capacity scheduler. Safe for concurrent
// use.
type rawGradient struct {
	s           *Scheduler
	mu          sync.Mutex
	limit, long float64
	n           int
}

func (g *rawGradient) sample(seat time.Duration) {
	x := seat.Seconds()
	g.mu.Lock()
	if g.n == 0 {
		g.long = x
	}
	g.n++
	g.long += (x - g.long) / 600
	grad := min(1, max(0.5, 1.5*g.long/x))
	g.limit = min(128, max(1, 0.8*g.limit+0.2*(g.limit*grad+math.Sqrt(g.limit))))
	n := int(math.Round(g.limit))
	g.mu.Unlock()
	if err := g.s.SetCapacity(n); err != nil {
		panic(err)
	}
}

// noisy spreads the base times of draw's jobs: each is multiplied by a
// log-normal factor of mean 1 and spread sigma, as a real server's seat
// times vary from one job to the next.
func noisy(sigma float64, draw func(*rand.Rand, time.Duration) (string, time.Duration)) func(*rand.Rand, time.Duration) (string, time.Duration) {
	return func(rng *rand.Rand, el time.Duration) (string, time.Duration) {
		id, base := draw(rng, el)
		return id, time.Duration(float64(base) * simserver.Spread(rng, sigma))
	}
}

// TestAdaptiveNoisySeatTimes: each job's seat time varies around its
// repository's by a log-normal factor of spread 0.5. A probe's eight or so
// jobs then stray past sqrt(Tolerance) of their references by chance, and
// when the verdict took that for stale or congested references, probes
// came every five rounds (in five runs from Initial = C, 4 to 31 % of the
// ticks after 10 s were inside a probe, 21 % over all five). The verdict
// allows for chance by the spread of a job's seat time at a given load
// (adaptive.noteNoise): over five runs, at most 5 % of the ticks after
// 10 s are inside a probe (in 600 tests of five runs: a median of 3 and
// at most 59 ticks of 1,500). The goodput is checked only for a collapse
// (a mean under 90 % of C): the limit still dips now and then, to a few
// seats for a second or two, when short strays over Tolerance times the
// baseline by chance (the package doc, "Noisy seat times"), and the mean of
// five runs ranged from 14.83 to 15.85 seats. And from Min, the limit
// reaches C/2 within 15 s in at least four runs of five: in 3,000 runs it
// did not in 6 (in two of five with short over a round of one or two jobs
// at the floor, before minShortSamples). These figures were counted in
// session 15, with the verdict's chance around m = 1; since it moved to a
// mean log of 0 (verdictZ, session 16) the test passed 600 runs, and its
// figures were not counted again.
func TestAdaptiveNoisySeatTimes(t *testing.T) {
	const c, settled, d, runs = 16, 10 * time.Second, 40 * time.Second, 5
	load := []simClient{{key: "a", loops: 6 * c, job: noisy(0.5, simRepos(200*time.Millisecond, constant(0.1)))}}
	probing, ticks, goodput := 0, 0, 0.0
	for range runs {
		synctest.Test(t, func(t *testing.T) {
			s := simScheduler(t, AdaptiveConfig{Min: 1, Max: 8 * c, Initial: c})
			res := simRun(t, s, simserver.New(c), load, d, nil, nil)
			n := 0
			for _, p := range res.probe[tick(settled):] {
				if p {
					n++
				}
			}
			probing, ticks, goodput = probing+n, ticks+len(res.probe)-tick(settled), goodput+res.goodput(d)/runs
			t.Logf("after %v: %d ticks inside a probe; mean limit %.1f; goodput %.2f of %d; noise %.2f; every second %v",
				settled, n, res.meanLimit(tick(settled), len(res.limits)), res.goodput(d), c, s.Snapshot().Adaptive.Noise, everySecond(res.limits))
		})
	}
	t.Logf("%d runs: %d of %d ticks after %v inside a probe; mean goodput %.2f of %d", runs, probing, ticks, settled, goodput, c)
	if probing > ticks/20 {
		t.Errorf("%d of %d ticks after %v inside a probe (want at most 5%%): chance read as stale or congested references", probing, ticks, settled)
	}
	if goodput < 0.9*c {
		t.Errorf("mean goodput %.2f, want at least 90%% of %d", goodput, c)
	}
	// From Min, short must average more than the one or two jobs of a
	// round at a seat or two (minShortSamples).
	stuck := 0
	for range runs {
		synctest.Test(t, func(t *testing.T) {
			s := simScheduler(t, AdaptiveConfig{Min: 1, Max: 8 * c, Initial: 1})
			res := simRun(t, s, simserver.New(c), load, 15*time.Second, nil, nil)
			if slices.Max(res.limits) < c/2 {
				stuck++
				t.Logf("from Min: the limit stayed under %d for 15 s; every second %v", c/2, everySecond(res.limits))
			}
		})
	}
	if stuck > 1 {
		t.Errorf("from Min, the limit stayed under %d for 15 s in %d runs of %d (want at most 1)", c/2, stuck, runs)
	}
}

// TestAdaptiveMixShift: at constant true capacity the share of heavy jobs
// (6 times the seat time of a light one) goes from 10% to 90%. Each job is
// judged against its own reference, so the limit stays; a raw-latency
// gradient in the same test reads the heavier mix as congestion and
// collapses.
func TestAdaptiveMixShift(t *testing.T) {
	const c, shift, d = 16, 20 * time.Second, 40 * time.Second
	mix := func(el time.Duration) float64 {
		if el < shift {
			return 0.1
		}
		return 0.9
	}
	load := []simClient{{key: "a", loops: 6 * c, job: simRepos(300*time.Millisecond, mix)}}
	var ours, raw simResult
	synctest.Test(t, func(t *testing.T) {
		s := simScheduler(t, AdaptiveConfig{Min: 1, Max: 8 * c, Initial: c})
		ours = simRun(t, s, simserver.New(c), load, d, nil, nil)
	})
	synctest.Test(t, func(t *testing.T) {
		s, err := New(Config{Capacity: c, TierLimits: map[Priority]int{PriorityForeground: 8 * c}})
		must(t, err)
		must(t, s.RegisterType("job", JobTypeConfig{Priority: PriorityForeground, NoAging: true, DefaultCost: 50 * time.Millisecond}))
		g := &rawGradient{s: s, limit: c}
		raw = simRun(t, s, simserver.New(c), load, d, nil, g.sample)
	})
	before, after := ours.meanLimit(tick(10*time.Second), tick(shift)), ours.meanLimit(tick(shift), len(ours.limits))
	rawBefore := raw.meanLimit(tick(10*time.Second), tick(shift))
	rawLow := slices.Min(raw.limits[tick(shift):tick(shift+5*time.Second)])
	oursLow := math.MaxInt
	for i := tick(shift); i < len(ours.limits); i++ {
		if !ours.probe[i] {
			oursLow = min(oursLow, ours.limits[i])
		}
	}
	t.Logf("fairseat: mean limit %.1f before the shift, %.1f after, lowest after %d (probes left out); every second %v",
		before, after, oursLow, everySecond(ours.limits))
	t.Logf("raw-latency gradient: mean limit %.1f before, lowest in the 5s after %d; every second %v",
		rawBefore, rawLow, everySecond(raw.limits))
	if math.Abs(after-before) > 0.2*before || float64(oursLow) < 0.8*before {
		t.Errorf("fairseat's limit moved by 20%% or more with the mix: mean %.1f -> %.1f, lowest %d", before, after, oursLow)
	}
	if float64(rawLow) > 0.6*rawBefore {
		t.Errorf("the raw-latency contrast did not fall: mean %.1f before, lowest %d after; the test no longer shows the difference", rawBefore, rawLow)
	}
}

// TestAdaptiveIdleDoesNotInflate: a server with nothing to do, then one
// used well below its limit, keeps its limit: the limit grows only while
// its seats are used.
func TestAdaptiveIdleDoesNotInflate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const c, initial = 16, 8
		s := simScheduler(t, AdaptiveConfig{Min: 1, Max: 8 * c, Initial: initial})
		time.Sleep(10 * time.Second) // idle
		if snap := s.Snapshot(); snap.Capacity != initial || snap.Adaptive.Samples != 0 {
			t.Fatalf("idle: capacity %d (want %d), %d samples", snap.Capacity, initial, snap.Adaptive.Samples)
		}
		light := []simClient{{key: "a", loops: initial / 2, think: 100 * time.Millisecond, job: simRepos(200*time.Millisecond, constant(0.1))}}
		res := simRun(t, s, simserver.New(c), light, 30*time.Second, nil, nil)
		if hi := slices.Max(res.limits); hi > initial {
			t.Errorf("lightly used (%d loops on %d seats): limit grew to %d; every second %v", initial/2, initial, hi, everySecond(res.limits))
		}
		t.Logf("lightly used: limit every second %v, %d jobs done", everySecond(res.limits), res.done["a"])
	})
}

// TestAdaptiveLightCallerDuringFlood: one caller floods (120 requests
// outstanding at all times) while the limit comes down from 4·C; a light
// caller's requests still wait little, since fairness picks them first at
// the next free seat whatever the limit.
//
// With QueueDelayTarget set, the flood is shed and its standing queue goes:
// its median wait falls below half of what it is without.
func TestAdaptiveLightCallerDuringFlood(t *testing.T) {
	floodP50 := map[time.Duration]time.Duration{}
	for _, target := range []time.Duration{0, 20 * time.Millisecond} {
		t.Run(fmt.Sprintf("QueueDelayTarget=%v", target), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const c = 16
				s := simScheduler(t, AdaptiveConfig{Min: 1, Max: 8 * c, Initial: 4 * c, QueueDelayTarget: target})
				load := []simClient{
					{key: "flood", loops: 120, job: simRepos(200*time.Millisecond, constant(0.1))},
					{key: "light", loops: 1, think: 50 * time.Millisecond, job: simRepos(200*time.Millisecond, constant(0.1))},
				}
				const d = 20 * time.Second
				res := simRun(t, s, simserver.New(c), load, d, nil, nil)
				lw, fw := slices.Sorted(slices.Values(res.waits["light"])), slices.Sorted(slices.Values(res.waits["flood"]))
				p99 := lw[len(lw)*99/100]
				t.Logf("light: %d done, p50 wait %v, p99 %v; flood: %d done, p50 wait %v, %d shed; goodput %.2f of %d; limit every second %v",
					len(lw), lw[len(lw)/2], p99, len(fw), fw[len(fw)/2], res.shed["flood"], res.goodput(d), c, everySecond(res.limits))
				// First in line at every dispatch, a light request waits for
				// the next seat to open: a few ms, longer when a probe or a
				// decrease must first drain seats. Behind the flood in a FIFO
				// it would wait for ~120 requests, over 400ms.
				if p99 > 100*time.Millisecond {
					t.Errorf("light caller's p99 wait %v during the flood, want under 100ms", p99)
				}
				if res.shed["light"] > 0 {
					t.Errorf("light caller shed %d times: shedding must spare keys below their share", res.shed["light"])
				}
				if target > 0 && res.shed["flood"] == 0 {
					t.Errorf("QueueDelayTarget %v: the flood was never shed", target)
				}
				floodP50[target] = fw[len(fw)/2]
			})
		})
	}
	if off, on := floodP50[0], floodP50[20*time.Millisecond]; on > off/2 {
		t.Errorf("the flood's median wait is %v with queue-delay shedding, %v without: the standing queue stayed", on, off)
	}
}

// TestAdaptiveRandomOps drives an adaptive scheduler with shedding and
// pressure through random arrivals, cancellations, background jobs and
// bound changes on a server whose capacity jumps about, and checks every
// invariant (the limit within its bounds and equal to the capacity among
// them) at each tick, and that every request ends.
func TestAdaptiveRandomOps(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, 99))
				var pmu sync.Mutex
				pressure := 0.0
				src := PressureFunc(func() float64 { pmu.Lock(); defer pmu.Unlock(); return pressure })
				s, err := New(Config{
					Adaptive: &AdaptiveConfig{Min: 1, Max: 40, Initial: 10, QueueDelayTarget: 5 * time.Millisecond},
					Pressure: &PressureConfig{Source: src, Threshold: 1},
					MaxQueue: 200,
				})
				must(t, err)
				must(t, s.RegisterType("fg", JobTypeConfig{Priority: PriorityForeground, NoAging: true, MaxWait: 2 * time.Second}))
				must(t, s.RegisterType("bg", JobTypeConfig{Priority: PriorityBackground, ConflictGroup: "g", MaxConcurrency: 4}))
				v := simserver.New(8)
				var wg sync.WaitGroup
				var ended, started int
				var mu sync.Mutex
				for tick := range 400 {
					for range rng.IntN(6) {
						id, key := fmt.Sprint("r", rng.IntN(12)), fmt.Sprint("k", rng.IntN(5))
						base := time.Duration(10+rng.IntN(90)) * time.Millisecond
						cancelAfter := time.Duration(rng.IntN(400)) * time.Millisecond
						mu.Lock()
						started++
						mu.Unlock()
						wg.Go(func() {
							ctx, cancel := context.WithTimeout(context.Background(), cancelAfter+50*time.Millisecond)
							defer cancel()
							_ = s.RunSync(ctx, "fg", id, key, func(ctx context.Context) error {
								_, err := v.ServeContext(ctx, base)
								return err
							})
							mu.Lock()
							ended++
							mu.Unlock()
						})
					}
					if rng.IntN(5) == 0 {
						_ = s.Submit("bg", fmt.Sprint("r", rng.IntN(12)), func(ctx context.Context) error {
							_, err := v.ServeContext(ctx, 30*time.Millisecond)
							return err
						})
					}
					switch rng.IntN(40) {
					case 0:
						v.SetCapacity(1 + rng.IntN(16))
					case 1:
						lo := 1 + rng.IntN(10)
						must(t, s.SetAdaptiveBounds(lo, lo+rng.IntN(30)))
					case 2:
						pmu.Lock()
						pressure = float64(rng.IntN(2))
						pmu.Unlock()
					}
					time.Sleep(10 * time.Millisecond)
					checkInvariants(t, s)
					if tick%100 == 99 {
						synctest.Wait()
						checkInvariants(t, s)
					}
				}
				wg.Wait()
				must(t, s.Close(context.Background()))
				checkInvariants(t, s)
				snap := s.Snapshot()
				if started != ended || snap.InUse != 0 || snap.Queued != 0 {
					t.Fatalf("%d requests started, %d ended; %d seats in use and %d queued after Close", started, ended, snap.InUse, snap.Queued)
				}
				c := snap.Counters
				if sum := c.Ended(); sum != c.Submitted {
					t.Fatalf("counters do not add up: %d ends of %d submitted: %+v", sum, c.Submitted, c)
				}
				t.Logf("seed %d: %d requests, counters %+v, %d limit changes kept, limit %v", seed, started, snap.Counters,
					len(snap.Adaptive.History), snap.Adaptive.Limit)
			})
		})
	}
}

// TestAdaptiveRestart: a restarted server whose CapacityStore kept the
// limit starts where the last process had settled, not at Min. The first
// process runs from Min for 30 s and saves its limit at Close; the second
// starts from Min as well, with and without that store, under a flood.
// Over the first 5 s, the median of ten runs of the work done was 15.8
// seats with the store against 5.7 without (C = 16; where seat times vary
// by a log-normal spread of 0.5, 15.6 against 2.8: benchmarks/ADMISSION.md,
// session 38). The test asks for 1.5 times as much in each of five runs.
func TestAdaptiveRestart(t *testing.T) {
	const c, d = 16, 5 * time.Second
	job := simRepos(200*time.Millisecond, constant(0.1))
	for n := range 5 {
		st := &capStore{}
		synctest.Test(t, func(t *testing.T) {
			s := simScheduler(t, AdaptiveConfig{Min: 1, Max: 8 * c, Initial: 1}, WithCostStore(st, time.Hour))
			simRun(t, s, simserver.New(c), []simClient{{key: "a", loops: 6 * c, seed: uint32(n + 100), job: job}}, 30*time.Second, nil, nil)
		})
		if saved := st.limit; math.Abs(float64(saved-c)) > 0.25*c {
			t.Fatalf("run %d: the first process saved a limit of %d, not within ±25%% of %d", n, saved, c)
		}
		var goodput [2]float64
		for i, store := range []*capStore{st, {}} {
			synctest.Test(t, func(t *testing.T) {
				s := simScheduler(t, AdaptiveConfig{Min: 1, Max: 8 * c, Initial: 1}, WithCostStore(store, time.Hour))
				if got, want := s.Snapshot().Capacity, max(store.limit, 1); got != want {
					t.Fatalf("run %d: restarted at %d seats, want %d", n, got, want)
				}
				res := simRun(t, s, simserver.New(c), []simClient{{key: "a", loops: 6 * c, seed: uint32(n), job: job}}, d, nil, nil)
				goodput[i] = res.goodput(d)
			})
		}
		t.Logf("run %d: saved limit %d; work done in the first %v after the restart: %.2f seats with it, %.2f without", n, st.limit, d, goodput[0], goodput[1])
		if goodput[0] < 1.5*goodput[1] {
			t.Errorf("run %d: with the saved limit the restarted server did %.2f seats of work in its first %v, without it %.2f: want at least 1.5 times as much",
				n, goodput[0], d, goodput[1])
		}
	}
}
