package admission

import (
	"fmt"
	"iter"
	"math"
	"testing"

	"github.com/fairseat/fairseat/internal/lengths"
)

// resKey names a conflict-table entry in the checks: its group and job ID.
type resKey struct {
	group ConflictGroup
	id    string
}

// allResourcesLocked yields every conflict-table entry of every group.
func (s *Scheduler) allResourcesLocked() iter.Seq2[resKey, *resource] {
	return func(yield func(resKey, *resource) bool) {
		for g, tbl := range s.resources {
			for id, r := range tbl {
				if !yield(resKey{g, id}, r) {
					return
				}
			}
		}
	}
}

// checkInvariants locks s and verifies every structural invariant written on
// the fields of Scheduler, flow, keyState, typeState and resource.
func checkInvariants(t testing.TB, s *Scheduler) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkInvariantsLocked(); err != nil {
		t.Fatalf("invariant broken: %v\n%s", err, s.dumpLocked())
	}
}

func (s *Scheduler) checkInvariantsLocked() error {
	if err := s.checkObserverLocked(); err != nil {
		return err
	}
	if err := s.running.Verify(); err != nil {
		return fmt.Errorf("running: %v", err)
	}
	if err := s.promos.Verify(); err != nil {
		return fmt.Errorf("promotions: %v", err)
	}
	if err := s.lengths.Verify(func(k *keyState) *lengths.Handle { return &k.byLen }); err != nil {
		return fmt.Errorf("queue lengths: %v", err)
	}
	if err := s.checkFrontsLocked(); err != nil {
		return err
	}
	if err := s.checkCostStoreLocked(); err != nil {
		return err
	}
	if s.inUse != s.running.Len() || (s.inUse > s.cfg.Capacity && !s.overSeated && (s.adaptive == nil || !s.adaptive.lowered)) {
		return fmt.Errorf("inUse %d, running %d, capacity %d", s.inUse, s.running.Len(), s.cfg.Capacity)
	}
	if a := s.adaptive; a != nil {
		if a.limit < float64(a.cfg.Min) || a.limit > float64(a.cfg.Max) || s.cfg.Capacity != a.seatsOf(a.limit) || a.histN > CapacityHistory {
			return fmt.Errorf("adaptive: limit %v in [%d, %d], capacity %d, %d changes kept", a.limit, a.cfg.Min, a.cfg.Max, s.cfg.Capacity, a.histN)
		}
		if a.high > a.peak || a.limit > a.peak {
			return fmt.Errorf("adaptive: limit %v, highest %v, highest at the last probe %v", a.limit, a.peak, a.high)
		}
		if a.cut && a.probeEvery != minProbeEvery {
			return fmt.Errorf("adaptive: a probe's cut holds the limit, but the next probe comes %v rounds after it, not %d", a.probeEvery, minProbeEvery)
		}
		for _, v := range [...]struct {
			name  string
			value float64
			least float64 // the value is at least this
		}{
			{"limit", a.limit, float64(a.cfg.Min)}, {"logShort", a.logShort, -math.MaxFloat64}, {"load", a.load, 0}, {"logBase", a.logBase, -math.MaxFloat64},
			{"noise", a.noise, 0}, {"calm", a.calm, 0}, {"faster", a.faster, 0}, {"logAll", a.logAll, -math.MaxFloat64}, {"sinceProbe", a.sinceProbe, 0}, {"mark", a.mark, 0},
			{"anchor", a.anchor, 0}, {"saved", a.saved, 0}, {"probeLog", a.probeLog, -math.MaxFloat64}, {"floor", a.floor, 0},
			{"atLimit", a.atLimit, -math.MaxFloat64},
		} {
			if !(v.value >= v.least) || math.IsInf(v.value, 0) {
				return fmt.Errorf("adaptive: %s = %v, want a finite value of at least %v", v.name, v.value, v.least)
			}
		}
		kept := a.keptChanges()
		for i, c := range kept {
			prev := capacityChange{now: c.previous} // the first kept change follows on from what went before
			if i > 0 {
				prev = kept[i-1]
			}
			if c.previous != prev.now || c.previous == c.now || i == len(kept)-1 && c.now != s.cfg.Capacity {
				return fmt.Errorf("adaptive: kept change %d of %d, %+v, does not follow on from %+v (capacity %d)", i, len(kept), c, prev, s.cfg.Capacity)
			}
		}
		if a.probeEvery != minProbeEvery && a.probeEvery != float64(a.cfg.ProbeInterval) || a.probeN < 0 {
			return fmt.Errorf("adaptive: probe every %v rounds (want %d or %d), %d samples",
				a.probeEvery, minProbeEvery, a.cfg.ProbeInterval, a.probeN)
		}
		// A reference and a last sample are logs of seat times, finite
		// where a load says there is one (costEntry).
		broken := func(load int32, l float64) bool { return load < 0 || math.IsNaN(l) || load > 0 && math.IsInf(l, 0) }
		for _, e := range s.costs.Values() {
			if broken(e.refLoad, e.logRef) || broken(e.lastLoad, e.logLast) {
				return fmt.Errorf("adaptive: cost entry %v: reference e^%v s at load %d, last sample e^%v s at load %d", e.key, e.logRef, e.refLoad, e.logLast, e.lastLoad)
			}
		}
	}
	typeRun := map[*typeState]int{}
	typeQ := map[*typeState]int{}
	tierRun := map[*tierState]int{}
	tierUrgent := map[*tierState]int{}
	keyRun := map[*keyState]int{}
	resRun := map[resKey]int{}
	resExcl := map[resKey]int{}
	resXwait := map[resKey]int{}
	bgRun := 0
	for j := range s.running.All() {
		if j.state != jobRunning {
			return fmt.Errorf("job %d in running heap has state %d", j.seq, j.state)
		}
		typeRun[j.typ]++
		tierRun[j.typ.tier]++
		if j.urgent {
			tierUrgent[j.typ.tier]++
		}
		keyRun[j.key]++
		if g := j.typ.cfg.ConflictGroup; g != "" {
			rk := resKey{g, j.jobID}
			resRun[rk]++
			if j.typ.cfg.Access == Exclusive {
				resExcl[rk]++
			}
			if resExcl[rk] > 0 && resRun[rk] > 1 && !s.overSeated {
				return fmt.Errorf("an exclusive job runs with another on %v", rk)
			}
		}
		if !j.foreground {
			bgRun++
		}
	}
	if bgRun != s.bgRunning {
		return fmt.Errorf("bgRunning %d, counted %d", s.bgRunning, bgRun)
	}
	for i, t := range s.ready {
		if t.readyIdx != i || t.flows.Len() == 0 {
			return fmt.Errorf("ready[%d] = %q has readyIdx %d and %d flows", i, t.name, t.readyIdx, t.flows.Len())
		}
	}
	for _, t := range s.types {
		if (t.readyIdx >= 0) != (t.flows.Len() > 0) {
			return fmt.Errorf("type %q: readyIdx %d with %d flows", t.name, t.readyIdx, t.flows.Len())
		}
		if err := t.flows.Verify(); err != nil {
			return fmt.Errorf("type %q: flows: %v", t.name, err)
		}
		for f := range t.flows.All() {
			if f.typ != t || f.jobs.Len() == 0 || f.key.held() || f.key.flowFor(t, f.prio) != f {
				return fmt.Errorf("type %q holds a flow it should not (key %q, %d jobs, capped %v)", t.name, f.key.name, f.jobs.Len(), f.key.capped)
			}
			if h, k := f.jobs.Top(), flowSortKey(f); k.v != f.key.v || k.belowMin != f.key.belowMin() || k.headAt != h.agingAt ||
				k.headSeq != h.seq || k.urgent != f.urgent || k.eff != f.eff {
				return fmt.Errorf("flow (%q, %q): sort key in the heap %+v is stale", f.key.name, t.name, k)
			}
			if (f.promoIdx != -1) != (f.promoAt != 0) {
				return fmt.Errorf("flow (%q, %q): promoIdx %d, promoAt %v", f.key.name, t.name, f.promoIdx, f.promoAt)
			}
		}
		if typeRun[t] != t.running {
			return fmt.Errorf("type %q: running %d, counted %d", t.name, t.running, typeRun[t])
		}
		if c := t.limit; c > 0 && t.running > c && !s.overSeated {
			return fmt.Errorf("type %q: %d running above its limit %d", t.name, t.running, c)
		}
	}
	for f := range s.promos.All() {
		if f.typIdx == -1 {
			return fmt.Errorf("flow (%q, %q) in promotion heap but not in its type heap", f.key.name, f.typ.name)
		}
	}
	for _, tr := range s.tiers {
		if tierRun[tr] != tr.running {
			return fmt.Errorf("tier %d: running %d, counted %d", tr.prio, tr.running, tierRun[tr])
		}
		// Only urgent jobs may exceed the tier cap, and only by themselves.
		if tr.running-tierUrgent[tr] > tr.cap && !s.overSeated {
			return fmt.Errorf("tier %d: %d running (%d urgent) above cap %d", tr.prio, tr.running, tierUrgent[tr], tr.cap)
		}
	}
	queued, bgQueued := 0, 0
	tierQ := map[*tierState]int{}
	for _, k := range s.activeKeysLocked() {
		name := k.name
		if !k.active || k.queued+k.running == 0 {
			return fmt.Errorf("active key %q: active %v, queued %d, running %d", name, k.active, k.queued, k.running)
		}
		if s.keys.get(name) != k {
			return fmt.Errorf("active key %q is not tracked", name)
		}
		if keyRun[k] != k.running {
			return fmt.Errorf("key %q: running %d, counted %d", name, k.running, keyRun[k])
		}
		if m := k.policy.MaxInFlight; m > 0 && k.running > m && !s.overSeated {
			return fmt.Errorf("key %q: %d running above MaxInFlight %d", name, k.running, m)
		}
		if want := s.obs.isConfigured(name); k.configured != want {
			return fmt.Errorf("key %q: configured %v, want %v (Config.Keys)", name, k.configured, want)
		}
		if want := k.policy.MaxInFlight > 0 && k.running >= k.policy.MaxInFlight; k.capped != want {
			return fmt.Errorf("key %q: capped %v, want %v", name, k.capped, want)
		}
		if err := s.lengths.VerifyHandle(&k.byLen, k); err != nil {
			return fmt.Errorf("key %q: %v", name, err)
		}
		if k.byLen.Count() != k.queued {
			return fmt.Errorf("key %q: queue lengths record %d queued, has %d", name, k.byLen.Count(), k.queued)
		}
		n := 0
		perFlow := map[*flow]int{}
		var last *job
		for j := k.head; j != nil; last, j = j, j.next {
			n++
			if j != k.head && j.prev != last {
				return fmt.Errorf("key %q: job %d's prev is not the job before it", name, j.seq)
			}
			if j.key != k || (j.state != jobQueued && j.state != jobParked) {
				return fmt.Errorf("key %q lists job %d with key %q state %d", name, j.seq, j.key.name, j.state)
			}
			if j.flow == nil || j.flow.key != k || j.flow.typ != j.typ {
				return fmt.Errorf("key %q lists job %d whose flow is not its key's and type's", name, j.seq)
			}
			perFlow[j.flow]++
			if frozen := j.typ.paused || k.paused; frozen == (j.frozenAt == 0) {
				return fmt.Errorf("job %d: frozen at %v, type paused %v, key paused %v", j.seq, j.frozenAt, j.typ.paused, k.paused)
			}
			if j.xwaiting {
				if j.typ.cfg.Access != Exclusive || j.frozenAt != 0 {
					return fmt.Errorf("job %d: xwaiting but shared or frozen", j.seq)
				}
				resXwait[resKey{j.typ.cfg.ConflictGroup, j.jobID}]++
			}
			typeQ[j.typ]++
			tierQ[j.typ.tier]++
			if !j.foreground {
				bgQueued++
			}
		}
		if n != k.queued || k.tail != last {
			return fmt.Errorf("key %q: queued %d, listed %d (tail is the last: %v)", name, k.queued, n, k.tail == last)
		}
		queued += n
		for _, f := range k.flows {
			if f.key != k || f.jobs.Len()+int(f.parked) == 0 || perFlow[f] != f.jobs.Len()+int(f.parked) {
				return fmt.Errorf("key %q flow %q: %d ready + %d parked, %d listed", name, f.typ.name, f.jobs.Len(), f.parked, perFlow[f])
			}
			if err := f.jobs.Verify(); err != nil {
				return fmt.Errorf("key %q flow %q: %v", name, f.typ.name, err)
			}
			var bad *job
			for j := range f.jobs.All() {
				if j.state != jobQueued || j.flow != f {
					bad = j
				}
			}
			if bad != nil {
				return fmt.Errorf("flow (%q, %q) holds job %d in state %d", name, f.typ.name, bad.seq, bad.state)
			}
			if want := f.jobs.Len() > 0 && !k.held(); (f.typIdx != -1) != want {
				return fmt.Errorf("flow (%q, %q): typIdx %d, want in heap %v", name, f.typ.name, f.typIdx, want)
			}
		}
	}
	if queued != s.queued || queued > s.cfg.MaxQueue || bgQueued != s.bgQueued {
		return fmt.Errorf("queued %d (bg %d), counted %d (bg %d), MaxQueue %d", s.queued, s.bgQueued, queued, bgQueued, s.cfg.MaxQueue)
	}
	for _, t := range s.types {
		if typeQ[t] != t.queued {
			return fmt.Errorf("type %q: queued %d, counted %d", t.name, t.queued, typeQ[t])
		}
	}
	for _, tr := range s.tiers {
		if tierQ[tr] != tr.queued {
			return fmt.Errorf("tier %d: queued %d, counted %d", tr.prio, tr.queued, tierQ[tr])
		}
	}
	idle := 0
	for rk, r := range s.allResourcesLocked() {
		if r.holders != resRun[rk] || r.excl != resExcl[rk] || r.xwait != resXwait[rk] {
			return fmt.Errorf("resource %v: holders %d (counted %d), excl %v, xwait %d (counted %d), waiting %d",
				rk, r.holders, resRun[rk], r.excl, r.xwait, resXwait[rk], r.nwait)
		}
		if r.idle() {
			idle++
		}
		n := 0
		for f, h := range r.waiters {
			if err := h.Verify(); h.Len() == 0 || err != nil {
				return fmt.Errorf("resource %v: bad waiter queue for flow (%q, %q): %d jobs, %v", rk, f.key.name, f.typ.name, h.Len(), err)
			}
			var bad *job
			for j := range h.All() {
				if j.state != jobParked || j.flow != f || j.jobID != rk.id {
					bad = j
				}
			}
			if bad != nil {
				return fmt.Errorf("resource %v: waiter %d in state %d", rk, bad.seq, bad.state)
			}
			n += h.Len()
		}
		if n != r.nwait {
			return fmt.Errorf("resource %v: nwait %d, counted %d", rk, r.nwait, n)
		}
		// A resource may keep parked jobs it is open to only while each of
		// their flows has a ready job on it that will take it or hand the
		// turn on. (So when it is free, every parked exclusive job, xwaiting
		// or not, has a ready flow mate ahead of it: the shared jobs its
		// xwait holds back are not held forever.)
		readyOn := func(f *flow) bool {
			for j := range f.jobs.All() {
				if j.typ.cfg.ConflictGroup == rk.group && j.jobID == rk.id {
					return true
				}
			}
			return false
		}
		for f := range r.waiters {
			if !r.open(f.typ.cfg.Access) {
				continue
			}
			if !readyOn(f) {
				return fmt.Errorf("resource %v is free and flow (%q, %q) has %d jobs parked on it with no ready job to take it",
					rk, f.key.name, f.typ.name, r.waiters[f].Len())
			}
		}
	}
	if err := s.keys.verify(s.cfg.MaxKeys); err != nil {
		return err
	}
	if idle != s.idleRes || idle > maxIdleResources {
		return fmt.Errorf("%d idle resource entries, idleRes %d, bound %d", idle, s.idleRes, maxIdleResources)
	}
	return nil
}

// activeKeyLocked returns the state of key name if it is active (tests
// only).
func (s *Scheduler) activeKeyLocked(name string) *keyState {
	k := s.keys.get(name)
	if k == nil || !k.active {
		return nil
	}
	return k
}

// dumpLocked renders the scheduler state for failure messages.
func (s *Scheduler) dumpLocked() string {
	out := fmt.Sprintf("inUse=%d/%d queued=%d vsys=%.3f\n", s.inUse, s.cfg.Capacity, s.queued, s.vsys)
	for j := range s.running.All() {
		out += fmt.Sprintf("  running %s/%s key=%q tag=%.3f est=%.3f\n", j.typ.name, j.jobID, j.key.name, j.startTag, j.est)
	}
	for _, k := range s.activeKeysLocked() {
		out += fmt.Sprintf("  key %q v=%.3f running=%d queued=%d capped=%v\n", k.name, k.v, k.running, k.queued, k.capped)
		for j := k.head; j != nil; j = j.next {
			out += fmt.Sprintf("    job %d %s/%s state=%d\n", j.seq, j.typ.name, j.jobID, j.state)
		}
	}
	return out
}

// checkFrontsLocked checks the map-free shortcut: costsFront is nil or the
// newest entry of its LRU.
func (s *Scheduler) checkFrontsLocked() error {
	if e := s.costsFront; e != nil {
		keys := s.costs.Keys()
		if len(keys) == 0 || keys[len(keys)-1] != e.key {
			return fmt.Errorf("costsFront %v is not the newest cost entry", e.key)
		}
		if inLRU, _ := s.costs.Peek(e.key); inLRU != e {
			return fmt.Errorf("costsFront %v is not the LRU's entry of that key", e.key)
		}
	}
	return nil
}

// verify checks the invariants written on keyTable, and that it holds at
// most max keys unless every key beyond them is active.
func (t *keyTable) verify(max int) error {
	idle := 0
	for name, k := range t.byName {
		switch {
		case k.name != name:
			return fmt.Errorf("key table: %q holds the state of %q", name, k.name)
		case k.active != (k.idlePos == 0):
			return fmt.Errorf("key %q: active %v with idle entry %d", name, k.active, k.idlePos-1)
		case !k.active && (int(k.idlePos) > len(t.idle) || int(k.idlePos) <= t.head || t.idle[k.idlePos-1] != k):
			return fmt.Errorf("key %q: idle entry %d is not its own (entries [%d, %d))", name, k.idlePos-1, t.head, len(t.idle))
		case !k.active:
			idle++
		}
	}
	if idle != t.nIdle {
		return fmt.Errorf("key table: %d idle keys, nIdle %d", idle, t.nIdle)
	}
	for i := range t.head {
		if t.idle[i] != nil {
			return fmt.Errorf("key table: dropped entry %d not cleared", i)
		}
	}
	if len(t.byName) > max && idle > 0 {
		return fmt.Errorf("key table: %d keys tracked (%d idle), bound %d", len(t.byName), idle, max)
	}
	return nil
}

// keptChanges is the ring of capacity changes, oldest first.
func (a *adaptive) keptChanges() []capacityChange {
	kept := make([]capacityChange, a.histN)
	for i := range kept {
		kept[i] = a.hist[(a.histAt+i)%CapacityHistory]
	}
	return kept
}
