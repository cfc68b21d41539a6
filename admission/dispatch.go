package admission

import (
	"context"
	"math"
	"time"
)

// dispatchLocked admits as many queued jobs as fit, in dispatch order, and
// appends each admitted job to wake. It first re-ranks the flows whose head
// was promoted since the last dispatch, so every comparison uses the
// effective priority at now.
func (s *Scheduler) dispatchLocked(now int64, wake []*job) []*job {
	if s.queued == 0 {
		// Nothing to admit, no flow to re-rank, and the pressure gate is
		// sampled again when work arrives (enqueueLocked) and re-armed
		// only while work is queued.
		return wake
	}
	for s.promos.Len() > 0 && s.promos.Top().promoAt <= now {
		s.syncFlowLocked(s.promos.Top(), now)
	}
	s.refreshPressureLocked(now)
	for s.inUse < s.cfg.Capacity {
		f, j := s.pickLocked()
		if f == nil {
			break
		}
		if s.adaptive != nil && s.shedQueuedLocked(j, now) {
			j.err = s.rejectLocked(ErrOverloaded, false, j.typ, j.key, now)
			s.counters.RejectedOverload++
			s.emitRejectedLocked(j, j.typ, j.key.name, ErrOverloaded, false, now)
			s.unqueueLocked(j, now)
			wake = append(wake, j)
			continue
		}
		r := s.resourceLocked(j)
		if r != nil && !s.admitsLocked(r, j, now) {
			// Conflict: the job waits on the resource, holding no seat, and
			// the next best job is considered (no head-of-line blocking).
			s.parkLocked(j, r, now)
			continue
		}
		s.admitLocked(f, j, r, now)
		wake = append(wake, j)
	}
	if s.pressure != nil {
		s.armPressureLocked()
	}
	return wake
}

// pickLocked returns the flow whose head goes next and that head (read
// from the flow's sort key: see sortKey), or nils. Types at their cap, and
// non-urgent work of tiers at their cap, are skipped whole; each type's
// heap top is its best flow, so this is one comparison per type.
func (s *Scheduler) pickLocked() (*flow, *job) {
	var best *flow
	var bestKey *sortKey
	for _, t := range s.ready {
		if t.blocked() {
			continue
		}
		k := t.flows.TopKey()
		// Urgent jobs may exceed their tier cap; a type's top flow is urgent
		// whenever any of its flows is, because urgency sorts first.
		if !k.urgent && t.tier.running >= t.tier.cap || s.pressureHolds(k.eff) {
			continue
		}
		if best == nil || lessKey(k, bestKey) {
			best, bestKey = t.flows.Top(), k
		}
	}
	if best == nil {
		return nil, nil
	}
	return best, bestKey.head
}

// resourceLocked returns the conflict-table entry of j's resource, or nil
// when j has no conflict group or nobody holds or waits on its resource.
func (s *Scheduler) resourceLocked(j *job) *resource {
	if j.typ.res == nil {
		return nil
	}
	return j.typ.res[j.jobID]
}

// enqueueLocked puts a new job in its flow, applying the queue bounds. It
// returns the job's rejection, if any, and appends a pushed-out job to wake.
func (s *Scheduler) enqueueLocked(j *job, t *typeState, key string, now int64, wake []*job) ([]*job, error) {
	s.counters.Submitted++
	if s.closing {
		s.counters.RejectedClosed++
		s.emitRejectedLocked(j, t, key, ErrClosed, false, now)
		return wake, &RejectedError{Reason: ErrClosed, Type: t.name}
	}
	k := s.keyLocked(key)
	queuedByKey, p := 0, (*KeyPolicy)(nil)
	if k != nil {
		queuedByKey, p = k.queued, k.policy
	} else {
		p = s.policyFor(key)
	}
	if p.MaxQueued > 0 && queuedByKey >= p.MaxQueued {
		s.counters.RejectedQueueFull++
		s.emitRejectedLocked(j, t, key, ErrQueueFull, true, now)
		return wake, s.rejectLocked(ErrQueueFull, true, t, k, now)
	}
	if j.foreground && s.shedsLocked(k, now) {
		s.counters.RejectedOverload++
		s.emitRejectedLocked(j, t, key, ErrOverloaded, false, now)
		return wake, s.rejectLocked(ErrOverloaded, false, t, k, now)
	}
	pushedOut := false
	if s.queued >= s.cfg.MaxQueue {
		// Fair push-out: the longest queue gives up its newest job to a key
		// with fewer queued; otherwise the arrival itself is turned away.
		long := s.lengths.Longest()
		if long.queued <= queuedByKey {
			s.counters.RejectedQueueFull++
			s.emitRejectedLocked(j, t, key, ErrQueueFull, true, now)
			return wake, s.rejectLocked(ErrQueueFull, true, t, k, now)
		}
		victim := long.tail
		s.unqueueLocked(victim, now)
		victim.err = s.rejectLocked(ErrQueueFull, true, victim.typ, long, now)
		s.counters.RejectedQueueFull++
		s.counters.PushedOut++
		s.emitJobEndLocked(EventShed, victim, victim.err, now)
		wake = append(wake, victim)
		pushedOut = true
	}

	if pushedOut {
		k = s.keyLocked(key) // the push-out may have changed what the LRU holds
	}
	if k == nil || !k.active {
		k = s.wakeKeyLocked(k, key, now)
	}
	s.seq++
	j.typ, j.key = t, k
	j.seq, j.enqueued = s.seq, now
	if !j.ownPrio {
		j.prio = t.cfg.Priority
	}
	if j.bg == nil || j.bg.attempts == 0 { // a retry's aging clock continues from its first submission
		j.agingAt = now
	}
	if s.queued == 0 {
		s.refreshPressureLocked(now)
		// Nothing else waits, so if j may start, it is the job dispatch would
		// pick: it takes its seat here without passing through the queue's
		// structures (the uncontended case). Its key has no flows to re-sort.
		if r := s.resourceLocked(j); s.mayStartLocked(j, r) {
			s.seatLocked(j, r, now)
			return append(wake, j), nil
		}
	}
	f := k.flowFor(t, j.prio)
	if f == nil {
		f = s.newFlowLocked(k, t, j.prio)
	}
	if t.paused || k.paused {
		j.frozenAt = now // its aging clock starts when the pause lifts
	}
	if t.smithA > 0 { // orders j in its flow (jobOrderKey); a job seated above never needs it
		est, _ := s.estimateLocked(t, j.jobID, now)
		j.invCost = 1 / max(est, 1e-6)
	}
	j.flow = f
	j.state = jobQueued
	f.jobs.Push(j)
	k.pushJob(j)
	s.queuedChangedLocked(k)
	s.queued++
	t.queued++
	t.tier.queued++
	if !j.foreground {
		s.bgQueued++
	}
	if f.typIdx == -1 || f.jobs.Top() == j {
		// A job that joins a flow already in its type's order behind its
		// head changes nothing that orders the flow (its head, its key's
		// virtual time and MinSeats status): the usual arrival skips the sync.
		s.syncFlowLocked(f, now)
	}
	return wake, nil
}

// unqueueLocked takes a queued or parked job out of the queue for good (it
// was cancelled, timed out, pushed out or dropped). The caller sets j.err.
func (s *Scheduler) unqueueLocked(j *job, now int64) {
	f, k := j.flow, j.key
	switch j.state {
	case jobQueued:
		f.jobs.Remove(j)
		if r := s.resourceLocked(j); r != nil {
			replaced := s.replaceRepresentativeLocked(j, r)
			if s.stopWaitingLocked(j, r, now) || replaced {
				s.maybeFreeResourceLocked(r)
			}
		}
	case jobParked:
		r := s.resourceLocked(j)
		h := r.waiters[f]
		h.Remove(j)
		if h.Len() == 0 {
			delete(r.waiters, f)
			s.freeWaitersLocked(h)
		}
		r.nwait--
		f.parked--
		s.stopWaitingLocked(j, r, now)
		s.maybeFreeResourceLocked(r)
	default:
		panic("admission: unqueue of a job that is not queued")
	}
	j.state = jobDone
	j.flow = nil
	if t := j.timer(); t != nil {
		t.Stop()
	}
	s.unpendLocked(j)
	k.unlinkJob(j)
	s.queuedChangedLocked(k)
	s.queued--
	j.typ.queued--
	j.typ.tier.queued--
	if !j.foreground {
		s.bgQueued--
		s.backgroundChangedLocked()
	}
	s.syncFlowLocked(f, now)
	s.maybeIdleLocked(k, now)
}

// admitLocked gives j, the head of flow f, a seat. r is its resource's
// entry if one exists (it admits j). The key and type are read from f,
// which dispatch has just read, not from j: with thousands of keys neither
// j nor its key is in the cache, and the key's lines then start on their
// way without waiting for j's (BenchmarkKeys/keys=10000: 3 to 7 % faster in
// three interleaved runs, benchmarks/ADMISSION.md, session 10).
func (s *Scheduler) admitLocked(f *flow, j *job, r *resource, now int64) {
	k, t := f.key, f.typ
	f.jobs.Remove(j)
	s.unpendLocked(j)
	k.unlinkJob(j)
	s.queuedChangedLocked(k)
	s.queued--
	t.queued--
	t.tier.queued--
	if !j.foreground {
		s.bgQueued--
	}
	s.seatLocked(j, r, now)
	if r != nil && t.cfg.Access == Shared {
		// The resource stays open to shared jobs: the next parked job of
		// j's flow is a candidate now, as j was. (It only enters f's job
		// heap; the type heaps are re-sorted just below.)
		s.replaceRepresentativeLocked(j, r)
	}
	j.flow = nil
	s.keyChangedLocked(k, now) // re-sorts f too: it is one of k's flows
}

// mayStartLocked reports whether j, a new arrival with resource entry r,
// satisfies every admission criterion of DESIGN §3 (a new job is never
// urgent: Priority is below Aging.Urgent).
func (s *Scheduler) mayStartLocked(j *job, r *resource) bool {
	t, k := j.typ, j.key
	return s.inUse < s.cfg.Capacity && !t.blocked() && t.tier.running < t.tier.cap &&
		!k.held() && (r == nil || r.open(j.typ.cfg.Access)) && !s.pressureHolds(j.prio)
}

// seatLocked gives j, which is in no queue structure, a seat: it charges its
// key the estimate, counts it and takes its resource. r is its resource's
// entry if one exists (it admits j).
func (s *Scheduler) seatLocked(j *job, r *resource, now int64) {
	k, t := j.key, j.typ
	// The job's rank is computed afresh: a flow whose rank can no longer
	// change (urgent, or at the ceiling) is not re-ranked as it keeps aging.
	rk := rankAt(t.aging, j.prio, j.agingAt, now)
	j.eff, j.urgent, j.promoted = rk.eff, rk.urgent, rk.promoted
	j.state = jobRunning
	j.started = now
	j.est, j.cost = s.estimateLocked(t, j.jobID, now)
	j.startTag = k.v
	k.v += j.est / k.w
	s.running.Push(j)
	s.advanceVsysLocked()
	s.inUse++
	j.load = int32(s.inUse)
	j.probed = s.adaptive != nil && s.adaptive.probing
	t.running++
	t.tier.running++
	k.running++
	if t.res != nil {
		switch {
		case r == nil:
			r = s.freeRes.Get()
			t.res[j.jobID] = r
		case r.idle():
			s.idleRes-- // an idle entry is in use again
		}
		if j.xwaiting {
			j.xwaiting = false
			r.xwait--
		}
		r.holders++
		if t.cfg.Access == Exclusive {
			r.excl++
		}
		j.res = r
	}
	if !j.foreground {
		s.wg.Add(1) // before Close can Wait: Close waits until bgRunning is 0
		s.bgRunning++
		if t := j.timer(); t != nil {
			t.Stop()
		}
	}
	s.counters.Admitted++
	s.counters.AgingPromotions += uint64(j.promoted)
	if j.urgent {
		s.counters.UrgentAdmissions++
	}
	if a := s.adaptive; a != nil && a.cfg.QueueDelayTarget > 0 && j.foreground {
		s.admittedAfterLocked(k, sinceNs(now, j.enqueued), now)
	}
	s.emitAdmittedLocked(j, now)
	if p := k.policy.MaxInFlight; p > 0 && k.running >= p {
		k.capped = true
	}
}

// finishLocked ends a running job. observed is the seat time to charge; learn
// says whether to feed it to the cost EMA (false when a seat granted to a
// waiter that gave up is handed back: the key is refunded in full).
func (s *Scheduler) finishLocked(j *job, now int64, observed time.Duration, learn bool) {
	k, t := j.key, j.typ
	j.state = jobDone
	s.running.Remove(j.idx)
	s.advanceVsysLocked()
	s.inUse--
	t.running--
	t.tier.running--
	k.running--
	obs := observed.Seconds()
	k.v += (obs - j.est) / k.w
	if learn {
		if s.adaptive != nil {
			lobs := math.Log(obs) // the controller's averages are kept in log (inflation.go)
			takeRef := s.sampleLocked(j, lobs, now)
			if e := s.learnLocked(j, obs, now); takeRef {
				e.updateRef(lobs, j.load, s.cfg.CostAlpha, s.adaptive.epoch)
			}
		} else {
			s.learnLocked(j, obs, now)
		}
		s.counters.Completed++
	}
	if k.capped && k.running < k.policy.MaxInFlight {
		k.capped = false
	}
	// k's virtual time and MinSeats status changed: its flows must be back in
	// order before anything else (the resource release below) pushes or
	// fixes flows in the same type heaps, or those heap operations would sift
	// against stale positions and break the heap.
	s.keyChangedLocked(k, now)
	if j.res != nil {
		s.releaseResourceLocked(j, now)
	}
	if !j.foreground {
		s.bgRunning--
		s.backgroundChangedLocked()
	}
	s.maybeIdleLocked(k, now)
}

// advanceVsysLocked keeps V_sys = max(V_sys, min start tag of running jobs).
func (s *Scheduler) advanceVsysLocked() {
	if s.running.Len() > 0 && s.running.Top().startTag > s.vsys {
		s.vsys = s.running.Top().startTag
	}
}

// queuedChangedLocked records k's new queued count for push-out.
func (s *Scheduler) queuedChangedLocked(k *keyState) { s.lengths.Set(&k.byLen, k, k.queued) }

// backgroundChangedLocked signals Close when the last background job is gone.
func (s *Scheduler) backgroundChangedLocked() {
	if s.closing && s.bgQueued == 0 && s.bgRunning == 0 && s.bgIdle != nil {
		close(s.bgIdle)
		s.bgIdle = nil
	}
}

// rejectLocked builds a rejection with a retry hint: when the first running
// job is expected to end, plus the caller's own queued work drained at the
// mean running cost over all seats. (ErrClosed rejections, at Close and
// after it, carry no hint: a closing server has no seat to offer.)
func (s *Scheduler) rejectLocked(reason error, perKey bool, t *typeState, k *keyState, now int64) *RejectedError {
	e := &RejectedError{Reason: reason, PerKey: perKey, Type: t.name}
	first, mean := s.runningTimesLocked(t, now)
	backlog := 0.0
	if k != nil {
		backlog = float64(k.queued) * mean / float64(s.cfg.Capacity)
	}
	e.RetryAfter = time.Duration((first + backlog) * float64(time.Second))
	if e.RetryAfter < time.Millisecond {
		e.RetryAfter = time.Millisecond
	}
	return e
}

// checkDeadlineLocked turns away j, just queued, if ctx's deadline ends
// before the earliest time j could start. That time is a lower bound, so a
// request is never turned away that could have made it: the first running
// job's expected end, plus the work certainly ahead of j (older jobs of its
// own flow and everything queued in higher tiers) spread over all seats at
// the mean cost of the running jobs.
func (s *Scheduler) checkDeadlineLocked(ctx context.Context, j *job, now int64) error {
	deadline, ok := ctx.Deadline()
	if !ok {
		return nil
	}
	ahead := j.flow.jobs.Len() - 1 + int(j.flow.parked)
	for _, t := range s.tiers {
		if t.prio > j.prio {
			ahead += t.queued
		}
	}
	first, mean := s.runningTimesLocked(j.typ, now)
	start := first + float64(ahead)*mean/float64(s.cfg.Capacity)
	wait := time.Duration(start * float64(time.Second))
	if !s.timeAt(now).Add(wait).After(deadline) {
		return nil
	}
	s.unqueueLocked(j, now)
	s.counters.RejectedDeadline++
	j.err = &RejectedError{Reason: ErrDeadlineTooSoon, PerKey: false, Type: j.typ.name, RetryAfter: max(wait, time.Millisecond)}
	return j.err
}

// runningTimesLocked returns when the first running job is expected to end
// (seconds from now; 0 when a seat is free) and the mean estimate of the
// running jobs (t's DefaultCost when none runs).
func (s *Scheduler) runningTimesLocked(t *typeState, now int64) (first, mean float64) {
	first, sum := -1.0, 0.0
	for r := range s.running.All() {
		rem := max(r.est-sinceNs(now, r.started).Seconds(), 0)
		if first < 0 || rem < first {
			first = rem
		}
		sum += r.est
	}
	if first < 0 || s.inUse < s.cfg.Capacity {
		first = 0
	}
	mean = t.cfg.DefaultCost.Seconds()
	if n := s.running.Len(); n > 0 {
		mean = sum / float64(n)
	}
	return first, mean
}
