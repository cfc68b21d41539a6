package admission

import (
	"fmt"
	"math"
	"time"
)

// AdaptiveConfig turns on adaptive capacity (Config.Adaptive): the number of
// seats follows what the server can really do, between Min and Max. The
// package doc ("Adaptive capacity") explains the algorithm; every zero field
// but Max takes the default named on it. A plain value, copied by New.
type AdaptiveConfig struct {
	// Min and Max bound the limit: 1 <= Min <= Max. Min defaults to 1; Max
	// is required. The configured keys' MinSeats must fit in Min.
	Min, Max int
	// Initial is the limit at New, in [Min, Max]; 0 = Config.Capacity if
	// set, else Min.
	Initial int
	// Tolerance is the inflation (seat time over the job's reference, see
	// the package doc) accepted before the limit shrinks, >= 1; 0 =
	// DefaultAdaptiveTolerance. The limit settles at about Tolerance times
	// the true capacity: a higher value holds more jobs on the server,
	// which buys a little work at the moments its capacity changes for
	// more latency all along (in benchmarks/adaptive's slow disk, medians
	// of 20 draws, 1.5 against 1.1: 0.14 % more goodput, a p99 9 %
	// higher; session 18 of benchmarks/ADMISSION.md).
	Tolerance float64
	// Headroom bounds what the limit grows by, per round of samples (limit
	// completions), while the server keeps up and the seats are used, as a
	// multiple of sqrt(limit) seats; 0 = DefaultAdaptiveHeadroom. At 0.25,
	// where seat times vary, the limit settles a little lower and a
	// server that thrashes past its capacity does about 1.5 % more work,
	// but dips below the capacity come back (in 400 runs of
	// benchmarks/adaptive's noisy slow disk, 6 lost more than 1.5 % of the
	// capacity-seconds to them, against none); at 1, the level rises by a
	// seat and that server does up to 1 % less (session 37 of
	// benchmarks/ADMISSION.md).
	Headroom float64
	// Smoothing in (0, 1] is how much of the computed limit one round of
	// samples moves it by; 0 = DefaultAdaptiveSmoothing. Lower follows the
	// server more slowly: at 0.25, where seat times vary, the limit
	// started at Min took 9.7 s to reach the capacity instead of 6.4, and
	// dips below the capacity lasted longer (52 runs of 400 of the noisy
	// slow disk lost more than 0.5 % of the capacity-seconds to them,
	// against 11); higher gained at most 0.04 % of the slow disks' work
	// and cost the noisy thrashing one 1.1 to 3.2 % (session 37).
	Smoothing float64
	// UsedFraction in (0, 1]: the limit grows only while the seats in use
	// were at least this fraction of it, or work was queued, when a sample
	// ended; 0 = DefaultAdaptiveUsedFraction.
	UsedFraction float64
	// PressureBackoff in (0, 1) multiplies the limit at each reading of
	// Config.Pressure's source at or above 1; 0 =
	// DefaultAdaptivePressureBackoff.
	PressureBackoff float64
	// ProbeInterval is the rounds from a probe that found the references
	// sound to the next one. A probe halves the limit for one round of jobs
	// so that references are taken at a load the server keeps up with (see
	// the package doc); 0 = DefaultAdaptiveProbeInterval.
	ProbeInterval int
	// QueueDelayTarget turns on queue-delay shedding (CoDel's idea): when
	// the smallest wait of the foreground requests admitted over a
	// QueueDelayInterval, of the keys holding at least their share, stays
	// above it, new foreground arrivals of those keys are refused at once
	// with ErrOverloaded. 0 = off.
	QueueDelayTarget time.Duration
	// QueueDelayInterval is CoDel's interval; 0 =
	// DefaultQueueDelayInterval.
	QueueDelayInterval time.Duration
}

// Defaults of [AdaptiveConfig].
const (
	DefaultAdaptiveTolerance       = 1.1
	DefaultAdaptiveHeadroom        = 0.5
	DefaultAdaptiveProbeInterval   = 1000
	DefaultAdaptiveSmoothing       = 0.5
	DefaultAdaptiveUsedFraction    = 0.9
	DefaultAdaptivePressureBackoff = 0.9
	DefaultQueueDelayInterval      = 100 * time.Millisecond
)

// CapacityHistory is the number of capacity changes a Snapshot keeps.
const CapacityHistory = 32

// validate checks a and returns it with its defaults filled in; capacity
// is Config.Capacity (0 = not set).
func (a AdaptiveConfig) validate(capacity int) (AdaptiveConfig, error) {
	if a.Min == 0 {
		a.Min = 1
	}
	if a.Initial == 0 {
		a.Initial = a.Min
		if capacity > 0 {
			a.Initial = capacity
		}
	}
	switch {
	case a.Min < 1:
		return a, fmt.Errorf("%w: Adaptive.Min must be >= 1, got %d", ErrInvalidConfig, a.Min)
	case a.Max < a.Min:
		return a, fmt.Errorf("%w: Adaptive.Max must be >= Adaptive.Min (%d), got %d", ErrInvalidConfig, a.Min, a.Max)
	case a.Initial < a.Min || a.Initial > a.Max:
		return a, fmt.Errorf("%w: Adaptive.Initial must be in [Min=%d, Max=%d], got %d", ErrInvalidConfig, a.Min, a.Max, a.Initial)
	case capacity > 0 && capacity != a.Initial:
		return a, fmt.Errorf("%w: Capacity (%d) and Adaptive.Initial (%d) differ: with Adaptive set, Capacity is the initial limit; set one of them",
			ErrInvalidConfig, capacity, a.Initial)
	case a.ProbeInterval < 0 || a.ProbeInterval > 0 && a.ProbeInterval < minProbeEvery:
		return a, fmt.Errorf("%w: Adaptive.ProbeInterval must be 0 (default %d) or >= %d, got %d",
			ErrInvalidConfig, DefaultAdaptiveProbeInterval, minProbeEvery, a.ProbeInterval)
	case a.QueueDelayTarget < 0:
		return a, fmt.Errorf("%w: Adaptive.QueueDelayTarget must be >= 0, got %v", ErrInvalidConfig, a.QueueDelayTarget)
	case a.QueueDelayInterval < 0:
		return a, fmt.Errorf("%w: Adaptive.QueueDelayInterval must be >= 0, got %v", ErrInvalidConfig, a.QueueDelayInterval)
	}
	params := []struct {
		name     string
		v        *float64
		def      float64
		lo, hi   float64 // allowed range
		openHigh bool    // hi itself is not allowed
	}{
		{"Tolerance", &a.Tolerance, DefaultAdaptiveTolerance, 1, math.Inf(1), true},
		{"Headroom", &a.Headroom, DefaultAdaptiveHeadroom, 0, math.Inf(1), true},
		{"Smoothing", &a.Smoothing, DefaultAdaptiveSmoothing, 0, 1, false},
		{"UsedFraction", &a.UsedFraction, DefaultAdaptiveUsedFraction, 0, 1, false},
		{"PressureBackoff", &a.PressureBackoff, DefaultAdaptivePressureBackoff, 0, 1, true},
	}
	for _, p := range params {
		v := *p.v
		if math.IsNaN(v) || v < 0 || v < p.lo && v != 0 || v > p.hi || p.openHigh && v == p.hi {
			return a, fmt.Errorf("%w: Adaptive.%s must be 0 (default %v) or in [%v, %v%s, got %v",
				ErrInvalidConfig, p.name, p.def, p.lo, p.hi, map[bool]string{true: ")", false: "]"}[p.openHigh], v)
		}
		if v == 0 {
			*p.v = p.def
		}
	}
	if a.QueueDelayInterval == 0 {
		a.QueueDelayInterval = DefaultQueueDelayInterval
	}
	if a.ProbeInterval == 0 {
		a.ProbeInterval = DefaultAdaptiveProbeInterval
	}
	return a, nil
}

// CapacityReason says why the capacity changed.
type CapacityReason string

// The reasons of [EventCapacityChanged] and [CapacityChange].
const (
	// CapacityIncrease: the server kept up with the seats in use, so the
	// adaptive limit grew.
	CapacityIncrease CapacityReason = "increase"
	// CapacityDecrease: jobs took longer than their reference (the server
	// is congested), so the adaptive limit shrank.
	CapacityDecrease CapacityReason = "decrease"
	// CapacityPressure: Config.Pressure's source read 1 or more.
	CapacityPressure CapacityReason = "pressure"
	// CapacityOperator: SetAdaptiveBounds.
	CapacityOperator CapacityReason = "operator"
	// CapacityProbe: a probe halved the limit, or ended and restored it.
	CapacityProbe CapacityReason = "probe"
)

var capacityReasons = [...]CapacityReason{CapacityIncrease, CapacityDecrease, CapacityPressure, CapacityOperator, CapacityProbe}

// CapacityChange is one change of the capacity, in a Snapshot's history. A
// plain value.
type CapacityChange struct {
	// Time is when the call that made the change read the clock, before
	// it took the scheduler's lock: with calls made at once, one change
	// may carry a time a little before the change kept ahead of it.
	Time          time.Time
	Previous, New int            // seats before and after
	Reason        CapacityReason // what made the change
}

// AdaptiveSnapshot is the state of adaptive capacity in a [Snapshot]. A
// plain value.
type AdaptiveSnapshot struct {
	Limit     float64          // the controller's limit before rounding; Snapshot.Capacity is it rounded
	Min, Max  int              // the bounds now (AdaptiveConfig's, or SetAdaptiveBounds')
	Inflation float64          // short-term (geometric) mean inflation of the samples, but those that measure their references (1 = jobs take their reference time)
	Baseline  float64          // (geometric) mean inflation of jobs seen at no more load than their reference's: the noise level (the control law reads it as at least 1)
	Noise     float64          // how a job's seat time varies at a given load: the standard deviation of its log (about 0 where times do not vary)
	Samples   uint64           // completions that fed the controller
	Weak      uint64           // completions that did not (no reference yet for their type and job ID)
	Shedding  bool             // queue-delay shedding is refusing the heaviest keys' arrivals
	Probing   bool             // a probe has halved the limit for a round (see the package doc)
	Held      bool             // the limit does not grow: a probe found the references congested after jobs ran faster than them, or the server saturated more than a Tolerance below the limit (see the package doc, Probes)
	History   []CapacityChange // the last CapacityHistory changes, oldest first
}

// adaptive is the controller's state. cfg's Min and Max change only under
// Scheduler.mu (SetAdaptiveBounds); every other field is guarded by it too.
//
// Invariants: cfg.Min <= limit <= peak, limit <= cfg.Max, high <= peak;
// Scheduler.cfg.Capacity == seatsOf(limit); every float is finite (the geometric averages are kept
// as their logs, so they may be any number), and the other averages,
// counts of rounds and limits >= 0 (a NaN would compare false both ways
// and round to Min);
// hist[(histAt+i) % CapacityHistory] for i < histN are the last histN
// changes, oldest first, each from where the one before left the capacity
// to another value, the last to Scheduler.cfg.Capacity (their times need
// not be in order: see CapacityChange.Time). checkInvariantsLocked checks
// them (FuzzAdaptive drives it).
type adaptive struct {
	cfg   AdaptiveConfig
	limit float64
	// The package doc's geometric averages short, all and the baseline are
	// kept as their logs: each sample moves one by a multiply-add (inflation.go).
	logShort float64 // short: EMA of the log inflation of samples over about one round (limit samples)
	logAll   float64 // all: short's, with the samples that measure their references too (noteFaster)
	load     float64 // EMA of the same samples' loads (job.load), with short's weights
	logBase  float64 // the baseline: EMA of the log inflation of samples under its ceiling (baselineCeiling) and at or below their reference's load; a probe may re-anchor it
	logTol   float64 // log of cfg.Tolerance
	noise    float64 // EMA of the variance of a job's log seat time at a given load (noteNoise)
	pairs    uint64  // the pairs of samples noise has taken (noiseKnown)
	calm     float64 // rounds (a sample adds 1/limit) since short was last above sqrt(Tolerance)·baseline (not probing)
	faster   float64 // rounds (a sample adds 1/limit) for which all has stayed under noteFaster's cut (not probing: a probe reads it as it started, fastRound)
	samples  uint64
	weak     uint64
	// epoch is bumped by a probe that finds the references stale or
	// congested: a reference taken before it is taken again by a
	// completion at a lower load, faster or not, and by a probe's job
	// (sampleLocked). Under a flood every job is admitted above the
	// ceiling, so without the epoch only the probes' eight or so jobs each
	// retook references: with half of 100 job IDs taken again, the probes'
	// m mixed fresh references with stale ones, the baseline it anchored
	// stayed under what the stale half read, and the limit sat at a third
	// of C for seconds (TestAdaptiveJobsGetDearer failed about once in
	// 1,500 runs, and once in 10,500 since; session 14 of
	// benchmarks/ADMISSION.md measured three wider rules for retaking
	// stale references, none kept).
	epoch uint32
	// unconfirmed is set by a stale verdict and cleared by the next sound
	// one, which brings one more probe: only a second sound verdict in a
	// row lets the probes go quiet. The eight or so jobs a probe draws may
	// all be ones whose references were already taken again while others
	// are still stale. In 3,000 runs of TestAdaptiveJobsGetDearer's
	// scenario, the runs whose mean limit from 28 s stayed under 17 seats
	// went from 41 to 5 with it, for one more probe after each stale
	// episode; the test failed 5 times in 20,000 runs before, 3 in 30,000
	// since.
	unconfirmed bool
	// held is set by a verdict of congested references from a probe that
	// faster jobs brought on (noteFaster) and cleared by the next verdict
	// that is not congested: meanwhile the limit does not grow, and no
	// congested verdict anchors the baseline (probe.go).
	held bool
	// cut is set by a probe that restored the limit more than a Tolerance
	// below what it halved (restoreTo) and cleared by the next probe that
	// does not: meanwhile the limit does not grow, and the next probe comes
	// minProbeEvery rounds on.
	cut bool
	// lowered is set when the limit went below the seats in use (running
	// work is never pre-empted); the test-only invariant checks then allow
	// the excess.
	lowered bool
	changes [len(capacityReasons)]uint64 // by reason, for the metric

	// A probe (probe.go): sinceProbe counts the rounds since the last one
	// (a sample adds 1/limit, used or not: stepLocked), probeEvery the rounds between two
	// (minProbeEvery or cfg.ProbeInterval), saved the limit the last one
	// started from and restores (the one refCeilingLocked reads while it
	// runs), mark the limit a fall is measured from: saved, or since which
	// the limit fell by a fifth; but the limit the last probe ran at if a
	// fall brought it on and it found the references sound (explainFall),
	// until the limit is back above saved. fell is set from such a fall, if
	// the probes had gone quiet before it, to the verdict of the probe it
	// brings on; anchor > 0 is the mean inflation of such a probe, waiting
	// to become the baseline. While probing, probeLeft is the samples of
	// jobs admitted under the probe's limit still to come, and probeLog the
	// sum of the log inflation of the probeN of those that came and took
	// time (probeN >= 0).
	sinceProbe float64
	probeEvery float64
	mark       float64
	// peak is the highest limit so far, high what peak was when the last
	// probe started (noteRise, probe.go).
	peak, high float64
	floor      float64 // the least a congested step cuts to (see setFloor); 0 = none
	fell       bool
	anchor     float64
	probing    bool
	saved      float64
	probeLeft  int
	probeLog   float64
	probeN     int
	// atLimit is log(load/short) as the last probe started: where the jobs
	// at the limit put the capacity; lawSees, that short was then more
	// than Tolerance² times the baseline (restoreTo).
	atLimit float64
	lawSees bool

	hist          [CapacityHistory]capacityChange
	histAt, histN int

	// Queue-delay shedding (CoDel): the smallest wait of the foreground
	// admissions of keys holding their share since intervalStart, whether
	// there was one, and whether the last full interval stayed above the
	// target.
	intervalStart int64
	minWait       time.Duration
	admitted      bool
	shedding      bool
}

type capacityChange struct {
	at            int64
	previous, now int
	reason        CapacityReason
}

func newAdaptive(c AdaptiveConfig) *adaptive {
	l := float64(c.Initial)
	return &adaptive{cfg: c, limit: l, load: l, logTol: math.Log(c.Tolerance), probeEvery: minProbeEvery, mark: l, peak: l, high: l}
}

// seatsOf is a limit rounded to whole seats, within the bounds. To the
// nearest seat, not down: where C is a few seats the limit alternates
// between C and C+1 (a congested step takes it to about Tolerance·C, which
// rounds to C, and a calm round past the next half seat), a mean of 1.34
// to 1.43·C for C = 2. Rounded down it stayed nearer C (1.13 to 1.21·C)
// but spent time under C as well, and the work done fell by 1 to 4 %
// (medians of 20 runs; benchmarks/ADMISSION.md, session 33).
func (a *adaptive) seatsOf(limit float64) int {
	return min(a.cfg.Max, max(a.cfg.Min, int(math.Round(limit))))
}

// stepLocked moves the limit by one sample's share of a round, or runs a
// probe (probe.go); j is the sample's job and lx the log of its inflation
// x (-Inf for a job of no measurable time).
//
//	implied = load · Tolerance · max(baseline, 1) / short
//	target  = max(implied·e^se, limit/2)     if congested (se: shortError,
//	                                         about 0 where seat times do not
//	                                         vary), and at least the floor
//	                                         of the last sound probe
//	        = limit + Headroom·sqrt(limit)   otherwise, at most implied if
//	          x > sqrt(Tolerance)·max(baseline, 1), at least fastGrowth ·
//	          limit if calm >= 1 round
//	limit  += Smoothing / limit · (target - limit)
//
// Congested is short > Tolerance·max(baseline, 1): the law reads the
// baseline as at least 1 (lawBase). The limit then only falls, and
// otherwise only grows. A round is about limit samples, so one round moves
// the limit Smoothing of the way to target. An increase needs the seats to
// have been used (used), no pressure, and the limit neither held (held)
// nor cut by the last probe (cut).
//
// The probe clock counts every sample, used or not. An increase needs
// the seats used, so a limit that grows stops where the seats in use
// fall just short of UsedFraction of it, and there no sample is used:
// counting only used samples, as until session 36, the clock stopped
// there, and a limit that calm rounds had taken past the jobs in flight
// on references taken under congestion was never probed again: on a
// server that shares itself among its jobs, with seat times that vary,
// from Initial = 4·C, the mean limit from 10 s passed 90 seats in 11 and
// 13 runs of 60; counting every sample, in 2 and 2 (and with a probe's
// cut held, restoreTo, in 1 of 1,800; benchmarks/ADMISSION.md, session
// 36). The cost is where the seats are not used: such a server is probed
// too, every ProbeInterval rounds once the references are sound, and a
// probe delays work for a round only if more than half the limit is in
// use.
func (s *Scheduler) stepLocked(used bool, j *job, lx float64, now int64) {
	a := s.adaptive
	if a.probing {
		s.probeSampleLocked(j, lx, now)
		return
	}
	a.sinceProbe += 1 / max(a.limit, 1)
	if a.sinceProbe >= a.probeEvery {
		s.startProbeLocked(now)
		return
	}
	base := a.lawBase()
	noise := a.logTol/2 + base // log inflation past this is more than noise
	if a.logShort > noise {
		a.calm = 0
	} else {
		a.calm += 1 / max(a.limit, 1)
	}
	a.noteFaster()
	// gap is log(Tolerance·max(baseline, 1)/short): implied = load·e^gap.
	gap := a.logTol + base - a.logShort
	var target float64
	switch {
	case gap < 0: // congested: short > Tolerance·max(baseline, 1)
		target = min(a.limit, a.cutTarget(gap))
	case used && !a.holds() && !(s.pressure != nil && s.pressure.value >= 1):
		target = max(a.limit, a.growTarget(gap, lx > noise))
	default:
		return
	}
	if target == a.limit {
		return
	}
	reason := CapacityIncrease
	if target < a.limit {
		reason = CapacityDecrease
	}
	s.setLimitLocked(a.limit+a.cfg.Smoothing/max(a.limit, 1)*(target-a.limit), reason, now)
	if reason == CapacityIncrease {
		a.noteRise()
	}
	a.noteFall()
}

// cutTarget is a congested step's target, gap being
// log(Tolerance·max(baseline, 1)/short) (negative): implied, the load at
// which the samples' jobs would take Tolerance times their references,
// inflation being taken as proportional to load. It is measured at the
// samples' own load, not at the limit, which the samples trail by a round
// or so. Where seat times vary, a round's short strays by chance, so the
// cut goes only as far as short one standard error lower implies
// (shortError), and never below half the limit. Below the load the last
// sound probe found the server keeping up at, only a probe may take the
// limit (setFloor): a step the floor stops brings the next one within
// minProbeEvery rounds.
func (a *adaptive) cutTarget(gap float64) float64 {
	target := max(0.5*a.limit, a.load*math.Exp(gap+a.shortError()))
	if a.floor > 0 && target < a.floor && a.limit > a.floor {
		target, a.probeEvery = a.floor, minProbeEvery
	}
	return target
}

// growTarget is the target of a step that is not congested, gap being
// log(Tolerance·max(baseline, 1)/short) (at least 0) and inflated whether
// the sample ran more than sqrt(Tolerance) times its reference (against
// the baseline): the headroom, Headroom·sqrt(limit) seats more; but no
// more than implied (cutTarget) after an inflated sample, which says the
// point is near, and at least fastGrowth times the limit after a calm
// round.
func (a *adaptive) growTarget(gap float64, inflated bool) float64 {
	target := a.limit + a.cfg.Headroom*math.Sqrt(a.limit)
	if inflated {
		target = min(target, a.load*math.Exp(gap))
	}
	if a.calm >= 1 {
		target = max(target, fastGrowth*a.limit)
	}
	return target
}

// noteFall is called after each step of the law. A fall of the limit by a
// fifth since mark may be jobs that got dearer rather than a slower server
// (see probe.go), so it brings the next probe within minProbeEvery rounds.
// If the probes had gone quiet, the references were sound before the fall,
// and the probe it brings on may explain it (fell, explainFall); while
// probes come every few rounds, they are still being taken again, and a
// sound verdict vouches only for those it sampled. Quiet is a sound verdict
// that has held for as long as the next quick probe would have waited,
// not the verdict alone: when jobs got dearer, a probe's eight or so jobs
// may all be ones whose references were already taken again, while the
// stale references of the others bring the limit down within a few rounds;
// that fall is no congestion to explain.
func (a *adaptive) noteFall() {
	if a.limit < fellBy*a.mark {
		a.fell = a.fell || a.probeEvery > minProbeEvery && a.sinceProbe >= minProbeEvery
		a.probeEvery, a.mark = minProbeEvery, a.limit
	}
}

// fastGrowth is the target of an increase once jobs have taken no more
// than sqrt(Tolerance) times their references (against the baseline) for a
// round (calm): the server shows no congestion at all, as when it has just
// recovered from a slow spell, so the limit grows as TCP's slow start does
// rather than by Headroom·sqrt(limit). With Smoothing 0.5 a round grows
// the limit by a quarter, from half the true capacity back to it in three
// rounds rather than about eight. In benchmarks/adaptive (medians of 9
// runs, before the calm round) it raised the slow disk's goodput from
// 13.04 to 13.06 seats (ranges 13.03-13.05 and 13.05-13.07) for a p99 of
// 1.244s against 1.223s; a target of twice the limit gained nothing more
// and raised the steady p99 from 777 to 781ms. Without the calm round, a
// few jobs whose references were taken under some congestion dipped short
// at the equilibrium, and each dip added a quarter: in
// adaptive_sim_test.go the limit for C = 16 touched 21 in about 1 run of
// 12 (TestAdaptiveSettles).
const fastGrowth = 1.5

// pressureReadLocked is called at each reading of the pressure source.
func (s *Scheduler) pressureReadLocked(p float64, now int64) {
	if a := s.adaptive; a != nil && p >= 1 {
		a.saved *= a.cfg.PressureBackoff // (a probe restores the lowered limit)
		s.setLimitLocked(a.limit*a.cfg.PressureBackoff, CapacityPressure, now)
	}
}

// setLimitLocked sets the limit, clamped to the bounds, and the capacity
// with it, recording a change of the capacity.
func (s *Scheduler) setLimitLocked(limit float64, reason CapacityReason, now int64) {
	a := s.adaptive
	a.limit = min(float64(a.cfg.Max), max(float64(a.cfg.Min), limit))
	a.peak = max(a.peak, a.limit)
	prev, n := s.cfg.Capacity, a.seatsOf(a.limit)
	if n == prev {
		return
	}
	s.cfg.Capacity = n
	if s.inUse > n {
		a.lowered = true
	}
	for i, r := range capacityReasons {
		if r == reason {
			a.changes[i]++
		}
	}
	i := (a.histAt + a.histN) % CapacityHistory
	if a.histN == CapacityHistory {
		a.histAt = (a.histAt + 1) % CapacityHistory
	} else {
		a.histN++
	}
	a.hist[i] = capacityChange{at: now, previous: prev, now: n, reason: reason}
	s.emitCapacityLocked(prev, n, reason, now)
}

// SetAdaptiveBounds changes the bounds of adaptive capacity (Min and Max of
// Config.Adaptive): 1 <= min <= max, and min at least the configured keys'
// MinSeats. A limit outside the new bounds moves to the nearest one (reason
// CapacityOperator) and dispatch runs; lowering it pre-empts nothing. It
// returns an error wrapping ErrInvalidConfig for bad bounds, or when the
// capacity is not adaptive.
func (s *Scheduler) SetAdaptiveBounds(minSeats, maxSeats int) error {
	return s.reconfigure(func(now int64) error {
		a := s.adaptive
		switch {
		case a == nil:
			return fmt.Errorf("%w: SetAdaptiveBounds: the capacity is fixed (Config.Adaptive is nil); use SetCapacity", ErrInvalidConfig)
		case minSeats < 1 || maxSeats < minSeats:
			return fmt.Errorf("%w: SetAdaptiveBounds(%d, %d): want 1 <= min <= max", ErrInvalidConfig, minSeats, maxSeats)
		}
		if sum := s.minSeatsLocked(""); sum > minSeats || s.cfg.DefaultKey.MinSeats > minSeats {
			return fmt.Errorf("%w: SetAdaptiveBounds(%d, %d): min below the configured MinSeats (keys sum to %d, DefaultKey %d)",
				ErrInvalidConfig, minSeats, maxSeats, sum, s.cfg.DefaultKey.MinSeats)
		}
		a.cfg.Min, a.cfg.Max = minSeats, maxSeats
		s.setLimitLocked(a.limit, CapacityOperator, now)
		return nil
	})
}

// minCapacityLocked is the least the capacity can be: Min when adaptive.
// Keys' MinSeats must fit in it.
func (s *Scheduler) minCapacityLocked() int {
	if s.adaptive != nil {
		return s.adaptive.cfg.Min
	}
	return s.cfg.Capacity
}

// ---- observability ----

// holds reports whether the limit may not grow until a probe says so:
// held (a congested verdict after faster jobs) or cut (a probe's cut of
// more than a Tolerance). Snapshot's Held is this.
func (a *adaptive) holds() bool { return a.held || a.cut }

// snapshotLocked is the controller's part of a Snapshot.
func (a *adaptive) snapshotLocked(s *Scheduler) *AdaptiveSnapshot {
	snap := &AdaptiveSnapshot{Limit: a.limit, Min: a.cfg.Min, Max: a.cfg.Max, Inflation: math.Exp(a.logShort), Baseline: math.Exp(a.logBase),
		Noise: math.Sqrt(a.noise), Samples: a.samples, Weak: a.weak, Shedding: a.shedding && s.queued > 0, Probing: a.probing, Held: a.holds(),
		History: make([]CapacityChange, 0, a.histN)}
	for i := range a.histN {
		c := a.hist[(a.histAt+i)%CapacityHistory]
		snap.History = append(snap.History, CapacityChange{Time: s.timeAt(c.at), Previous: c.previous, New: c.now, Reason: c.reason})
	}
	return snap
}

// emitCapacityLocked reports a change of the capacity.
func (s *Scheduler) emitCapacityLocked(prev, n int, reason CapacityReason, now int64) {
	if s.obs.events.handler == nil {
		return
	}
	s.emitLocked(Event{Kind: EventCapacityChanged, Time: s.timeAt(now), Previous: float64(prev), New: float64(n), CapacityReason: reason})
}
