package admission

import "time"

// NoStarvationBound is what StarvationBound returns when no bound holds:
// aging is off, Urgent is 0, or the type is unknown.
const NoStarvationBound time.Duration = -1

// rank is a queued job's place in the priority order at one instant.
type rank struct {
	eff      Priority // effective priority
	urgent   bool     // aged >= Urgent
	promoted int      // promotions so far
	next     int64    // next instant the rank changes, Unix nanoseconds; 0 = never
}

// rankAt computes the rank at now of a job of base priority base whose aging
// clock started at start (see the package doc for the formulas). Instants
// are Unix nanoseconds of the scheduler's clock readings (Scheduler.now),
// which it derives from the monotonic clock, so differences are exact.
func rankAt(a *AgingConfig, base Priority, start, now int64) rank {
	if a == nil {
		return rank{eff: base}
	}
	p := 0
	if wait := time.Duration(now - start); wait >= a.Grace {
		p = int((wait - a.Grace) / a.Interval)
	}
	aged := base + a.Step*Priority(p)
	r := rank{eff: aged, promoted: p}
	if a.Max > 0 && aged >= a.Max {
		// The ceiling bounds promotions; it never lowers a job below its base
		// priority (DESIGN's min(aged, Max) would demote a type above Max).
		r.eff = max(a.Max, base)
	}
	if a.Urgent > 0 && aged >= a.Urgent {
		r.urgent = true
		return r // urgent jobs are ordered by age alone: no further change
	}
	switch {
	case a.Max > 0 && aged >= a.Max && a.Urgent == 0:
		// capped and never urgent: the rank is final
	case a.Max > 0 && aged >= a.Max:
		// capped: the next change is urgency
		r.next = start + int64(a.Grace+time.Duration(promotionsTo(a, base, a.Urgent))*a.Interval)
	default:
		r.next = start + int64(a.Grace+time.Duration(p+1)*a.Interval)
	}
	return r
}

// rankLocked is j's rank at now. A frozen job (its type or key is paused)
// is ranked at the instant it froze, and its rank does not change until it
// thaws: its aging clock stands still.
func (s *Scheduler) rankLocked(j *job, now int64) rank {
	if j.frozenAt != 0 {
		r := rankAt(j.typ.aging, j.prio, j.agingAt, j.frozenAt)
		r.next = 0
		return r
	}
	return rankAt(j.typ.aging, j.prio, j.agingAt, now)
}

// headRankLocked is the rank at now of f's best job. It is computed from
// the flow whenever it can be: a flow's jobs share their type and base
// priority, headAgingAt reads the head's aging start from its order key,
// and a queued job is frozen exactly while its type or key is paused. So
// ranking a flow reads no job record, except the head of a paused one
// (and of a ShortestFirst one, in headAgingAt).
func (s *Scheduler) headRankLocked(f *flow, now int64) rank {
	a := f.typ.aging
	switch {
	case a == nil:
		return rank{eff: f.prio}
	case f.typ.paused || f.key.paused:
		return s.rankLocked(f.jobs.Top(), now)
	}
	return rankAt(a, f.prio, f.headAgingAt(), now)
}

// promotionsTo is n = ceil((target - base)/Step), the promotions a job of
// base priority base needs to reach target.
func promotionsTo(a *AgingConfig, base, target Priority) int {
	d := int(target - base)
	if d <= 0 {
		return 0
	}
	step := int(a.Step)
	return (d + step - 1) / step
}

// StarvationBound is the longest a queued job of type t can wait before it
// becomes urgent: Grace + n·Interval with n = ceil((Urgent-base)/Step). From
// then on it precedes every non-urgent job and is admitted at the first seat
// that opens for which no conflict, type cap, key cap or pause holds it back
// (after any older urgent job). It returns NoStarvationBound when aging is
// off, Urgent is 0, or t is not registered.
func (s *Scheduler) StarvationBound(t JobType) time.Duration {
	s.mu.Lock()
	ts, ok := s.types[t]
	s.mu.Unlock()
	if !ok || ts.aging == nil || ts.aging.Urgent == 0 {
		return NoStarvationBound
	}
	a := ts.aging
	return a.Grace + time.Duration(promotionsTo(a, ts.cfg.Priority, a.Urgent))*a.Interval
}
