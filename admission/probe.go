package admission

// Probes of adaptive capacity (see the package doc, "Adaptive capacity").
//
// A reference taken while the server was already congested makes that
// congestion look normal. The reference ceiling (refCeilingLocked) keeps
// references from being taken above limit/Tolerance, which is enough once
// the limit sits near Tolerance times the true capacity; but the limit
// starts wherever Initial puts it, and the references of a job that got
// dearer are too low wherever they were taken. A probe halves the limit
// for one round of the jobs it admits, whose completions take their
// references at that lower load, then restores the limit. Its samples say
// whether the references were sound: if the jobs it admitted ran more than
// Tolerance times faster than their references, those were taken under
// congestion, and the next probe comes after minProbeEvery rounds;
// otherwise the references hold, and the next comes after
// AdaptiveConfig.ProbeInterval rounds. A fall of the limit by a fifth
// since the last probe also brings the next one to within minProbeEvery
// rounds: the ceiling keeps a falling limit from taking congested
// references, so a fall is the server's congestion or jobs that got
// dearer, and only a probe tells the second apart (their references are
// taken again, at the dearer time, and the limit comes back).

// A probe sets the limit to probeDepth of itself: below the true capacity
// C from any limit under 2·C, so its jobs take their uncongested time;
// from a limit higher still they run at a load the references were not
// taken under, faster than them, and the next probe comes soon and starts
// lower. The first probe comes minProbeEvery rounds after New; a fall of
// the limit below fellBy of where it was at the last probe brings the next
// one to within minProbeEvery rounds.
const (
	probeDepth    = 0.5
	minProbeEvery = 5
	fellBy        = 0.8
)

// startProbeLocked halves the limit for the round of jobs admitted under
// it.
func (s *Scheduler) startProbeLocked(now int64) {
	a := s.adaptive
	a.sinceProbe, a.probing, a.saved, a.mark = 0, true, a.limit, a.limit
	a.probeSum, a.probeN = 0, 0
	s.setLimitLocked(a.limit*probeDepth, CapacityProbe, now)
	a.probeLeft = s.cfg.Capacity
}

// probeSampleLocked counts a sample of inflation x, admitted at load, into
// the running probe, and ends the probe after a round of samples admitted
// under its limit: the limit is restored, and the probe's verdict on the
// references sets when the next one comes.
func (s *Scheduler) probeSampleLocked(load int32, x float64, now int64) {
	a := s.adaptive
	if load > int32(s.cfg.Capacity) { // admitted before the probe lowered the limit
		return
	}
	a.probeLeft--
	a.probeSum += x
	a.probeN++
	if a.probeLeft > 0 {
		return
	}
	a.probing = false
	if a.probeSum/float64(a.probeN) < 1/a.cfg.Tolerance {
		a.probeEvery = minProbeEvery // congested references: probe again soon
	} else {
		a.probeEvery = float64(a.cfg.ProbeInterval)
	}
	s.setLimitLocked(a.saved, CapacityProbe, now)
}
