package admission

import (
	"fmt"
	"time"
)

// pause is an operator's pause of a job type or a fairness key.
type pause struct {
	until int64       // when it lifts by itself, an instant (see Scheduler.now); 0 = at Resume
	timer *time.Timer // fires at until; nil when until is zero
}

// Pause stops admitting jobs of type t. Queued and arriving jobs of the type
// keep their place in the queue; their aging clock and their background TTL
// stand still while the pause lasts; the seats they would have taken go to
// other work. Running jobs are not affected. With d > 0 the pause lifts by
// itself after d; with d == 0 it lasts until [Scheduler.Resume]. Pausing a
// paused type replaces its deadline.
//
// It fails with an error wrapping ErrUnknownJobType, ErrInvalidConfig (d < 0)
// or ErrClosed. It costs O(queued jobs) under the scheduler's lock.
func (s *Scheduler) Pause(t JobType, d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("%w: Pause(%q): duration must be >= 0, got %v", ErrInvalidConfig, t, d)
	}
	// reconfigure dispatches: a paused exclusive job stops holding shared
	// ones back, and they may start.
	return s.reconfigure(func(now int64) error {
		ts, err := s.typeLocked(t)
		if err != nil {
			return err
		}
		if s.closing {
			return ErrClosed
		}
		p := s.pauseTypeLocked(ts, now)
		s.armPause(p, d, now, func() bool { return ts.pause == p }, func(now int64) { s.resumeTypeLocked(ts, now) })
		return nil
	})
}

// Resume lifts a pause of type t; the type's queued jobs compete for the next
// seat that opens (dispatch runs at once). Resuming a type that is not paused
// does nothing. It fails with an error wrapping ErrUnknownJobType.
func (s *Scheduler) Resume(t JobType) error {
	return s.reconfigure(func(now int64) error {
		ts, err := s.typeLocked(t)
		if err == nil && ts.paused {
			s.resumeTypeLocked(ts, now)
		}
		return err
	})
}

// pauseTypeLocked pauses ts (again) until Resume and returns its new pause,
// for the caller to give a deadline.
func (s *Scheduler) pauseTypeLocked(ts *typeState, now int64) *pause {
	ts.pause.stop()
	ts.pause = &pause{}
	if !ts.paused {
		ts.paused = true
		s.refreezeLocked(s.activeKeysLocked(), func(j *job) bool { return j.typ == ts }, now)
	}
	return ts.pause
}

func (s *Scheduler) resumeTypeLocked(ts *typeState, now int64) {
	ts.pause.stop()
	ts.pause = nil
	ts.paused = false
	s.refreezeLocked(s.activeKeysLocked(), func(j *job) bool { return j.typ == ts }, now)
}

// PauseKey stops admitting work of one fairness key, as Pause does for a
// type: its queued work keeps its place with its clocks stopped, and its
// share goes to other keys. When the pause lifts, the key's virtual time is
// brought up to V_sys, as for a key returning from idleness: it gets its fair
// share back, not a catch-up burst for the time it was paused. Background
// work is the key "". The pause survives the key's state being forgotten
// while idle. It fails with an error wrapping ErrInvalidConfig (d < 0) or
// ErrClosed.
func (s *Scheduler) PauseKey(key string, d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("%w: PauseKey: duration must be >= 0, got %v", ErrInvalidConfig, d)
	}
	name := foldIdentifier(key)
	return s.reconfigure(func(now int64) error {
		if s.closing {
			return ErrClosed
		}
		p := s.pauseKeyLocked(name, now)
		s.armPause(p, d, now, func() bool { return s.pausedKeys[name] == p }, func(now int64) { s.resumeKeyLocked(name, now) })
		return nil
	})
}

// ResumeKey lifts a pause of a fairness key; resuming a key that is not
// paused does nothing.
func (s *Scheduler) ResumeKey(key string) {
	name := foldIdentifier(key)
	_ = s.reconfigure(func(now int64) error {
		if s.pausedKeys[name] != nil {
			s.resumeKeyLocked(name, now)
		}
		return nil
	})
}

// pauseKeyLocked pauses key name (again) until ResumeKey and returns its
// new pause, for the caller to give a deadline.
func (s *Scheduler) pauseKeyLocked(name string, now int64) *pause {
	s.pausedKeys[name].stop()
	p := &pause{}
	s.pausedKeys[name] = p
	if k := s.keyLocked(name); k != nil && !k.paused {
		k.paused = true
		s.refreezeLocked([]*keyState{k}, nil, now)
	}
	return p
}

func (s *Scheduler) resumeKeyLocked(name string, now int64) {
	s.pausedKeys[name].stop()
	delete(s.pausedKeys, name)
	k := s.keyLocked(name)
	if k == nil || !k.paused {
		return
	}
	k.paused = false
	if k.v < s.vsys {
		k.v = s.vsys
	}
	s.refreezeLocked([]*keyState{k}, nil, now)
}

// armPause makes p lift by itself after d, if d > 0: resume runs then, and
// dispatch after it, unless current says p was replaced or lifted since
// (the timer may fire just after).
func (s *Scheduler) armPause(p *pause, d time.Duration, now int64, current func() bool, resume func(now int64)) {
	if d <= 0 {
		return
	}
	p.until = now + int64(d)
	p.timer = s.afterFunc(d, func() {
		_ = s.reconfigure(func(now int64) error {
			if current() {
				resume(now)
			}
			return nil
		})
	})
}

func (p *pause) stop() {
	if p != nil && p.timer != nil {
		p.timer.Stop()
	}
}

// refreezeLocked brings the queued jobs of keys (those match accepts, or
// all when match is nil) to the frozen state their type and key call for,
// then restores every ordering their clocks take part in: the heaps of their
// flows and of the resources they are parked on, and the flows' places.
func (s *Scheduler) refreezeLocked(keys []*keyState, match func(*job) bool, now int64) {
	flows := map[*flow]bool{}
	waiters := map[*jobQueue]bool{}
	for _, k := range keys {
		for j := k.head; j != nil; j = j.next {
			if match != nil && !match(j) {
				continue
			}
			frozen := j.typ.paused || j.key.paused
			switch {
			case frozen && j.frozenAt == 0:
				s.freezeLocked(j, now)
			case !frozen && j.frozenAt != 0:
				s.thawLocked(j, now)
			default:
				continue
			}
			flows[j.flow] = true
			if j.state == jobParked {
				waiters[s.resourceLocked(j).waiters[j.flow]] = true
			}
		}
	}
	for h := range waiters {
		h.Reinit()
	}
	for f := range flows {
		f.jobs.Reinit()
	}
	for _, k := range keys {
		s.keyChangedLocked(k, now) // syncs every flow of k: places, ranks, promotions
	}
}

// freezeLocked stops j's clocks: its aging clock and its TTL.
func (s *Scheduler) freezeLocked(j *job, now int64) {
	j.frozenAt = now
	if t := j.timer(); t != nil {
		t.Stop()
	}
	if r := s.resourceLocked(j); r != nil && s.stopWaitingLocked(j, r, now) {
		s.maybeFreeResourceLocked(r)
	}
}

// thawLocked restarts j's clocks where they stopped: the time it was frozen
// counts neither as waiting for aging nor against its TTL.
func (s *Scheduler) thawLocked(j *job, now int64) {
	d := sinceNs(now, j.frozenAt)
	j.frozenAt = 0
	j.agingAt += int64(d)
	if b := j.bg; b != nil && b.expiresAt != 0 {
		b.expiresAt += int64(d)
		if b.timer != nil {
			b.timer.Reset(time.Duration(b.expiresAt - now)) // the TTL left
		}
	}
}
