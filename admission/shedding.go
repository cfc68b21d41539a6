package admission

import "time"

// Queue-delay shedding of adaptive capacity (see the package doc,
// "Queue-delay shedding"): CoDel's standing-queue test over the keys that
// hold their share, and the refusals it brings.

// admittedAfterLocked records the wait of a foreground job of key k just
// admitted (seatLocked), for queue-delay shedding. Only the admissions of
// keys holding at least their share count, as in FQ-CoDel, which keeps
// CoDel's state per flow: a key below its share is picked first at the
// next free seat whatever the queue (fairness), so its short wait says
// nothing of the standing queue the heavier keys wait in: counted, it
// would end shedding in every interval in which a light caller got in.
func (s *Scheduler) admittedAfterLocked(k *keyState, wait time.Duration, now int64) {
	a := s.adaptive
	s.rollIntervalLocked(now)
	if !s.holdsShareLocked(k) {
		return
	}
	if !a.admitted || wait < a.minWait {
		a.minWait = wait
	}
	a.admitted = true
}

// rollIntervalLocked closes the interval if it is over: shedding is on
// from then when every foreground job admitted during it of a key holding
// its share had waited more than the target, off when one had not; an
// interval without such admissions leaves it as it was.
func (s *Scheduler) rollIntervalLocked(now int64) {
	a := s.adaptive
	if sinceNs(now, a.intervalStart) < a.cfg.QueueDelayInterval {
		return
	}
	if a.admitted {
		a.shedding = a.minWait > a.cfg.QueueDelayTarget
	}
	a.intervalStart, a.admitted = now, false
}

// shedsLocked reports whether queue-delay shedding refuses a new
// foreground arrival of key k (nil: a key with nothing queued or running):
// while a standing queue stands (shedding and something queued), the
// arrivals of keys that hold at least their share are refused; lighter
// keys still get in.
func (s *Scheduler) shedsLocked(k *keyState, now int64) bool {
	a := s.adaptive
	if a == nil || a.cfg.QueueDelayTarget == 0 || k == nil || s.queued == 0 {
		return false
	}
	s.rollIntervalLocked(now)
	return a.shedding && s.holdsShareLocked(k)
}

// shedQueuedLocked reports whether queue-delay shedding refuses j, the
// next queued job dispatch would consider (CoDel drops at the head of its
// queue): a foreground job that has waited more than the target, of a key
// holding at least its share, while shedding. Refusing the backlog that
// formed before shedding began is what makes a standing queue go, rather
// than drain at the server's pace.
func (s *Scheduler) shedQueuedLocked(j *job, now int64) bool {
	a := s.adaptive
	if a.cfg.QueueDelayTarget == 0 || !j.foreground {
		return false
	}
	s.rollIntervalLocked(now)
	return a.shedding && sinceNs(now, j.enqueued) > a.cfg.QueueDelayTarget && s.holdsShareLocked(j.key)
}

// holdsShareLocked reports whether key k holds (queued + running) at
// least its weighted share of all that is queued and running.
func (s *Scheduler) holdsShareLocked(k *keyState) bool {
	if s.obs.activeW <= 0 {
		return false
	}
	held := float64(k.queued + k.running)
	return held > 0 && held >= float64(s.queued+s.inUse)*k.w/s.obs.activeW
}
