package admission

import (
	"context"
	"fmt"
)

// Close stops admission. New calls fail with ErrClosed and queued foreground
// requests fail with ErrClosed at once, as do queued background jobs of a
// paused type or key (Close does not lift pauses). Queued background jobs keep being
// admitted until none is queued or running, or until ctx ends; then the
// contexts of the jobs still running under the scheduler (RunSync and Submit)
// are cancelled, background jobs that never ran are reported through the
// logger and the Dropped counter, and Close waits for every background
// goroutine to return (background work must honour its context).
//
// With [WithCostStore], Close then saves the learned costs a last time,
// with ctx, and the adaptive limit with a [CapacityStore] (a failed save
// is logged and counted, and does not change what Close returns).
//
// Close returns nil when all background work ran, and otherwise an error
// wrapping ctx.Err() that says how much was dropped. Permits from Acquire are
// not waited for; releasing them after Close is fine. Calling Close again
// waits for the first call and returns ErrClosed. A nil ctx waits as
// context.Background() does.
func (s *Scheduler) Close(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	now := s.lockAt(s.now())
	if s.closing {
		done := s.closeDone
		s.mu.Unlock()
		<-done
		return ErrClosed
	}
	s.closing = true
	s.closeDone = make(chan struct{})
	defer close(s.closeDone)
	wake := s.failWaitingLocked(now)
	for _, t := range s.types {
		t.pause.stop()
	}
	for _, p := range s.pausedKeys {
		p.stop()
	}
	idle := make(chan struct{})
	s.bgIdle = idle
	s.backgroundChangedLocked()
	s.mu.Unlock()
	s.wakeAll(wake)

	var err error
	select {
	case <-idle:
	case <-ctx.Done():
		err = s.stop(ctx.Err())
	}
	s.mu.Lock()
	for j := range s.running.All() {
		if j.cancel != nil {
			j.cancel()
		}
	}
	s.mu.Unlock()
	s.cancelBase()
	s.wg.Wait()
	s.saveCostsAtClose(ctx)
	s.mu.Lock()
	s.stopped = true
	if g := s.pressure; g != nil {
		g.timer.Stop()
	}
	s.mu.Unlock()
	s.timers.Wait() // a timer function that began before stopped was set
	s.stopObservability()
	return err
}

// failWaitingLocked fails, as Close begins, what will not run while Close
// drains: every queued foreground request, the background jobs of a paused
// type or key, and the background jobs waiting out a retry backoff. It
// returns their jobs, for the caller to wake once it has unlocked.
func (s *Scheduler) failWaitingLocked(now int64) []*job {
	var wake []*job
	for _, k := range s.activeKeysLocked() {
		for j := k.head; j != nil; {
			next := j.next
			switch {
			case j.foreground:
				s.unqueueLocked(j, now)
				s.counters.RejectedClosed++
				j.err = &RejectedError{Reason: ErrClosed, Type: j.typ.name}
				s.emitRejectedLocked(j, j.typ, j.key.name, ErrClosed, false, now)
				wake = append(wake, j)
			case j.frozenAt != 0:
				// Paused background work cannot run while Close drains, and
				// Close does not overrule an operator's pause: it is dropped.
				s.unqueueLocked(j, now)
				s.counters.Dropped++
				j.err = fmt.Errorf("%w: dropped by Close: its job type or key is paused", ErrClosed)
				wake = append(wake, j)
			}
			j = next
		}
	}
	for j := range s.retrying {
		// A retry not yet due is not attempted again: Close would otherwise
		// wait out its backoff.
		j.bg.timer.Stop()
		delete(s.retrying, j)
		s.counters.Submitted++ // the attempt counts as submitted, and dropped
		s.counters.Dropped++
		j.err = fmt.Errorf("%w: dropped by Close while waiting to retry", ErrClosed)
		wake = append(wake, j)
	}
	return wake
}

// stop drops the background jobs still queued when Close's context ends.
func (s *Scheduler) stop(cause error) error {
	now := s.lockAt(s.now())
	var dropped []*job
	for _, k := range s.activeKeysLocked() {
		for j := k.head; j != nil; {
			next := j.next
			if !j.foreground {
				s.unqueueLocked(j, now)
				s.counters.Dropped++
				j.err = fmt.Errorf("%w: dropped by Close: %w", ErrClosed, cause)
				s.emitJobEndLocked(EventBackgroundDropped, j, j.err, now)
				dropped = append(dropped, j)
			}
			j = next
		}
	}
	running := s.bgRunning
	s.mu.Unlock()
	for _, j := range dropped {
		s.reportDropped(j)
	}
	return fmt.Errorf("admission: Close: %w: %d queued background jobs dropped, %d running background jobs cancelled",
		cause, len(dropped), running)
}

// activeKeysLocked returns the active keys — those with queued jobs (all in
// Scheduler.lengths) and those with running jobs — in a stable order (by
// name), so that Close acts on queued work deterministically.
func (s *Scheduler) activeKeysLocked() []*keyState {
	seen := make(map[*keyState]bool, s.lengths.Len())
	var ks []*keyState
	add := func(k *keyState) {
		if !seen[k] {
			seen[k] = true
			ks = append(ks, k)
		}
	}
	for k := range s.lengths.All() {
		add(k)
	}
	for j := range s.running.All() {
		add(j.key)
	}
	sortKeys(ks)
	return ks
}
