package admission

import "math"

// Pooled samples: the controller's signal from the completions of jobs
// whose (type, job ID) has no reference of its own (see the package doc,
// "Adaptive capacity", Pooled samples). Under a flood every job is
// admitted at the limit, above the reference ceiling, so a job ID without
// a reference takes none, and one that has a reference gives a sample only
// when it comes back: with 10,000 repositories at 200 completions a
// second, about every 50 s. There the controller starved: the limit
// started at Min stayed at 9 to 14 seats for C = 16, and one started at 20
// hardly moved (benchmarks/ADMISSION.md, session 39). A type's pool judges
// such completions together, against what its jobs take at a load the
// server keeps up with, and feeds their mean to the control law a round at
// a time.

// typePool is a job type's pooled samples (typeState.pool), guarded by
// Scheduler.mu and used only with Config.Adaptive.
//
// Invariants: refs >= 0, refVar >= 0, n >= 0, and every float finite; with
// n == 0, sum == loads == 0; sum and loads are 0 unless ready.
type typePool struct {
	// The type's reference: the geometric mean of the seat times of its
	// completions without a reference of their own admitted by a probe or
	// at Min (poolLocked), kept as its log, logRef, with the variance of that
	// log, refVar: how much the type's jobs differ (a clone of linux.git
	// and one of a small repository); refs counts the completions taken.
	// An EMA over about the last typeRefSpan of them; until refs reaches
	// that, their plain mean and variance.
	logRef, refVar, refs float64
	// The batch being gathered: n completions without a reference since
	// the one at which adaptive.samples read since, and, if ready (the
	// reference was sound enough, poolReady, when the batch began), the
	// sum of their log inflations against logRef and of their loads.
	sum, loads float64
	n          int
	since      uint64
	ready      bool
}

// typeRefSpan is how many completions the type's reference averages over
// once it has taken that many.
const typeRefSpan = 200

// minTypeRefs is the fewest completions a type's reference rests on before
// its pool feeds the controller, whatever their spread.
const minTypeRefs = 20

// poolLocked takes the completion of j, a job whose (type, job ID) has no
// reference, which held its seat for e^lobs seconds (-Inf: no measurable
// time). It counts towards the round of the probe that admitted it
// (probeRoundLocked); it adds to its type's reference if a probe admitted
// it or it ran at Min; and, unless a probe admitted it or one is running,
// it joins its type's batch, which once full enters the control law
// (batchLocked). Called from sampleLocked, which has counted it weak; it
// may change s.cfg.Capacity.
func (s *Scheduler) poolLocked(j *job, lobs float64, now int64) {
	a := s.adaptive
	if a.probing && j.probed {
		s.probeRoundLocked(false, now)
	}
	if math.IsInf(lobs, -1) {
		return
	}
	p, load := &j.typ.pool, float64(j.load)
	if !j.probed && !a.probing {
		ready := a.poolReady(p)
		if p.n > 0 && p.ready != ready { // the reference just became sound enough: a batch all of one kind
			p.sum, p.loads, p.n = 0, 0, 0
		}
		if p.n == 0 {
			p.since, p.ready = a.samples, ready
		}
		p.n++
		if ready {
			p.sum += lobs - p.logRef
			p.loads += load
		}
		if float64(p.n) >= a.batchSize(p) {
			s.batchLocked(p, now)
		}
	}
	if j.probed || load <= float64(a.cfg.Min) {
		p.takeRef(lobs)
	}
}

// A type's reference takes the completions of the jobs a probe admitted
// and of those admitted at Min (poolLocked): the loads a probe runs at,
// below C from any limit under 2·C (probe.go). Under a flood those are the
// only jobs that run at half the limit or lower. A reference taken up to
// the reference ceiling, as a job ID's is, took completions labelled under
// the ceiling that ran with more jobs than that (jobs admitted at one
// instant are labelled in the order of their admission), read a congested
// server as the norm, and let the limit settle at 19 to 25 seats for
// C = 16; one taken up to half the limit took, from a limit started at
// 4·C on a server that shares itself, the jobs admitted at New with labels
// up to 2·C, all of which ran together, and the adaptive tests failed once
// in five runs under the race detector (TestAdaptiveNoisySharedFromFarAbove,
// a median of 30.0 seats against at most 30; benchmarks/ADMISSION.md,
// session 40).

// takeRef folds a seat time of e^lobs seconds into the type's reference.
func (p *typePool) takeRef(lobs float64) {
	p.refs++
	if p.refs == 1 {
		p.logRef, p.refVar = lobs, 0
		return
	}
	w := max(1/p.refs, 1.0/typeRefSpan)
	d := lobs - p.logRef
	p.logRef += w * d
	p.refVar = (1 - w) * (p.refVar + w*d*d)
}

// poolReady reports whether p's reference is sound enough to judge by:
// its standard error, sqrt(refVar/refs), is at most a Tolerance (in log),
// and it rests on minTypeRefs completions at least. With the type's jobs
// spread as benchmarks/adaptive's repositories are (a standard deviation of
// 0.6 to 0.8 in log), that is 40 to 70 completions. At a quarter of that
// (at least 20, a standard error of up to 0.14), the reference of a run
// came out 17 % under the mix's, the batches read congestion where there
// was none, and in the noisy slow disk with 1,000 repositories the limit
// started at 20 held a mean of 12 to 13 seats in two runs of five, for
// 10.8 seats of work against 12.8 (benchmarks/ADMISSION.md, session 40).
// Until p is ready, its batches are dropped (batchLocked).
func (a *adaptive) poolReady(p *typePool) bool {
	return p.refs >= minTypeRefs && p.refs*a.logTol*a.logTol >= p.refVar
}

// batchSize is the completions a batch of p gathers: enough that chance
// moves its mean log inflation by no more than a Tolerance (one standard
// error: the spread of the type's jobs and of a job's seat times, refVar +
// sampleChance, over their number), and at least a round
// (max(limit, minShortSamples)). With benchmarks/adaptive's repositories,
// 40 to 120 completions.
func (a *adaptive) batchSize(p *typePool) float64 {
	return max(a.limit, minShortSamples, math.Ceil((p.refVar+a.sampleChance())/(a.logTol*a.logTol)))
}

// batchLocked ends p's batch. If the completions with a reference of
// their own since it began were fewer than a round, the references are
// scarce, and a ready batch (its reference sound when it began) enters the
// control law for the part of a round they left out: its mean log
// inflation moves short, and its mean load the load, by that part of a
// round's weight, and the law takes that part of a round's step. Entered
// as a whole round, and counted towards a calm round, batches and samples
// grew the limit together at a start where every job ID is new, and
// TestAdaptiveSettlesOnASharedServer failed in 6 of 20 runs under the race
// detector (none of 20 before the pools; none since). Otherwise the
// references' own samples have moved the law for a round already, and the
// batch is dropped. Without that drop, at 1,000 repositories (where a quarter of
// the completions have a reference of their own), the thrashing slow disk
// of benchmarks/adaptive did 11.72 seats from Min against 12.38 with it,
// and the slow disk 12.42 against 13.04;
// where seat times vary it did 0.2 to 0.35 seats more, within the spread
// of the three draws (benchmarks/ADMISSION.md, session 40).
func (s *Scheduler) batchLocked(p *typePool, now int64) {
	a := s.adaptive
	n, ready := float64(p.n), p.ready
	lx, load := p.sum/n, p.loads/n
	p.sum, p.loads, p.n = 0, 0, 0
	round := max(a.limit, minShortSamples)
	missing := 1 - float64(a.samples-p.since)/round // the share of a round the samples left out
	if !ready || missing <= 0 {
		return
	}
	// A round's weight: what limit samples of weight w = 2/(limit+1)
	// (at least minShortSamples of them) leave of the average, taken away.
	w := -math.Expm1(missing * round * math.Log1p(-2/(round+1)))
	a.logShort = logMove(a.logShort, lx, w)
	a.load += w * (load - a.load)
	a.pooled += uint64(n)
	used := s.queued > 0 || float64(s.inUse+1) >= a.cfg.UsedFraction*float64(s.cfg.Capacity)
	// The batch's standard error: its own chance and its reference's.
	se := math.Sqrt((p.refVar+a.sampleChance())/n + p.refVar/p.refs)
	s.lawLocked(used, step{lx: lx, share: missing, batch: true, se: se}, now)
}
