package admission

import "math"

// Probes of adaptive capacity: the package doc ("Adaptive capacity",
// Probes) says what they are for, what their verdicts mean and when the
// next one comes. This file holds them: what brings the next probe sooner
// (noteFaster, noteRise; a fall by a fifth is stepLocked's), a probe's
// start and its verdict (startProbeLocked, probeSampleLocked), and what a
// verdict does besides setting the next one's time: the baseline it may
// anchor (anchors, beyondChance), the floor a sound one sets (setFloor),
// the fall a sound one explains (explainFall, followFall), and the limit
// it restores (restoreTo). The fields they keep are adaptive's (adaptive.go),
// whose comments give their invariants; epoch and unconfirmed say what
// each was measured to do.

// A probe sets the limit to probeDepth of itself: below the true capacity
// C from any limit under 2·C, so its jobs take their uncongested time;
// from a limit higher still they run at a load the references were not
// taken under, faster than them, and the next probe comes soon and starts
// lower. The first probe comes minProbeEvery rounds after New; a fall of
// the limit below fellBy of adaptive.mark (see its comment) brings the
// next one to within minProbeEvery rounds.
//
// A shallower probe costs less while it runs, but after the capacity
// halves it is not below the new one, and more probes follow: at 0.6 and
// 0.7, benchmarks/adaptive's slow disk lost 0.24 and 0.18 % of its
// capacity-seconds to probes, against 0.07 to 0.09 %, and the noisy
// shared one settled higher; 0.4 moved nothing beyond the spread between
// runs. A fall by 0.7 or 0.9 of mark, not fellBy's, did no better either
// (session 37 of benchmarks/ADMISSION.md).
const (
	probeDepth    = 0.5
	minProbeEvery = 5
	fellBy        = 0.8
	// minProbeSamples is the fewest samples a probe's verdict rests on:
	// at a limit of a few seats, a round would be one or two jobs.
	minProbeSamples = 8
)

// noteFaster is called at each sample while no probe runs, after short and
// all have taken it. A round for which the jobs at the limit ran faster than
// their references, beyond Tolerance and beyond chance, brings the next
// probe within minProbeEvery rounds: those references were taken under
// more congestion than the limit's, or the jobs all got cheaper. all is
// short with the samples that measure their references too (measuresRef
// leaves them out of short, so short alone may not tell), and faster
// counts the rounds for which all has stayed below baseline/Tolerance by
// fasterZ of short's standard errors (shortError), once the noise is known
// (noiseKnown: until then the estimate reads too little chance).
//
// Without it nothing brought a probe when the jobs all got cheaper: a rise
// of the limit brings none, and once two sound verdicts have let the
// probes go quiet the next comes ProbeInterval rounds later. Twice as cheap
// at once (TestAdaptiveJobsGetCheaper), the old references read the server
// as calm, and the limit climbed until congestion made the jobs as slow as
// their references had been: for C = 16, a median of 33.1 seats from 8 s
// after the change (60 runs), to the end of the run. Now the probe comes
// before the limit has climbed far, so that its jobs run below the loads
// the references were taken at and take them again, and probes follow
// while the jobs at the limit still run faster than theirs: a median of
// 18.2 (benchmarks/ADMISSION.md, session 26).
//
// Such a probe's verdict of congested references holds the limit (held;
// fastRound, read at the verdict: faster does not move while a probe
// runs): it does not grow until a verdict that is not congested. The jobs
// at the limit read as calm only against the references not yet taken
// again, and between the probes the limit grew by half again each calm
// round (fastGrowth): in TestAdaptiveJobsGetCheaper's scenario it peaked
// at a median of 29 seats in the 8 s after the change (1,000 runs; 40 at
// most), and came back down only as the probes took the references again,
// late enough in 3 runs of 12,600 for the test to fail (a mean above 20
// seats from 8 s after the change). Held, it peaks at 18 seats (30 at
// most in 6,000 runs: a sound verdict by chance ends the hold early), and
// the ticks spent probing from the change on fall from a median of 27 %
// to 15 to 16 % (benchmarks/ADMISSION.md, session 27).
//
// While the limit is held, a verdict of congested references anchors no
// baseline: its m is the old references', which its jobs and the next
// probes' take again, not what the references will read. Anchored, the
// baseline stayed near m while they were taken again, the jobs whose
// references had been taken again read as congested against it, and in 9
// runs of 600 the limit fell to 3 to 10 seats for 5 s and more, in three
// to the end of the run (a trace: the baseline ended 10 % low, at a load
// where no completion moves it, and the probes had gone quiet). A probe
// that came on its own still anchors on a congested verdict: where seat
// times vary, not anchoring there let the limit overshoot on references
// still too high and fall back harder (in benchmarks/adaptive's noisy
// slow disk, 150 runs, the runs losing more than 0.5 % of the
// capacity-seconds below C went from 4 to 12 in session 22, and from 1
// and 5 to 2 and 5 in session 26, the worst 12.81 and 12.84 seats against
// 12.94 and 12.91). Nor does it wait for a second congested verdict in a
// row where chance sets the verdict's bound (verdictZ), anchoring the
// two probes' jobs together, though one verdict in six or so reads chance
// as congestion there: the wait cost the same, in 900 runs 14 losing more
// than 0.5 % and 4 more than 1.5 % (the worst 12.38 seats), against 6 and
// 0 (12.91; session 29).
func (a *adaptive) noteFaster() {
	// shortError (an expm1 and a square root) is taken only when all lies
	// under baseline/Tolerance at all, which at a steady load it seldom does.
	below := a.fasterBy()
	if a.noiseKnown() && below > 0 && below > fasterZ*a.shortError() {
		a.faster += 1 / max(a.limit, 1)
	} else {
		a.faster = 0
	}
	if a.fastRound() {
		a.probeEvery = minProbeEvery
	}
}

// fasterBy is how far all lies under baseline/Tolerance, in log: above 0,
// the jobs at the limit ran faster than their references by more than
// Tolerance (noteFaster asks it beyond chance, noteRise at all).
func (a *adaptive) fasterBy() float64 {
	return a.logBase - a.logTol - a.logAll
}

// fastRound reports whether the jobs at the limit have run faster than
// their references for a round (noteFaster). faster moves only while no
// probe runs, so during a probe it reads as the probe started.
func (a *adaptive) fastRound() bool {
	return a.faster >= 1
}

// fasterZ is how many of short's standard errors all must lie below
// baseline/Tolerance for noteFaster. Where seat times vary
// (TestAdaptiveNoisyLevel, 150 runs from each start), one standard error
// at a single sample, the noise known or not, brought probes by chance,
// and the goodput from Min fell from 13.7 to 13.3 seats; two for a round,
// once the noise is known, brought none in those 300 runs (at a single
// sample, 111; benchmarks/ADMISSION.md, session 26).
const fasterZ = 2

// noteRise is called after a step raised the limit. A rise past riseBy
// times the highest limit held before the last probe started (high), while
// the jobs at the limit run faster than their references (all under
// baseline/Tolerance) and the probes have been quiet for riseQuiet rounds,
// brings the next probe at once. Its verdict of congested references starts
// an epoch, after which the next probes' jobs take their references again.
//
// noteFaster alone does not catch jobs that all got cheaper where seat
// times vary: it waits for a round beyond fasterZ of short's standard
// errors, and meanwhile the calm rounds grow the limit by half again each
// (fastGrowth) until congestion makes the jobs as slow as their old
// references. With seat times spread log-normally by 0.5, twice as cheap at
// once (TestAdaptiveNoisyJobsGetCheaper's scenario, 300 runs), the limit
// from 8 s after the change had a median of 43.6 seats for C = 16, above 32
// in 250 runs, and stayed there for minutes: no probe comes until
// ProbeInterval rounds later. A rise past the highest limit held before
// tells the server that got faster or the jobs that got cheaper apart only
// by a probe; a limit that comes back to where it was (a slow spell that
// ends) brings none, nor do jobs that run at their references. With the
// rise's probe, the median is 23.7 and 23.6 seats in two batches (above
// 32 in 35 and 32 runs of 300). Its congested verdict does not hold the
// limit as noteFaster's does: held, the median was 24.1 and 24.4, a little
// lower in the first 8 s (26.7 against 28.0 and 28.4), but where the
// server got faster (below) the probes found chance there, held the limit,
// and the work done in the 20 s after fell to 30.79 seats at p10 (31.25
// not held), and in the noisy slow disk of benchmarks/adaptive 0.26 % of
// the capacity-seconds went to probing (0.20 % not held).
//
// riseQuiet keeps the rule from the climb from Min, where each probe's
// limit is the highest yet: without it (measured with a rise by a
// quarter), the goodput of TestAdaptiveNoisyLevel from Min fell from 13.84
// to 13.86 seats (150 runs, three batches) to 13.63, against 13.73 with
// it; the rule as kept reads 13.83. In benchmarks/adaptive's noisy slow
// disk (400 runs) the median, the p10 and the runs losing more than 0.5 %
// below C stayed within the code's own spread (13.043 seats, 12.999 and 12
// runs, against 13.041 and 13.044, 12.997 and 5 and 9 runs before, and 6
// and 11 runs in session 33). The price is where seat times vary and the
// server gets faster for good: the jobs' all strays under
// baseline/Tolerance by chance as the limit climbs, and the probes it
// brings cost about 1 % of the work in the 20 s after C went from 16 to 32
// (31.70 seats against 31.96, 100 runs; nothing without noise;
// benchmarks/ADMISSION.md, session 34).
func (a *adaptive) noteRise() {
	if a.probeEvery > minProbeEvery && a.sinceProbe >= riseQuiet && a.limit > riseBy*a.high && a.fasterBy() > 0 {
		a.probeEvery = minProbeEvery
	}
}

// riseBy and riseQuiet are noteRise's rise past the highest limit held
// before the last probe, and the rounds the probes must have been quiet
// for. A rise by a quarter (measured with the hold) brought more probes
// where seat times vary: in 400 runs of the noisy slow disk the median
// fell to 13.030 seats, against 13.043 by half (session 34).
const (
	riseBy    = 1.5
	riseQuiet = 4 * minProbeEvery
)

// unprobed is the limit as it was before a running probe halved it (the
// one the probe will restore), or the limit if no probe runs.
func (a *adaptive) unprobed() float64 {
	if a.probing {
		return a.saved
	}
	return a.limit
}

// startProbeLocked halves the limit for the round of jobs admitted under
// it (at least minProbeSamples).
func (s *Scheduler) startProbeLocked(now int64) {
	a := s.adaptive
	a.sinceProbe, a.probing, a.saved, a.mark, a.anchor, a.high = 0, true, a.limit, a.limit, 0, a.peak
	a.probeLog, a.probeN = 0, 0
	a.atLimit = math.Log(max(a.load, 1)) - a.logShort
	a.lawSees = a.logShort-a.lawBase() > 2*a.logTol
	s.setLimitLocked(a.limit*probeDepth, CapacityProbe, now)
	a.probeLeft = max(s.cfg.Capacity, minProbeSamples)
}

// probeSampleLocked counts the sample of j, of log inflation lx, into the
// running probe if the probe admitted j, and ends the probe after a round
// of such samples: the limit is restored, and the probe's verdict on the
// references sets when the next one comes and may re-anchor the baseline.
//
// The round's samples are the first of the probe's jobs to complete (it
// goes on admitting while they run), so where seat times vary its mean
// leans fast: the jobs that ran fast by chance are done first. In
// TestAdaptiveNoisyLevel (a log-normal spread of 0.5, 300 runs) the
// samples the verdicts counted read a mean log inflation of -0.13, all the
// jobs the probes admitted -0.03. A verdict on the first jobs admitted,
// all of them, has no lean but holds the halved limit until the slowest
// of them is done, which where jobs take a second or minutes (a clone of a
// small repository or of linux.git) can be minutes; measured, it reached
// C from Min sooner (5.6 s against 6.5) and gained nothing in
// benchmarks/adaptive, so the round ends as it does
// (benchmarks/ADMISSION.md, session 31).
func (s *Scheduler) probeSampleLocked(j *job, lx float64, now int64) {
	a := s.adaptive
	if !j.probed { // admitted before the probe lowered the limit
		return
	}
	a.probeLeft--
	if !math.IsInf(lx, -1) { // a job of no measurable time has no log: it counts towards the round only
		a.probeLog += lx
		a.probeN++
	}
	if a.probeLeft > 0 {
		return
	}
	s.endProbeLocked(now)
}

// endProbeLocked ends the running probe once its round of samples is in:
// its verdict sets when the next one comes and may re-anchor the baseline
// (verdict), and the limit is restored (restoreTo). A probe that found the
// server saturated more than a Tolerance below the limit it halved holds
// the one it restores, until the next probe, minProbeEvery rounds on: see
// restoreTo.
func (s *Scheduler) endProbeLocked(now int64) {
	a := s.adaptive
	a.probing = false
	// m is the geometric mean of the probe's inflations, e^logM. If no job
	// took time, logM is 0, the verdict sound, and m 0: it anchors nothing.
	var logM, m float64
	if a.probeN > 0 {
		logM = a.probeLog / float64(a.probeN)
		m = math.Exp(logM)
	}
	a.verdict(logM, m)
	to := a.restoreTo(logM)
	a.cut = to < a.saved/a.cfg.Tolerance
	if a.cut {
		a.probeEvery = minProbeEvery
	}
	s.setLimitLocked(to, CapacityProbe, now)
}

// verdict judges the references by the probe's jobs, logM being the mean
// log of their inflations and m its exponential (0 if none took time):
// congested, stale or sound (the package doc, Probes), each beyond
// sqrt(Tolerance) and beyond chance (verdictZ). It sets when the next
// probe comes, the epoch, the hold, the floor and a fall's explanation,
// and may re-anchor the baseline (anchors) at m moved back towards it by
// what chance explains (beyondChance).
func (a *adaptive) verdict(logM, m float64) {
	if m > 0 {
		m = a.beyondChance(logM)
	}
	bound := max(a.logTol/2, verdictZ*math.Sqrt(a.probeChance()))
	// A probe that faster jobs brought on (noteFaster) and that finds the
	// references congested holds the limit, until a verdict that is not
	// congested; while held (so only on a congested verdict), a verdict
	// anchors nothing: see noteFaster.
	congested := logM < -bound
	a.held = congested && (a.held || a.fastRound())
	if a.anchors(m) && !a.held {
		a.logBase = math.Log(m)
	}
	a.floor = 0 // set again below by a sound verdict
	switch {
	case congested:
		a.probeEvery = minProbeEvery // congested references: probe again soon
		a.epoch++                    // and the next probes' jobs take them again (sampleLocked)
	case logM > bound:
		a.probeEvery = minProbeEvery // stale references (dearer jobs): probe again soon
		a.epoch++
		a.unconfirmed = true
	case a.unconfirmed:
		a.probeEvery = minProbeEvery // sound, but its jobs may be the ones taken again: once more
		a.unconfirmed = false
		a.setFloor()
	default:
		a.probeEvery = float64(a.cfg.ProbeInterval)
		a.setFloor()
		if a.fell {
			a.explainFall(m)
		}
	}
	a.fell = false
}

// restoreTo is the limit a probe restores as it ends, logM the mean log
// inflation of its jobs: saved, unless the probe found the server saturated
// well below it. A probe compares the server at two loads, the jobs at the
// limit (short, at their load, taken as the probe started: atLimit) and
// its own at half of it (m), and both are read against the same references,
// so their ratio holds whatever those are worth. Past the true capacity C a
// job's seat time grows with the load, so short/m is load/C if the probe
// ran under C and load/(the probe's load) if above: C is at most
// load·m/short. If Tolerance times that, raised by saturatedZ standard
// errors of chance (short's and m's), lies below saved, the limit is
// restored only to there, and never below the probe's own. Nothing else
// changes: the verdict's switch above still sets when the next probe comes
// (and a fall by a fifth from mark brings it within minProbeEvery rounds).
// Restored only where the estimate lay below four fifths of saved, as
// first measured, the limit from 4·C stopped short of the shared server's
// level, and that level was half a seat higher: from 4·C, 2·C and 1.25·C,
// 26, 13 and 19 runs of 60 passed 1.25·C after 15 s, against 8 to 10, 3
// to 4 and 6 to 9.
//
// Where the references were all taken under congestion, short reads the
// server as barely congested whatever the load, and the limit fell from a
// too-high Initial only by the law's few per cent a round: on a server
// that shares itself among its jobs (simserver.NewShared, C = 16), from
// Initial = 4·C, the mean limit from 10 s had a median of 22.2 seats (60
// runs), within ±25 % of C only after a median of 20.7 s; where seat times
// vary as well, the limit ran away past the jobs in flight in 50 runs of
// 60. With the restore, each probe takes it down to about Tolerance times
// its own limit: a median of 19.2 and 19.3 seats in two batches, within
// ±25 % after 10.3 and 10.1 s, and 8 and 11 runs of 60 ran away where seat
// times vary (benchmarks/ADMISSION.md, session 35).
//
// Two conditions keep it to that case. Only once the noise is known
// (noiseKnown): until then the estimate reads almost no chance, and
// started at Min with seat times spread by 0.5 (TestAdaptiveNoisyLevel,
// 150 runs) the goodput fell from 13.81 to 13.68 seats. And not where
// short was more than Tolerance² times the baseline as the probe started
// (lawSees): there the law sees the congestion and follows it by itself,
// and where seat times vary a probe's m leans fast (see probeSampleLocked)
// and the estimate with it. In benchmarks/adaptive's noisy slow disk the
// probes just after C halved cut the limit below the new C: the runs that
// lost more than 1.5 % of the capacity-seconds below C went from 1 in 800
// to 7 in 1,600; kept from them, 1 in 800 again (and those past 0.5 % 27
// against 29), and 0 in 400 (14 past 0.5 %) once the restore took any
// estimate below saved, not only one below four fifths of it.
//
// A cut of more than a Tolerance holds the limit it restores (cut): it
// does not grow until the next probe, which comes minProbeEvery rounds on
// and cuts again or ends the hold. Without the hold, where seat times
// vary, the limit climbed back at once: the probe's slowest jobs, done
// after it gave the seats back but counted at its load (on a server that
// shares itself among its jobs they ran at the restored load), lifted the
// baseline, and calm rounds grew the limit past where it had been within
// a second; and a probe at half a limit above 2·C, itself above C, found
// the references taken there sound, so the next came ProbeInterval rounds
// later. On the noisy shared server from 4·C, with the hold and a probe
// clock that counts unused samples too (stepLocked), the mean limit from
// 10 s ran past 60 seats in 8 runs of 1,800 and past 90 in 1, against 163
// and 98 of 600 before (medians 26.0 and 32.3 seats). A smaller cut, as
// the law's own steps around Tolerance·C leave, holds nothing: held on
// every cut, after the jobs all got twice as dear (TestAdaptiveJobsGetDearer,
// two batches of 300 runs) the lowest limit from 8 s after the change was
// 15 seats or less in 31 and 27 runs, against 8 and 17 before; held past a
// Tolerance, in 21 and 21 (benchmarks/ADMISSION.md, session 36).
func (a *adaptive) restoreTo(logM float64) float64 {
	if a.probeN == 0 || !a.noiseKnown() || a.lawSees {
		return a.saved
	}
	// short's chance at saved, the limit it averaged over, and m's.
	se := math.Sqrt(a.shortChance(a.saved) + a.probeChance())
	to := a.cfg.Tolerance * math.Exp(a.atLimit+logM+saturatedZ*se)
	return min(a.saved, max(to, a.limit))
}

// saturatedZ is how many standard errors of chance restoreTo adds to its
// estimate of the capacity. Three instead of the lawSees condition kept
// the noisy slow disk's tail too (1 run in 400 past 1.5 %), but on the
// noisy shared server from 4·C the limit still ran away in 22 runs of 60
// (9 with two alone, 14 with two and lawSees; all three with the
// four-fifths threshold).
const saturatedZ = 2

// beyondChance is the inflation a probe's verdict may anchor the baseline
// at, e^logM being its jobs' geometric mean inflation: that mean, moved
// back towards the baseline by what chance explains of the gap. A probe's
// n or so jobs' mean log varies by se² = 2·noise/n by itself; a gap d
// (in log) from the baseline keeps d·(1 − se²/d²), nothing of it when
// d² <= se². Where seat times do not vary, se is about 0 and m anchors as
// it is. Where they vary, a probe whose mean strayed low by chance had
// become the baseline outright, and against it every load read as
// congested for seconds: the dips that the floor (setFloor) does not stop,
// since the limit falls no further than half of C in them (a trace in
// benchmarks/ADMISSION.md, session 22). In 150 runs of
// benchmarks/adaptive's noisy slow disk over 20 draws of jobs, on top of
// the floor, the runs losing more than 0.5 % of the capacity-seconds to a
// limit below C went from 6 to 0 (worst 12.877 to 12.930 seats), and the
// thrashing slow disk's median of 20 draws from 12.682 to 12.695.
func (a *adaptive) beyondChance(logM float64) float64 {
	d := logM - a.logBase
	se2 := a.probeChance()
	if d*d <= se2 {
		return math.Exp(a.logBase)
	}
	return math.Exp(a.logBase + d*(1-se2/(d*d)))
}

// probeChance is the variance that chance alone gives the mean log
// inflation of the running probe's probeN jobs (sampleChance each).
func (a *adaptive) probeChance() float64 {
	return a.sampleChance() / float64(max(a.probeN, 1))
}

// setFloor sets the floor after a probe found the references sound: the
// server kept up at the probe's limit, so a congested step does not cut the
// limit below that load (less Tolerance, so that a server that lost half
// its capacity still settles at Tolerance times the rest, under it). Only a
// probe takes the limit lower: a step the floor stops brings the next one
// within minProbeEvery rounds, and its verdict moves or clears the floor
// (a server really slower: sound again, at half the limit; references
// gone wrong: no floor). Where seat times vary, a baseline that sank under
// the references' noise (the package doc, "Noisy seat times") read every
// load as congested and took the limit down to a few seats for seconds;
// the floor stops that fall at about half the limit, and the probe it
// brings on re-anchors the baseline. In 150 runs of benchmarks/adaptive's
// noisy slow disk over 20 draws of jobs, the worst goodput went from
// 12.794 to 12.877 seats (p10 12.965 to 12.994) and the runs losing more
// than 0.5 % of the capacity-seconds to a limit below C from 16 to 6; in
// TestAdaptiveNoisyLevel the runs under 8 seats from 10 s went from 1 and
// 4 to 0 and 3. The thrashing slow disk pays for the probes it brings on
// as C halves: 0.05 % of its goodput (medians of 20 draws; the other
// scenarios did not move beyond their spread; benchmarks/ADMISSION.md,
// session 22). A floor at the probe's limit itself did a little more for
// the noisy runs but cost the thrashing slow disk 0.17 %.
func (a *adaptive) setFloor() {
	a.floor = a.saved * probeDepth / a.cfg.Tolerance
}

// verdictZ is how many standard errors of chance the mean log of a
// probe's inflations must lie beyond 0 (as well as m beyond the bounds)
// for a verdict of stale or congested references. A job's inflation is its
// seat time over its reference's, each varying by the noise
// (adaptive.noteNoise), so its log varies by 2·noise and the mean of n of
// them has a standard error of sqrt(2·noise/n); and with sound references
// that mean is 0 whatever the noise, where the plain mean of the
// inflations is not 1 but about e^noise. (m was that plain mean until
// session 21 of benchmarks/ADMISSION.md; it is now e^ of the mean log, so
// the bounds and the allowance are held against one figure, and the
// measurements below were made with the plain m.) Where seat times vary,
// the mean of a probe's eight or so jobs strays past sqrt(Tolerance) by
// chance: with a log-normal spread of 0.5, most verdicts found the
// references stale or congested, probes came every five rounds and, in
// benchmarks/adaptive's noisy slow disk, cost 6.8 % of the goodput; 0.36
// % with two standard
// errors of chance around m = 1. But held against 1, an m of about e^noise
// still read noise as stale references now and then, which brings the
// next probe within five rounds: started at Min, the limit took a median
// of 8.4 s to reach C = 16 (3.6 s where times do not vary); with one
// standard error around a mean log of 0, 6.5 s (60 runs each), and the
// goodput of the noisy Settles load from Min went from 13.3 to 13.8 seats
// (benchmarks/ADMISSION.md, session 16). Two standard errors in log let
// references that the fall from a high limit had left too low go
// unnoticed: the limit sat under 12 seats in 59 runs of 150 from Initial
// = 4·C, against 6 before and none with one. Where times do not vary,
// noise is about 0 and the bounds alone decide.
const verdictZ = 1

// anchors reports whether a probe's mean inflation m may become the
// baseline: short, the inflation at the limit, is at most Tolerance^1.5
// times m, the inflation at half of it, so the load costs nothing and
// what inflation there is comes from the references (see the package
// doc). A probe whose jobs all took no time at all (m = 0, as in a
// synctest bubble) anchors nothing: a baseline of 0 would make the target
// 0/0 once short is 0 too.
func (a *adaptive) anchors(m float64) bool {
	return m > 0 && a.logShort <= 1.5*a.logTol+math.Log(m)
}

// explainFall is the verdict of a probe that a fall of the limit brought
// on (after the probes had gone quiet, see stepLocked) and that found the
// references sound, m the mean inflation of its jobs, before the limit is
// restored: jobs run at their references at the probe's limit, so the
// fall is the server's congestion, which the controller follows by
// itself. The limit may go on falling to the probe's limit without
// another probe: mark is that limit until followFall sees the fall over.
// And if short is still too high for m to become the baseline, m waits in
// anchor until it is not: the completions of the rest of the fall run
// under the reference ceiling while the limit is still above the
// capacity, and may have moved the baseline. (A second probe near the end
// of the fall used to do both, halving the seats again while the server
// was short of them.)
func (a *adaptive) explainFall(m float64) {
	a.mark = a.limit
	if !a.anchors(m) {
		a.anchor = m
	}
}

// followFall is called at each sample after short has taken it. Once
// short is low enough, a waiting anchor becomes the baseline; once the
// limit is back above where the last probe found it, a fall that probe
// explained is over, and the next one is measured from there (it may be
// jobs that got dearer).
func (a *adaptive) followFall() {
	if a.anchor > 0 && a.anchors(a.anchor) {
		a.logBase, a.anchor = math.Log(a.anchor), 0
	}
	if a.mark < a.saved && a.limit > a.saved {
		a.mark = a.saved
	}
}
