package admission

import (
	"fmt"
	"math"
)

// Runtime control. Each setter validates its argument like New does, applies
// it under the scheduler's lock and runs dispatch, so the change takes effect
// at once. Lowering a limit never pre-empts running work: jobs above the new
// limit finish normally and no new job starts until the count is below it.

// SetCapacity changes the number of seats. n must be positive and at least
// the sum of the configured keys' MinSeats. With adaptive capacity it
// returns an error wrapping ErrInvalidConfig and changes nothing: the
// controller would overrule a number set by hand within a round, so an
// operator moves its bounds instead (SetAdaptiveBounds; equal bounds pin
// the capacity).
func (s *Scheduler) SetCapacity(n int) error {
	return s.reconfigure(func(now int64) error {
		if s.adaptive != nil {
			return fmt.Errorf("%w: SetCapacity(%d): the capacity is adaptive (Config.Adaptive); use SetAdaptiveBounds", ErrInvalidConfig, n)
		}
		if n <= 0 {
			return fmt.Errorf("%w: SetCapacity: capacity must be > 0, got %d", ErrInvalidConfig, n)
		}
		if sum := s.minSeatsLocked(""); sum > n || s.cfg.DefaultKey.MinSeats > n {
			return fmt.Errorf("%w: SetCapacity(%d): below the configured MinSeats (keys sum to %d, DefaultKey %d)",
				ErrInvalidConfig, n, sum, s.cfg.DefaultKey.MinSeats)
		}
		s.cfg.Capacity = n
		s.overSeated = s.overSeated || s.inUse > n
		return nil
	})
}

// SetTypeLimit changes the MaxConcurrency of job type t (0 = no cap). The
// registered JobTypeConfig is unchanged: registering t again with it stays a
// no-op.
func (s *Scheduler) SetTypeLimit(t JobType, n int) error {
	return s.reconfigure(func(now int64) error {
		ts, err := s.typeLocked(t)
		if err != nil {
			return err
		}
		if n < 0 {
			return fmt.Errorf("%w: SetTypeLimit(%q): limit must be >= 0, got %d", ErrInvalidConfig, t, n)
		}
		ts.limit = n
		s.overSeated = s.overSeated || (n > 0 && ts.running > n)
		return nil
	})
}

// SetWeight overrides the weight of fairness key key (w > 0 and finite),
// whatever its KeyPolicy says, until ResetWeights. The key's virtual time is
// kept: the new weight applies to the seat time it is charged from now on.
func (s *Scheduler) SetWeight(key string, w float64) error {
	return s.reconfigure(func(now int64) error {
		if math.IsNaN(w) || math.IsInf(w, 0) || w <= 0 {
			return fmt.Errorf("%w: SetWeight: weight must be a finite number > 0, got %v", ErrInvalidConfig, w)
		}
		name := foldIdentifier(key)
		s.weights[name] = w
		if k := s.keyLocked(name); k != nil {
			s.setWeightLocked(k, w, now)
		}
		return nil
	})
}

// ResetWeights drops every SetWeight override: each key's weight is its
// KeyPolicy's again.
func (s *Scheduler) ResetWeights() {
	_ = s.reconfigure(func(now int64) error {
		clear(s.weights)
		s.forEachKeyLocked(func(k *keyState) { s.setWeightLocked(k, k.policy.weight(), now) })
		return nil
	})
}

// SetKeyPolicy sets the policy of fairness key key, as if it had been in
// Config.Keys. It is validated like Config.Keys (the MinSeats of all keys
// must fit in the capacity). A weight set with SetWeight still overrides
// p.Weight. Lowering MaxInFlight or MaxQueued drops nothing: queued and
// running work stays; the limits apply to what comes next.
func (s *Scheduler) SetKeyPolicy(key string, p KeyPolicy) error {
	return s.reconfigure(func(now int64) error {
		name := foldIdentifier(key)
		capacity := s.minCapacityLocked()
		if err := p.validate(fmt.Sprintf("SetKeyPolicy(%q)", key), capacity); err != nil {
			return err
		}
		if sum := s.minSeatsLocked(name) + p.MinSeats; sum > capacity {
			return fmt.Errorf("%w: SetKeyPolicy(%q): MinSeats of all keys would sum to %d, above Capacity %d (Adaptive.Min when adaptive)",
				ErrInvalidConfig, key, sum, capacity)
		}
		s.policies[name] = &p
		if k := s.keyLocked(name); k != nil {
			k.policy = &p
			s.setWeightLocked(k, s.weightFor(name, &p), now)
			k.capped = p.MaxInFlight > 0 && k.running >= p.MaxInFlight
			s.keyChangedLocked(k, now)
		}
		return nil
	})
}

// reconfigure applies change under the lock and dispatches if it succeeded.
func (s *Scheduler) reconfigure(change func(now int64) error) error {
	var buf [8]*job
	now := s.lockAt(s.now())
	if err := change(now); err != nil {
		s.mu.Unlock()
		return err
	}
	wake := s.dispatchLocked(now, buf[:0])
	s.mu.Unlock()
	s.wakeAll(wake)
	return nil
}

// minSeatsLocked sums the MinSeats of the configured keys other than except.
func (s *Scheduler) minSeatsLocked(except string) int {
	sum := 0
	for name, p := range s.policies {
		if name != except {
			sum += p.MinSeats
		}
	}
	return sum
}

// forEachKeyLocked calls fn for every tracked key state.
func (s *Scheduler) forEachKeyLocked(fn func(*keyState)) {
	for _, k := range s.keys.byName {
		fn(k)
	}
}

// SetDryRun turns dry-run mode on or off. In dry-run mode every decision is
// computed, counted and traced as usual, but a request or job that would
// wait is admitted at once instead (Counters.DryRunWaits, and BlockedBy on
// the trace says why it would have waited); turning it on admits what is
// queued. Since nothing stays queued, queue bounds and MaxWait never
// trigger, and capacity, caps and conflicts may be exceeded: the counters
// show how often enforcement would have held work back under the real load.
// Turning it off enforces again from the next dispatch; running work is
// never pre-empted.
func (s *Scheduler) SetDryRun(on bool) {
	var wake []*job
	now := s.lockAt(s.now())
	s.dryRun = on
	if on {
		for _, k := range s.activeKeysLocked() {
			for j := k.head; j != nil; {
				next := j.next
				s.dryAdmitLocked(j, now)
				wake = append(wake, j)
				j = next
			}
		}
	}
	wake = s.dispatchLocked(now, wake)
	s.mu.Unlock()
	s.wakeAll(wake)
}

// wouldWaitForLocked says what holds back j, which dispatch left queued:
// Snapshot's BlockedBy, or "queue" when only its place in the order does
// (no seat free, or others go first).
func (s *Scheduler) wouldWaitForLocked(j *job, now int64) string {
	if b := s.blockedByLocked(j, s.rankLocked(j, now), now); b != "" {
		return b
	}
	return "queue"
}

// dryAdmitLocked seats queued job j at once although dispatch made it wait
// (dry-run). Limits may be exceeded from here on.
func (s *Scheduler) dryAdmitLocked(j *job, now int64) {
	s.counters.DryRunWaits++
	k := j.key
	s.unqueueLocked(j, now) // may make k idle, and even forget it at MaxKeys
	// k is looked up again by name: if it was forgotten, a fresh state
	// takes its place, as for any key that returns after being forgotten
	// (waking the forgotten record would leave an active key the table
	// does not track).
	j.key = s.activateKeyLocked(k.name, now)
	j.state = jobNew
	s.overSeated = true
	s.seatLocked(j, s.resourceLocked(j), now)
	s.keyChangedLocked(j.key, now)
}
