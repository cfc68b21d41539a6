package admission

// Conflicts: the resource table.
//
// A job with a conflict group uses the resource (group, job ID). Exclusive
// jobs run alone on it; Shared jobs run together, never with an exclusive
// one. A job the resource does not admit is parked on it, holding no seat.
// No overtaking: an exclusive job that was parked (it found shared or
// exclusive holders) is counted in xwait until it starts or leaves, and
// while it waits no shared job that it precedes in the dispatch order starts
// on the resource, so a stream of overlapping readers cannot starve it; the
// readers drain and it runs. Shared jobs ahead of it in the order (a light
// caller's fetch ahead of a heavy caller's clone backlog) still go: the
// exclusive job waits its turn, but nobody behind it goes first. A paused
// exclusive job does not count: pausing repacks must not stop fetches.

// admitsLocked reports whether j, the head of its flow, may start on r now.
func (s *Scheduler) admitsLocked(r *resource, j *job, now int64) bool {
	switch {
	case j.typ.cfg.Access == Exclusive:
		return r.holders == 0
	case r.excl > 0:
		return false
	case r.xwait == 0:
		return true
	}
	// Shared j while exclusive jobs wait: it may go unless one of them, as
	// the best parked job of its flow, comes before j in the dispatch order.
	jk := flowSortKey(j.flow)
	for f, h := range r.waiters {
		e := h.Top()
		if f.typ.cfg.Access != Exclusive || !e.xwaiting {
			continue
		}
		rk := s.rankLocked(e, now)
		ek := sortKey{v: f.key.v, headAt: e.agingAt, headSeq: e.seq, eff: rk.eff, urgent: rk.urgent, belowMin: f.key.belowMin()}
		if lessKey(&ek, &jk) {
			return false
		}
	}
	return true
}

// open reports whether r admits a job of access a now.
func (r *resource) open(a Access) bool {
	if a == Exclusive {
		return r.holders == 0
	}
	return r.excl == 0 && r.xwait == 0
}

// idle reports whether nobody holds, waits on or wants r.
func (r *resource) idle() bool { return r.holders == 0 && r.nwait == 0 && r.xwait == 0 }

// parkLocked moves the head of its flow onto the resource that blocks it.
func (s *Scheduler) parkLocked(j *job, r *resource, now int64) {
	f := j.flow
	f.jobs.Remove(j)
	h := r.waiters[f]
	if h == nil {
		if r.waiters == nil {
			r.waiters = make(map[*flow]*jobQueue)
		}
		h = s.freeWaiters.Get()
		r.waiters[f] = h
	}
	h.Push(j)
	j.state = jobParked
	f.parked++
	r.nwait++
	if j.typ.cfg.Access == Exclusive && !j.xwaiting {
		j.xwaiting = true
		r.xwait++
	}
	s.syncFlowLocked(f, now)
}

// releaseResourceLocked drops j's hold on its resource. When that opens the
// resource to waiters, the best parked job of each waiting flow returns to
// its flow: those are the only candidates among its waiters, since a flow's
// jobs go in the flow's order. The others stay parked.
func (s *Scheduler) releaseResourceLocked(j *job, now int64) {
	r := j.res
	j.res = nil
	r.holders--
	if j.typ.cfg.Access == Exclusive {
		r.excl--
	}
	if r.holders == 0 {
		s.unparkLocked(r, now)
	}
	s.maybeFreeResourceLocked(r)
}

// stopWaitingLocked notes that j, queued on r, leaves the queue or freezes:
// if it was an exclusive job holding shared ones back, they may go. It
// reports whether r changed.
func (s *Scheduler) stopWaitingLocked(j *job, r *resource, now int64) bool {
	if !j.xwaiting {
		return false
	}
	j.xwaiting = false
	r.xwait--
	if r.xwait == 0 && r.excl == 0 {
		s.unparkLocked(r, now)
	}
	return true
}

// unparkLocked returns the best parked job of every waiting flow that r now
// admits to that flow.
func (s *Scheduler) unparkLocked(r *resource, now int64) {
	if r.nwait == 0 {
		return // (ranging over an empty map is not free)
	}
	for f, h := range r.waiters {
		if !r.open(f.typ.cfg.Access) {
			continue
		}
		j := h.Pop()
		r.nwait--
		f.parked--
		if h.Len() == 0 {
			delete(r.waiters, f)
			s.freeWaitersLocked(h)
		}
		j.state = jobQueued
		f.jobs.Push(j)
		s.syncFlowLocked(f, now)
	}
}

// replaceRepresentativeLocked keeps the rule that lets an open resource have
// parked jobs: when it opens, only the best parked job of each waiting flow
// returns to its flow. If that job now leaves without running, the next one
// of its flow returns in its place; otherwise it would wait on a resource
// that admits it, and nothing would ever wake it. It reports whether r
// changed.
func (s *Scheduler) replaceRepresentativeLocked(j *job, r *resource) bool {
	f := j.flow
	h := r.waiters[f]
	if h == nil || !r.open(j.typ.cfg.Access) {
		return false
	}
	next := h.Pop()
	r.nwait--
	if h.Len() == 0 {
		delete(r.waiters, f)
		s.freeWaitersLocked(h)
	}
	next.state = jobQueued
	f.parked--
	f.jobs.Push(next)
	return true
}

// maxIdleResources bounds the conflict-table entries kept with no holder
// and no waiter.
const maxIdleResources = 4096

// maybeFreeResourceLocked notes that r may have become idle; call it once
// after each change that may have made a busy entry idle.
// An idle entry stays in the table, so the next job on the same resource
// (the common case: popular repositories) costs no map insert and delete;
// once more than maxIdleResources entries are idle, all of them are deleted
// in one sweep, so the table's size stays bounded and the sweep costs O(1)
// per job amortized.
func (s *Scheduler) maybeFreeResourceLocked(r *resource) {
	if !r.idle() {
		return
	}
	s.idleRes++
	if s.idleRes <= maxIdleResources {
		return
	}
	for _, tbl := range s.resources {
		for id, r := range tbl {
			if r.idle() {
				delete(tbl, id)
				s.freeRes.Put(r)
			}
		}
	}
	s.idleRes = 0
}

// freeWaitersLocked recycles an emptied waiter queue.
func (s *Scheduler) freeWaitersLocked(h *jobQueue) {
	h.Reset()
	s.freeWaiters.Put(h)
}
