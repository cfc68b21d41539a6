package admission

import "math"

// The signal of adaptive capacity (see the package doc, "Adaptive
// capacity"): each completion's inflation against its reference, the
// references themselves, and the noise of seat times. adaptive.go moves
// the limit on it.

// sampleLocked feeds the controller the completion of j, which held its
// seat for e^lobs seconds (lobs is -Inf for a job of no measurable time),
// and reports whether the completion may take
// or move j's reference (costEntry.updateRef): if it ran at a load the
// controller holds uncongested (refCeilingLocked), or at a lower load than
// the reference's and faster (the reference was taken under more
// congestion), or at a lower load than a reference taken before the last
// probe that found the references stale or congested (epoch, probe.go). At
// an uncongested load, a reference the job's own estimate has left behind
// is dropped first, so the completion takes it again (leftBehind); and so
// is, after the sample, one from before that probe if a probe admitted j.
// Called from finishLocked for completions that count (not a seat handed
// back), before the cost estimate learns the seat time. It may change
// s.cfg.Capacity; the caller dispatches afterwards.
//
// The inflation of a job is its seat time / its reference, the reference
// being the seat time of its (type, job ID) at the lowest uncongested load
// seen (costEntry.logRef); its log, lx, is lobs less the reference's log.
func (s *Scheduler) sampleLocked(j *job, lobs float64, now int64) (takeRef bool) {
	a := s.adaptive
	e := j.cost
	ceiling := s.refCeilingLocked()
	uncongested := float64(j.load) <= ceiling
	if e != nil && (!e.hasRef() || sinceNs(now, e.at) > s.cfg.CostTTL) {
		e.refLoad, e.lastLoad = 0, 0 // expired with its estimate: taken again, and no pair across the gap (noteNoise)
	}
	if e != nil && uncongested && a.leftBehind(e) {
		e.refLoad = 0 // taken again at this load (updateRef)
	}
	if e == nil || !e.hasRef() {
		a.weak++
		return uncongested
	}
	used := s.queued > 0 || float64(s.inUse+1) >= a.cfg.UsedFraction*float64(s.cfg.Capacity)
	a.samples++
	a.noteNoise(e, lobs, j.load)
	// The averages are geometric, kept and moved in log (logMove): see the
	// package doc. A job of no measurable time (as in a synctest bubble)
	// has no log and moves none of them; lx is then -Inf.
	lx := lobs - e.logRef
	// A sample that measures its reference, not the server, stays out of
	// the baseline, and out of short once the noise is known (measuresRef).
	refOnly := a.measuresRef(lx)
	if j.load <= e.refLoad && !refOnly && float64(j.load) <= a.baselineCeiling(ceiling) {
		a.logBase = logMove(a.logBase, lx, baselineAlpha)
	}
	// The jobs a probe admitted ran at half the limit: they measure the
	// references, not the congestion at the limit, and would read as a
	// server with room to spare just as the probe gives the seats back.
	// all takes every such sample, those that measure their references
	// too (noteFaster reads it).
	if !j.probed && !math.IsInf(lx, -1) {
		w := 2 / (max(a.limit, minShortSamples) + 1)
		a.logAll = logMove(a.logAll, lx, w)
		if !(refOnly && a.noiseKnown()) {
			a.logShort = logMove(a.logShort, lx, w)
			a.load += w * (float64(j.load) - a.load)
		}
	}
	a.followFall()
	s.stepLocked(used, j, lx, now)
	if j.probed && uncongested && e.refEpoch != a.epoch {
		// A probe's job takes again, at its load, a reference from before
		// the last stale or congested verdict: one taken at a load below
		// any the probes run at would otherwise never be taken again
		// (benchmarks/ADMISSION.md, session 34).
		e.refLoad = 0
	}
	// Above the ceiling, a completion at a lower load than the reference's
	// takes it only if faster, or if a verdict since marked it stale: on a
	// sound verdict a slower one may be a server that slowed down.
	return uncongested || j.load < e.refLoad && (lx < 0 || e.refEpoch != a.epoch)
}

// baselineAlpha is the weight of one sample in the noise baseline.
const baselineAlpha = 0.05

// lawBase is the baseline in log as the control law reads it (stepLocked):
// the baseline, but never under 1 (0 in log). A baseline under 1 says that
// jobs at loads the controller holds uncongested ran faster than their
// references. That is chance in the few samples that feed it where seat
// times vary (a probe's ten or so jobs, under a flood), or references
// taken under congestion. Against such a baseline a server that keeps up
// reads as congested, and the limit falls under C for seconds until a
// probe re-anchors it: the dips of the package doc's "What noise still
// costs", which start in runs whose baseline settled at 0.90 to 0.94.
// References taken under congestion are the probes' to find (a verdict of
// congested references brings the next probe within minProbeEvery rounds,
// and noteFaster one when the jobs at the limit run faster than theirs),
// not the baseline's to absorb. The baseline itself (Snapshot's
// Adaptive.Baseline, noteFaster, a probe's anchor) stays what its samples
// read. Where seat times do not vary it is 1 and nothing changes.
//
// In 400 runs of benchmarks/adaptive's noisy slow disk over its 20 draws,
// the runs that lost more than 0.5 % of the capacity-seconds to a limit
// below C went from 23 (22 in session 31's control) to 6 and 11 in two
// batches, those that lost more than 1.5 % from 1 (2) to 0 and 1, and the
// worst run's goodput rose from 12.708 (12.636) to 12.857 and 12.774
// seats, the median staying at 13.04. TestAdaptiveNoisyLevel (150 runs
// from each start) kept its level (22.6 to 22.9 and 21.9 to 22.2 seats in
// three batches before, 23.0 and 21.9 to 22.0 in two after), and its runs
// under 8 seats from Min went from 2 to 4 to none. After
// the jobs all got twice as cheap (TestAdaptiveJobsGetCheaper, 300 runs),
// the mean limit in the 8 s after the change rose from a median of 17.6 to
// 18.1 seats, and the lowest limit from 8 s after it from 16 to 17
// (benchmarks/ADMISSION.md, session 33).
func (a *adaptive) lawBase() float64 {
	return max(a.logBase, 0)
}

// logMove moves l, the log of a geometric mean, by weight w towards lx:
// an exponential moving average of the log.
func logMove(l, lx, w float64) float64 {
	return l + w*(lx-l)
}

// measuresRef reports whether a sample of log inflation lx measures its
// reference rather than the server: it ran Tolerance times faster than
// the reference, by more than chance (refChance), as a job does whose
// reference was taken under more congestion than it ran in, and as noise
// alone does not. Such a sample stays out of the baseline, and out of
// short once the noise is known (noiseKnown).
//
// Out of short, because at the equilibrium one such job misread the
// server as calm. In adaptive_sim_test.go's scenario from Initial = 4·C, a
// job whose reference was taken under about 30 running jobs, but labelled
// with a load of 18 (jobs admitted at one instant are labelled in the
// order of their admission, and all of them run together), completed
// twice in a round at 0.6 of it. That took short under
// sqrt(Tolerance)·baseline for the round, a calm round, and the limit a
// quarter past the point: it rose to 21 to 24 seats after 15 s in 1 and 3
// runs of 1,500, and TestAdaptiveSettles failed 2 times in 2,000. Out of
// short, in 3,000 runs it never rose past 20 (benchmarks/ADMISSION.md,
// sessions 24 and 25).
//
// Only once the noise is known, because the estimate starts at 0 and
// for its first pairs reads almost no chance: the bare cut at 1/Tolerance
// then left nearly half of the samples out of short where seat times
// vary, and short read congestion where there was none. Started at Min with seat times spread
// log-normally by 0.5 (TestAdaptiveNoisyLevel, 150 runs), the limit
// reached C after 9.4 s instead of 6.5 s and the goodput fell from 13.7
// to 12.7 seats; with the bias of the estimate's first pairs divided out
// (for the baseline's cut too), 8.3 s and 13.0.
// The baseline, which each sample moves by a twentieth and probes
// re-anchor, keeps its cut from the first sample.
func (a *adaptive) measuresRef(lx float64) bool {
	// The square root is taken only for a sample under 1/Tolerance at all.
	below := -a.logTol - lx // how far lx lies under 1/Tolerance, in log
	return below > 0 && below > refChance*math.Sqrt(a.sampleChance())
}

// leftBehind reports whether e's reference is one its job's own cost
// estimate has left behind: the estimate, which follows the job's seat
// times at every load, lies under 1/Tolerance of the reference by more
// than one sample's chance (measuresRef), once the noise is known. Load
// only slows a job, so the job got cheaper since the reference was taken
// (or the reference was taken under congestion its load did not show);
// and only a completion at the reference's load or a lower one would move
// it or take it again. After the jobs all got cheaper, the references
// taken at the lowest loads, 1 to 9 seats (the first jobs, admitted one
// at a time, and a probe's), never were. A completion at an uncongested
// load now drops such a reference and takes it again (sampleLocked).
//
// Those references kept the probes coming. Their jobs' samples count in
// all (noteFaster) and in a probe's verdict: now and then a round read as
// faster than the references, a probe read them as congested, and probes
// followed every five rounds, the limit held, until one found them sound
// (a trace in benchmarks/ADMISSION.md, session 29). In
// TestAdaptiveJobsGetCheaper's scenario (1,000 runs), the ticks spent
// probing from the change fell from a median of 14.5 % to 8.0 % (p90 22.5
// to 10.0); the mean limit in the 8 s after the change (probes left out)
// rose from 17.0 to 17.6 seats (the lowest run from 14.0 to 15.0), and
// from 28 s it stayed at 17.7. Only once the noise is known: before,
// where seat times vary, the estimate of a job's first few samples lies
// under its reference by more than 1/Tolerance by chance alone, and
// started at Min (TestAdaptiveNoisyLevel, 150 runs) the limit reached C
// after 7.6 s instead of 6.6 s, for a goodput of 13.36 seats against
// 13.67; gated, 6.5 s and 13.72.
func (a *adaptive) leftBehind(e *costEntry) bool {
	return e.hasRef() && a.noiseKnown() && a.measuresRef(math.Log(e.est)-e.logRef)
}

// refChance is how many standard deviations of one sample's inflation
// (sqrt(2·noise) in log: its seat time's and its reference's spread) a
// sample must lie beyond 1/Tolerance before it reads as a reference taken
// under congestion and stays out of the baseline. Where seat times do not
// vary, noise is about 0 and 1/Tolerance alone decides. With a log-normal
// spread of 0.5, the bare 1/Tolerance cut off most of the lower half of
// the noise (one sample's log inflation varies by 0.71, the cut is at
// -0.095): the baseline kept the slow samples and few of the fast ones,
// and the limit settled the higher for it. In TestAdaptiveNoisyLevel
// (150 runs from each start, geometric averages both ways) the median
// limit from 10 s was 30.2 and 25.6 seats with the bare cut, 24.1 and 22.5
// with this one, for a goodput over the 40 s of 15.96 and 13.77 seats
// against 15.89 and 13.73 (benchmarks/ADMISSION.md, session 21).
const refChance = 2

// minShortSamples is the fewest samples short averages over, however low
// the limit: at a limit of one or two seats a round is one or two jobs,
// and where seat times vary short was then the last job's inflation,
// congested for every job slower than its reference. With seat times
// spread log-normally by 0.5, C = 16 and the limit started at Min = 1
// (TestAdaptiveNoisySeatTimes), it stayed at 1 to 3 seats for the first
// 15 s in two runs of five, whose goodput over 40 s was 4.4 seats; with
// eight, it reached 14 to 24 seats by 9 s in all five (and stayed that low
// in 6 runs of 3,000).
const minShortSamples = 8

// shortError is about the standard error of short in log, from the noise:
// a job's inflation varies by its seat time's spread and its reference's,
// 2·noise in log, so by sqrt(e^(2·noise) - 1) of its plain mean, and short
// averages about max(limit, minShortSamples) samples. (short is a
// geometric mean now, whose own standard error in log is
// sqrt(2·noise/samples), a little less: 0.71 against 0.81 per sample at a
// spread of 0.5. Taken instead, it cut the noisy slow disk's goodput by
// 0.13 % in 20 draws for a p99 2 % lower, so the wider allowance stays;
// benchmarks/ADMISSION.md, session 21.) About 0 where seat times do not
// vary (in the simulated tests without a spread, noise is a few
// thousandths in log, which moves a cut by about 0.3 %). A congested
// step cuts the limit only as far as short one standard error lower
// implies. With a log-normal spread of 0.5 and C = 16 (the noisy Settles
// load, 40 s, three batches of 150 runs per start against two before), a
// round that strayed high by chance had cut the limit under 12 seats in 8
// and 9 runs from Initial = 4·C and in 20 and 24 from Min; with the
// allowance, in 2 to 6 and 6 to 11. The goodput from 4·C went from 15.78
// to 15.90 seats (the worst run from 14.4 to 14.8 to 15.5), from Min from
// 13.2 to 13.3, and the settled limit stayed at 25 to 26 and 23 seats
// (benchmarks/ADMISSION.md, session 16). Two standard errors took the dips
// further but raised the limit from Min by two seats.
func (a *adaptive) shortError() float64 {
	return math.Sqrt(a.shortChance(a.limit))
}

// shortChance is shortError squared where short averages over a round at
// limit: the variance chance gives it (restoreTo reads it at the limit a
// probe started from).
func (a *adaptive) shortChance(limit float64) float64 {
	return math.Expm1(a.sampleChance()) / max(limit, minShortSamples)
}

// noteNoise folds a sample of e, a job that held its seat for e^lobs
// seconds at load seats in use, into the noise estimate: two successive
// samples of one (type, job ID) at the same load differ only by how seat
// times vary, so half their squared difference in log is an estimate of
// that variance (0 where times do not vary; a job that got dearer adds
// one such estimate, not one per later sample). A probe's verdict allows
// for it (probe.go).
func (a *adaptive) noteNoise(e *costEntry, lobs float64, load int32) {
	if math.IsInf(lobs, -1) { // of no measurable time: no pair with the next
		e.lastLoad = 0
		return
	}
	if e.lastLoad == load {
		d := lobs - e.logLast
		a.noise += noiseAlpha * (d*d/2 - a.noise)
		a.pairs++
	}
	e.logLast, e.lastLoad = lobs, load
}

// sampleChance is the variance that chance alone gives one sample's log
// inflation: 2·noise, its seat time's spread and its reference's. The
// baseline's cut, shortError and a probe's verdict (probeChance) read it.
func (a *adaptive) sampleChance() float64 {
	return 2 * a.noise
}

// noiseAlpha is the weight of one pair of samples in the noise estimate.
const noiseAlpha = 0.01

// noiseKnown reports whether the noise estimate rests on enough pairs to
// say what chance is: 1/noiseAlpha of them, the span of its average, which
// starts at 0 and until then reads too little noise (measuresRef).
func (a *adaptive) noiseKnown() bool {
	return a.pairs >= 1/noiseAlpha
}

// refCeilingLocked is the highest load at which a completion may take or
// move a reference: limit/Tolerance, which is the true capacity when the
// limit sits where the controller settles, and at least Min, so that
// references can always be taken again at the floor. While a probe runs,
// the limit it will restore counts, so that the jobs it admits take theirs.
func (s *Scheduler) refCeilingLocked() float64 {
	a := s.adaptive
	return max(float64(a.cfg.Min), a.unprobed()/a.cfg.Tolerance)
}

// baselineCeiling is the highest load at which a sample may feed the
// baseline, refCeiling being the reference ceiling (refCeilingLocked, which
// sampleLocked has already read): that ceiling over sqrt(Tolerance),
// limit/Tolerance^1.5, and at least Min. Where the limit settles, at
// Tolerance·C, that is C/sqrt(Tolerance): loads with a little room to
// spare. sampleLocked asks it last, after the cheaper conditions.
//
// At the reference ceiling itself, as until session 30, the baseline took
// samples up to C there, and above C where seat times vary: there the limit
// settles above Tolerance·C (the package doc, "What noise still costs"), so
// the ceiling is above C, congested samples reach the baseline and hold it
// up, and the limit with it. On a server that thrashes past C that level
// costs goodput, not only latency. Half a Tolerance lower, over 20 draws of
// benchmarks/adaptive's noisy thrashing slow disk, the median goodput rose
// from 11.56 to 11.91 seats (93.2 % to 96.1 % of a fixed capacity of C), the
// mean limit fell from 18.7 to 17.2 and the p99 from 1.56 to 1.49 s. The
// cost is where seat times vary and the server does not thrash: the noisy
// slow disk's median moved from 13.056 to 13.044 seats, and in 400 runs of
// it the runs that lost more than 0.5 % of the capacity-seconds to a limit
// below C went from 3 to 24 (the worst of each lost 1.54 % and 1.59 %). A whole
// Tolerance lower (limit/Tolerance²) did more where the server thrashes
// (12.05 seats, 97.2 %) and much worse where it does not: 28 runs of 400
// past 0.5 %, one of them 10.3 % below C. The scenarios without noise did
// not move beyond their spread: there the baseline is 1 at any load under
// C (benchmarks/ADMISSION.md, session 30).
func (a *adaptive) baselineCeiling(refCeiling float64) float64 {
	return max(float64(a.cfg.Min), refCeiling/math.Sqrt(a.cfg.Tolerance))
}

// hasRef reports whether e holds a reference (logRef).
func (e *costEntry) hasRef() bool { return e.refLoad > 0 }

// updateRef folds an observation of e^lobs seconds made at load into the
// reference: one at a lower load replaces it, one at the same load moves it
// by the cost EMA's alpha in log, one at a higher load leaves it
// (congestion, not the job, may have made it slower). An observation of no
// measurable time (lobs = -Inf) that would replace the reference leaves
// none, to be taken by the next.
func (e *costEntry) updateRef(lobs float64, load int32, alpha float64, epoch uint32) {
	switch {
	case !e.hasRef() || load < e.refLoad:
		if math.IsInf(lobs, -1) {
			e.refLoad = 0 // none: the next observation takes it
			return
		}
		e.logRef, e.refLoad, e.refEpoch = lobs, load, epoch
	case load == e.refLoad && !math.IsInf(lobs, -1):
		e.logRef = logMove(e.logRef, lobs, alpha)
	}
}
