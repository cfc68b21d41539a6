package admission

import (
	"math"
)

// Fair-share accounting for telemetry (see "Observability" in the package
// doc). The scheduler does not use allocations to decide anything — virtual
// time does that — they only describe its decisions to operators:
//
//	active keys A = keys with queued or running work
//	allocation_k  = Capacity · w_k / Σ_{a∈A} w_a     (0 when k is idle)
//	utilisation_k = running_k / allocation_k          (active keys only)
//	excess_k      = max(0, running_k − allocation_k)
//
// Series exist for each key named in Config.Keys and for "other", all other
// keys together (w_other = Σ of their weights, running_other = their seats).
// Σ w over active keys, and over active unconfigured keys, are kept
// incrementally at activation and idling, so a collection costs
// O(len(Config.Keys)) and never a walk over all keys.

// otherSeries is the series name of the keys not named in Config.Keys.
const otherSeries = "other"

// share is one series' allocation at an instant.
type share struct {
	alloc   float64 // seats
	running int
	active  bool
}

// keyActivatedLocked is the hook of wakeKeyLocked: k became active. With
// no key configured, every key is "other", whose sums are activeN and
// activeW, and no allocation event is emitted: that is the hot path.
func (s *Scheduler) keyActivatedLocked(k *keyState, now int64) {
	o := s.obs
	o.activeN++
	o.activeW += k.w
	if len(o.keyNames) > 0 {
		s.keyChangedStateLocked(k, now)
	}
}

// keyIdledLocked is the hook of maybeIdleLocked: k went idle.
func (s *Scheduler) keyIdledLocked(k *keyState, now int64) {
	o := s.obs
	o.activeN--
	o.activeW -= k.w
	if o.activeN == 0 {
		o.activeW = 0 // no rounding drift survives an idle moment
	}
	if len(o.keyNames) > 0 {
		s.keyChangedStateLocked(k, now)
	}
}

// setWeightLocked changes k's weight, keeping the sums over active keys and
// reporting the allocations that moved (runtime control).
func (s *Scheduler) setWeightLocked(k *keyState, w float64, now int64) {
	old := k.w
	k.w = w
	if !k.active || old == w {
		return
	}
	o := s.obs
	o.activeW += w - old
	if !k.configured && len(o.keyNames) > 0 {
		o.otherW += w - old
	}
	if o.events.handler != nil && len(o.keyNames) > 0 {
		s.reportAllocationsLocked(k.name, k.configured, true, true, now)
	}
}

// keyChangedStateLocked keeps otherN and otherW, and emits the allocation
// events, when Config.Keys names keys; k just became active or idle.
func (s *Scheduler) keyChangedStateLocked(k *keyState, now int64) {
	o, up := s.obs, k.active
	if !k.configured {
		if up {
			o.otherN++
			o.otherW += k.w
		} else {
			o.otherN--
			o.otherW -= k.w
			if o.otherN == 0 {
				o.otherW = 0
			}
		}
	}
	if o.events.handler != nil && (k.configured || (up && o.otherN == 1) || (!up && o.otherN == 0)) {
		s.allocationsChangedLocked(k.name, k.configured, up, now)
	}
}

// isConfigured reports whether name is in Config.Keys.
func (o *observer) isConfigured(name string) bool {
	_, ok := o.keyIdx[name]
	return ok
}

// sharesLocked appends the series of each configured key, in o.keyNames
// order, then "other", to out.
func (s *Scheduler) sharesLocked(out []share) []share {
	o := s.obs
	capacity := float64(s.cfg.Capacity)
	confRunning := 0
	for _, name := range o.keyNames {
		var sh share
		if k := s.keyLocked(name); k != nil && k.active {
			sh = share{alloc: capacity * k.w / o.activeW, running: k.running, active: true}
			confRunning += k.running
		}
		out = append(out, sh)
	}
	otherN, otherW := o.otherN, o.otherW
	if len(o.keyNames) == 0 {
		otherN, otherW = o.activeN, o.activeW
	}
	other := share{running: s.inUse - confRunning}
	if otherN > 0 {
		other.alloc, other.active = capacity*otherW/o.activeW, true
	}
	return append(out, other)
}

// allocationsChangedLocked emits EventAllocationChanged for every series
// whose allocation differs from the last one reported, after key name
// (configured or one of "other") became active (up) or went idle.
func (s *Scheduler) allocationsChangedLocked(name string, configured, up bool, now int64) {
	s.reportAllocationsLocked(name, configured, up, false, now)
}

// reportAllocationsLocked is allocationsChangedLocked; weight says the
// cause was a weight change of key name.
func (s *Scheduler) reportAllocationsLocked(name string, configured, up, weight bool, now int64) {
	o := s.obs
	changed := len(o.keyNames)
	if configured {
		changed = o.keyIdx[name]
	}
	o.scratch = s.sharesLocked(o.scratch[:0])
	for i, sh := range o.scratch {
		prev := o.lastAlloc[i]
		if math.Abs(sh.alloc-prev) < 1e-9 {
			continue
		}
		reason := AllocationRebalance
		switch {
		case weight:
			reason = AllocationWeightChange
		case i == changed && up:
			reason = AllocationKeyActivated
		case i == changed:
			reason = AllocationKeyDrained
		}
		o.lastAlloc[i] = sh.alloc
		s.emitLocked(Event{Kind: EventAllocationChanged, Time: s.timeAt(now), Key: o.seriesName(i),
			Previous: prev, New: sh.alloc, Reason: reason})
	}
}
