package admission

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fairseat/fairseat/internal/simserver"
)

// TestAdaptivePool drives a type's pool (pool.go) by hand, at a limit of
// 20: its reference takes only the completions of jobs a probe admitted
// (or admitted at Min); it judges nothing until the reference is sound; a
// full batch enters the law as a round when the samples with references
// were scarce meanwhile, and is dropped when they were not.
func TestAdaptivePool(t *testing.T) {
	s, a := lockedAdaptive(t, 20)
	typ := &typeState{name: "t"}
	p := &typ.pool
	complete := func(load int32, seat float64) {
		// A load of 10 stands for a probe's job (probe.go halves the limit).
		s.poolLocked(&job{typ: typ, load: load, probed: load == 10}, math.Log(seat), 1)
	}
	// Two kinds of jobs, 0.1 s and 0.4 s, alternating: the mean log is
	// log 0.2, the variance (log 2)².
	jobs := func(n int, load int32, inflation float64) {
		for i := range n {
			seat := 0.1
			if i%2 == 1 {
				seat = 0.4
			}
			complete(load, seat*inflation)
		}
	}
	jobs(10, 11, 1) // at the limit: the reference takes none
	if p.refs != 0 {
		t.Fatalf("completions at load 11, not a probe's, took %v into the reference", p.refs)
	}
	jobs(20, 10, 1)
	if p.refs != 20 || math.Abs(p.logRef-math.Log(0.2)) > 1e-9 || math.Abs(p.refVar-math.Ln2*math.Ln2) > 1e-9 {
		t.Fatalf("reference after 20 of a probe's: e^%v s, variance %v, of %v; want 0.2 s, %v, of 20", p.logRef, p.refVar, p.refs, math.Ln2*math.Ln2)
	}
	// The reference's standard error, ln 2/sqrt(20) = 0.155, is more than
	// a Tolerance (ln 1.1 = 0.095): not ready, so no batch moves the law
	// (a batch is (ln 2)²/(ln 1.1)² = 53 completions, 30 of them in
	// already).
	jobs(23, 11, 1)
	if a.poolReady(p) || a.pooled != 0 || a.limit != 20 {
		t.Fatalf("20 references of spread ln 2, a batch's worth in: ready %v, %d pooled, limit %v; want not ready, none, 20",
			a.poolReady(p), a.pooled, a.limit)
	}
	jobs(40, 10, 1) // 60 in all: ln 2/sqrt(60) = 0.089
	if !a.poolReady(p) {
		t.Fatalf("60 references of spread ln 2 (%v of %v): not ready", p.refVar, p.refs)
	}
	// A batch is (ln 2)²/(ln 1.1)² = 53 completions. Twice as slow as the
	// reference at the limit, with no samples meanwhile: the law reads
	// short at 2 and cuts the limit.
	size := a.batchSize(p)
	if size != math.Ceil(p.refVar/(a.logTol*a.logTol)) {
		t.Fatalf("batch size %v, want %v", size, math.Ceil(p.refVar/(a.logTol*a.logTol)))
	}
	p.sum, p.loads, p.n = 0, 0, 0
	before := a.limit
	jobs(int(size), 20, 2)
	if a.pooled != uint64(size) || math.Abs(a.logShort-math.Ln2) > 0.2 || a.limit >= before {
		t.Fatalf("a batch twice as slow as its reference: %d pooled, short %v, limit %v from %v; want %v pooled, short near 2, a cut",
			a.pooled, math.Exp(a.logShort), a.limit, before, size)
	}
	// The same with a round of samples meanwhile: dropped.
	pooled, short := a.pooled, a.logShort
	size = a.batchSize(p)
	jobs(1, 20, 2)
	a.samples += uint64(math.Ceil(max(a.limit, minShortSamples))) // a round of samples, as sampleLocked counts them
	jobs(int(size)-1, 20, 2)
	if a.pooled != pooled || a.logShort != short {
		t.Fatalf("a batch with a round of samples meanwhile: %d pooled, short %v; want it dropped (%d, %v)", a.pooled, a.logShort, pooled, short)
	}
	checkPool(t, s)
}

// checkPool checks the scheduler's invariants, s.mu held.
func checkPool(t *testing.T, s *Scheduler) {
	t.Helper()
	if err := s.checkInvariantsLocked(); err != nil {
		t.Fatal(err)
	}
}

// TestAdaptiveManyJobIDs: with 10,000 repositories instead of 100, a job ID
// comes back about every 50 s, so under a flood almost no completion has a
// reference of its own: the pools (pool.go) feed the controller. From Min
// the limit climbs to the true capacity: the mean limit over the last 20 s
// of 40 is within [C, 1.5·C], where without the pools it was 12.7 (the
// limit reached C after 30 s). From 20 the limit stays at 20, within those
// bounds: the pools take no reference there, as no job runs at a probe's
// load but the probes', which a clock of samples brings seldom (the
// package doc, Pooled samples; benchmarks/ADMISSION.md, sessions 39 and
// 40).
func TestAdaptiveManyJobIDs(t *testing.T) {
	const c, d = 16, 40 * time.Second
	for _, initial := range []int{1, 20} {
		t.Run(fmt.Sprintf("initial=%d", initial), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := simScheduler(t, AdaptiveConfig{Min: 1, Max: 8 * c, Initial: initial})
				load := []simClient{{key: "a", loops: 6 * c, job: manyRepos(100)}}
				res := simRun(t, s, simserver.New(c), load, d, nil, nil)
				mean := res.meanLimit(tick(20*time.Second), len(res.limits))
				pooled := s.Snapshot().Adaptive.Pooled
				t.Logf("C=%d from %d: mean limit %.1f from 20 s, goodput %.2f, %d completions pooled; limits every second: %v",
					c, initial, mean, res.goodput(d), pooled, everySecond(res.limits))
				if mean < c || mean > 1.5*c {
					t.Errorf("mean limit %.1f from 20 s, want within [%d, %d]", mean, c, 3*c/2)
				}
			})
		})
	}
}

// manyRepos is simRepos (a tenth heavy, of 200 ms) over times as many
// repositories.
func manyRepos(times int) func(*rand.Rand, time.Duration) (string, time.Duration) {
	return func(rng *rand.Rand, _ time.Duration) (string, time.Duration) {
		if rng.IntN(10) == 0 {
			return fmt.Sprintf("heavy-%d", rng.IntN(20*times)), 200 * time.Millisecond
		}
		i := rng.IntN(80 * times)
		return fmt.Sprintf("light-%d", i), 30*time.Millisecond + time.Duration(i%5)*10*time.Millisecond
	}
}

// TestAdaptiveProbeRound: a probe ends after a round of samples of its
// jobs, or after probeSpan rounds of its jobs' completions, samples or not,
// whichever comes first (probeRoundLocked).
func TestAdaptiveProbeRound(t *testing.T) {
	for _, tc := range []struct {
		name   string
		sample func(n int) bool // whether the probe's n-th completion is a sample
		want   int              // completions until the probe ends
	}{
		// The round is 10 (half of 20 seats).
		{"two without a reference, then samples: a round of samples", func(n int) bool { return n >= 2 }, 12},
		{"one in five a sample: four rounds of completions", func(n int) bool { return n%5 == 0 }, probeSpan * 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, a := lockedAdaptive(t, 20)
			typ := &typeState{name: "t"}
			s.startProbeLocked(1)
			n := 0
			for ; a.probing; n++ {
				if n > tc.want {
					t.Fatalf("probe still running after %d of its jobs' completions, want %d", n, tc.want)
				}
				if tc.sample(n) {
					s.probeSampleLocked(&job{probed: true}, 0, 1)
				} else {
					s.poolLocked(&job{typ: typ, probed: true, load: 5}, math.Log(0.1), 1)
				}
			}
			if n != tc.want || a.limit != 20 {
				t.Fatalf("probe over after %d of its jobs' completions, limit %v; want %d, 20", n, a.limit, tc.want)
			}
			checkPool(t, s)
		})
	}
}
