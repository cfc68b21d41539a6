package admission

// The flows of a key (see "Data structures" in the package doc): one per
// (fairness key, job type, base priority) with queued work, made when its
// first job comes and recycled when its last one goes. Every change to a
// flow or its key ends in syncFlowLocked, which puts the flow where its
// state says it belongs; flowheap.go is the order of flows in a type's
// heap.

// keyChangedLocked re-sorts k's flows after its virtual time, MinSeats status
// or cap changed. Call it right after the change, before any other heap
// operation: k's flows sit in several type heaps, and a heap whose element's
// key changed without a Fix is only a heap again once that Fix is done.
//
// It walks k.flows backwards because a sync may recycle an emptied flow,
// which moves the last flow into its place: that one was already synced.
func (s *Scheduler) keyChangedLocked(k *keyState, now int64) {
	for i := len(k.flows) - 1; i >= 0; i-- {
		s.syncFlowLocked(k.flows[i], now)
	}
}

// syncFlowLocked puts f where its state says it belongs: in its type's heap
// (ranked at now) iff it has a ready job and its key is not capped, in the
// promotion heap iff its head's rank will change, and recycled when it holds
// no job at all. Every change to a flow or its key ends here.
func (s *Scheduler) syncFlowLocked(f *flow, now int64) {
	t := f.typ
	if f.jobs.Len() == 0 || f.key.held() {
		if f.typIdx != -1 {
			t.flows.Remove(f)
			if t.flows.Len() == 0 {
				s.unreadyLocked(t)
			}
		}
		if f.promoIdx != -1 {
			s.promos.Remove(f)
		}
		if f.jobs.Len() == 0 && f.parked == 0 {
			s.freeFlowLocked(f)
		}
		return
	}
	r := s.headRankLocked(f, now)
	f.eff, f.urgent, f.promoAt = r.eff, r.urgent, r.next
	if f.typIdx != -1 {
		t.flows.Fix(f)
	} else {
		t.flows.Push(f)
		if t.readyIdx < 0 {
			t.readyIdx = len(s.ready)
			s.ready = append(s.ready, t)
		}
	}
	switch {
	case f.promoAt == 0 && f.promoIdx != -1:
		s.promos.Remove(f)
	case f.promoAt == 0:
	case f.promoIdx != -1:
		s.promos.Fix(f)
	default:
		s.promos.Push(f)
	}
}

// unreadyLocked takes t, whose last ready flow just left its heap, out of
// the types dispatch looks at (Scheduler.ready).
func (s *Scheduler) unreadyLocked(t *typeState) {
	i, last := t.readyIdx, len(s.ready)-1
	s.ready[i] = s.ready[last]
	s.ready[i].readyIdx = i
	s.ready[last] = nil
	s.ready = s.ready[:last]
	t.readyIdx = -1
}

// newFlowLocked returns a flow of k's jobs of type t at base priority prio,
// taken from the free list, empty and in no heap yet (syncFlowLocked puts it
// where it belongs once it holds a job).
func (s *Scheduler) newFlowLocked(k *keyState, t *typeState, prio Priority) *flow {
	f := s.freeFlows.Get()
	f.key, f.typ, f.prio, f.typIdx, f.promoIdx = k, t, prio, -1, -1
	k.flows = append(k.flows, f)
	return f
}

// freeFlowLocked takes f, which holds no job (queued or parked on a
// resource) and is in no heap, off its key's flows and back to the free
// list.
func (s *Scheduler) freeFlowLocked(f *flow) {
	k := f.key
	for i, g := range k.flows {
		if g == f {
			last := len(k.flows) - 1
			k.flows[i] = k.flows[last]
			k.flows[last] = nil
			k.flows = k.flows[:last]
			break
		}
	}
	f.key, f.typ = nil, nil
	f.jobs.Reset()
	s.freeFlows.Put(f)
}
