package admission

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/fairseat/fairseat/internal/ringheap"
)

// Counters are cumulative totals since New, copied into a Snapshot (a plain
// value; the zero value is a fresh scheduler's). Every request or job ends in
// exactly one of Completed, RejectedQueueFull, RejectedWaitTimeout,
// RejectedClosed, RejectedDeadline, RejectedOverload, Cancelled, Dropped,
// Coalesced or Superseded (their sum is Ended), or is still queued or
// running. A retried background job counts each attempt.
type Counters struct {
	Submitted           uint64 // requests and jobs that arrived, accepted or not
	Admitted            uint64 // given a seat
	Completed           uint64 // released after running (including failures)
	Failed              uint64 // background jobs that returned an error or panicked
	RejectedQueueFull   uint64 // turned away or pushed out by the queue bounds
	PushedOut           uint64 // the part of RejectedQueueFull pushed out by a lighter key
	RejectedWaitTimeout uint64 // waited MaxWait
	RejectedClosed      uint64 // arrived or were queued when Close was called
	Cancelled           uint64 // caller's context ended while queued (or just as admitted)
	Dropped             uint64 // background jobs never run because Close's context ended
	AgingPromotions     uint64 // aging promotions carried by admitted jobs
	UrgentAdmissions    uint64 // jobs admitted while urgent
	Exempt              uint64 // requests a transport let bypass admission (CountExempt)
	Expired             uint64 // the part of RejectedWaitTimeout that was background work past its TTL
	Coalesced           uint64 // background submissions absorbed by a queued duplicate (never queued)
	Superseded          uint64 // queued background jobs replaced by a newer submission
	Retried             uint64 // failed background attempts queued again (each attempt is also Submitted)
	DryRunWaits         uint64 // dry-run: admitted at once although they would have waited
	RejectedDeadline    uint64 // turned away because their deadline ended before they could start
	EventsDropped       uint64 // events not delivered to the WithEventHandler handler
	// WithCostStore: of the estimates the store's Load returned, those
	// that became learned costs (when their type was registered) and those
	// skipped (invalid, expired, duplicate, or no room within
	// MaxCostEntries); the rest wait for their type (CostStoreSnapshot.Aside).
	CostEntriesLoaded  uint64
	CostEntriesSkipped uint64
	CostSaves          uint64 // successful saves
	CostEntriesSaved   uint64 // estimates written by the successful saves, in all
	CostLoadFailures   uint64 // failed loads (New started cold; logged as a warning)
	CostSaveFailures   uint64 // failed saves (the store keeps what it had; logged as a warning)
	RejectedOverload   uint64 // refused by queue-delay shedding (ErrOverloaded), at arrival or at the head of the queue
	PressureFailures   uint64 // readings of Config.Pressure's source that panicked (counted as no pressure)
}

// Ended is how many of the Submitted requests and jobs have ended, in one
// of the outcomes the Counters doc lists: Submitted - Ended are queued or
// running, and once nothing is, the two are equal.
func (c Counters) Ended() uint64 {
	return c.Completed + c.RejectedQueueFull + c.RejectedWaitTimeout + c.RejectedClosed + c.RejectedDeadline +
		c.RejectedOverload + c.Cancelled + c.Dropped + c.Coalesced + c.Superseded
}

// Snapshot is a point-in-time copy of the scheduler's state, for debugging
// and metrics. Its slices are sorted as documented and bounded. It shares
// nothing with the scheduler, so the caller may keep or modify it.
type Snapshot struct {
	Time          time.Time        // the scheduler's clock when the copy was taken
	Capacity      int              // seats now: Config.Capacity, SetCapacity's or the adaptive limit rounded
	DryRun        bool             // SetDryRun: decisions are counted, not enforced
	InUse         int              // seats held, by running jobs of every type and tier
	Queued        int              // jobs waiting, foreground and background
	SystemVirtual float64          // V_sys, seconds
	Types         []TypeSnapshot   // by name
	Tiers         []TierSnapshot   // by priority, highest first
	Keys          []KeySnapshot    // active keys, most queued first, at most SnapshotMaxKeys
	ActiveKeys    int              // active keys in all; Keys shows min(ActiveKeys, SnapshotMaxKeys)
	Queue         []QueuedSnapshot // queued jobs in dispatch order at Time, at most SnapshotMaxQueue
	Counters      Counters
	CostStore     CostStoreSnapshot // WithCostStore; the zero value without one
	Adaptive      *AdaptiveSnapshot // adaptive capacity's state; nil = fixed capacity
}

// Bounds on the per-key and per-job parts of a Snapshot.
const (
	SnapshotMaxKeys  = 32
	SnapshotMaxQueue = 100
)

// TypeSnapshot describes one job type.
type TypeSnapshot struct {
	Type            JobType
	Config          JobTypeConfig
	Running, Queued int
	// Limit is the type's running-job cap now (Config.MaxConcurrency unless
	// SetTypeLimit changed it; 0 = none); Paused says whether Pause holds
	// it, until PausedUntil (zero = until Resume).
	Limit       int
	Paused      bool
	PausedUntil time.Time
	// LearnedCosts counts the tracked cost estimates of this type that have
	// not expired (over all types, at most Config.MaxCostEntries); MeanCost
	// is the mean of those estimates, or Config.DefaultCost when there are
	// none. Expired estimates count as neither: the scheduler uses
	// DefaultCost for them, as for a job ID it has never seen.
	LearnedCosts int
	MeanCost     time.Duration
}

// TierSnapshot describes one base priority.
type TierSnapshot struct {
	Priority Priority
	// Limit is the tier's cap on running jobs: the priority's value, or
	// Config.TierLimits' entry for it.
	Limit, Running, Queued int
}

// KeySnapshot describes one active fairness key.
type KeySnapshot struct {
	Key             string
	Weight          float64
	VirtualTime     float64 // V_k, seconds
	Running, Queued int
	MinSeats        int
	Paused          bool // PauseKey holds it
}

// QueuedSnapshot describes one queued job.
type QueuedSnapshot struct {
	Type              JobType
	JobID             string
	Key               string
	BasePriority      Priority      // its type's, moved by Request.PriorityOffset
	EffectivePriority Priority      // after aging, at Snapshot.Time
	Urgent            bool          // aging made it urgent (AgingConfig.Urgent)
	Wait              time.Duration // time queued until Snapshot.Time
	// BlockedBy says why the job cannot start now even if it were first:
	// "conflict" (its resource is held), "paused", "key cap", "type cap",
	// "tier cap", "pressure" (the pressure gate),
	// or "" when nothing but its place in the order holds it back.
	BlockedBy string
}

// Snapshot returns the current state. It costs
// O(queued · log SnapshotMaxQueue + tracked cost estimates) under the
// scheduler's lock; use it for debugging, not per request.
func (s *Scheduler) Snapshot() Snapshot {
	now := s.lockAt(s.now())
	defer s.mu.Unlock()
	snap := Snapshot{
		Time:          s.timeAt(now),
		Capacity:      s.cfg.Capacity,
		DryRun:        s.dryRun,
		InUse:         s.inUse,
		Queued:        s.queued,
		SystemVirtual: s.vsys,
		Counters:      s.counters,
		CostStore:     s.costStoreSnapshotLocked(),
	}
	if s.adaptive != nil {
		snap.Adaptive = s.adaptive.snapshotLocked(s)
	}
	costs := s.learnedCostsLocked(now)
	for _, t := range s.types {
		c := costs[t.name]
		mean := t.cfg.DefaultCost
		if c.n > 0 {
			mean = time.Duration(math.Round(c.sum / float64(c.n) * float64(time.Second)))
		}
		ts := TypeSnapshot{Type: t.name, Config: t.cfg, Running: t.running, Queued: t.queued,
			Limit: t.limit, Paused: t.paused, LearnedCosts: c.n, MeanCost: mean}
		if t.pause != nil && t.pause.until != 0 {
			ts.PausedUntil = s.timeAt(t.pause.until)
		}
		snap.Types = append(snap.Types, ts)
	}
	slices.SortFunc(snap.Types, func(a, b TypeSnapshot) int { return cmp.Compare(a.Type, b.Type) })
	for _, t := range s.tiers {
		snap.Tiers = append(snap.Tiers, TierSnapshot{Priority: t.prio, Limit: t.cap, Running: t.running, Queued: t.queued})
	}
	slices.SortFunc(snap.Tiers, func(a, b TierSnapshot) int { return cmp.Compare(b.Priority, a.Priority) })

	keys := s.activeKeysLocked()
	snap.ActiveKeys = len(keys)
	slices.SortStableFunc(keys, func(a, b *keyState) int { return cmp.Compare(b.queued, a.queued) })
	for _, k := range keys[:min(len(keys), SnapshotMaxKeys)] {
		snap.Keys = append(snap.Keys, KeySnapshot{Key: k.name, Weight: k.w, VirtualTime: k.v,
			Running: k.running, Queued: k.queued, MinSeats: k.policy.MinSeats, Paused: k.paused})
	}
	snap.Queue = s.queueOrderLocked(keys, now)
	return snap
}

// costSum accumulates the unexpired cost estimates of one job type.
type costSum struct {
	n   int
	sum float64 // seconds
}

// learnedCostsLocked sums the unexpired cost estimates per job type, in one
// pass over the cost LRU (bounded by Config.MaxCostEntries). Keys and Values
// list the entries in the same order (oldest to newest) and leave the LRU's
// recency alone: looking must not change what is forgotten next.
func (s *Scheduler) learnedCostsLocked(now int64) map[JobType]costSum {
	sums := make(map[JobType]costSum, len(s.types))
	keys, vals := s.costs.Keys(), s.costs.Values()
	for i, e := range vals {
		if sinceNs(now, e.at) > s.cfg.CostTTL {
			continue
		}
		c := sums[keys[i].typ]
		c.n++
		c.sum += e.est
		sums[keys[i].typ] = c
	}
	return sums
}

// queuedEntry pairs a queued job with its rank at the snapshot instant.
type queuedEntry struct {
	j   *job
	r   rank
	idx int
}

// beforeAt is the dispatch order of two queued jobs at one instant (the
// comparison lessKey makes between flow heads, for any jobs).
func beforeAt(a, b queuedEntry) bool {
	if a.r.urgent != b.r.urgent {
		return a.r.urgent
	}
	if !a.r.urgent {
		if a.r.eff != b.r.eff {
			return a.r.eff > b.r.eff
		}
		if ma, mb := a.j.key.belowMin(), b.j.key.belowMin(); ma != mb {
			return ma
		}
		if a.j.key.v != b.j.key.v {
			return a.j.key.v < b.j.key.v
		}
	}
	ka, kb := jobAgeKey(a.j), jobAgeKey(b.j)
	return lessJobKey(ka, kb)
}

// keptOrder orders the entries kept by queueOrderLocked worst first (a
// ringheap.Order).
type keptOrder struct{}

func (keptOrder) Key(e *queuedEntry) *queuedEntry { return e }
func (keptOrder) Less(a, b *queuedEntry) bool     { return beforeAt(*b, *a) }
func (keptOrder) Index(e *queuedEntry) *int       { return &e.idx }

// queueOrderLocked ranks every queued job at now and keeps the first
// SnapshotMaxQueue in a bounded heap whose top is the worst kept entry, so
// the cost is O(n log SnapshotMaxQueue).
func (s *Scheduler) queueOrderLocked(keys []*keyState, now int64) []QueuedSnapshot {
	var kept ringheap.Heap[*queuedEntry, *queuedEntry, keptOrder]
	for _, k := range keys {
		for j := k.head; j != nil; j = j.next {
			e := &queuedEntry{j: j, r: s.rankLocked(j, now)}
			switch {
			case kept.Len() < SnapshotMaxQueue:
				kept.Push(e)
			case beforeAt(*e, *kept.Top()):
				kept.Pop()
				kept.Push(e)
			}
		}
	}
	out := make([]QueuedSnapshot, kept.Len())
	for i := len(out) - 1; i >= 0; i-- {
		j, r := kept.Top().j, kept.Pop().r
		out[i] = QueuedSnapshot{
			Type: j.typ.name, JobID: j.jobID, Key: j.key.name,
			BasePriority: j.prio, EffectivePriority: r.eff, Urgent: r.urgent,
			Wait: sinceNs(now, j.enqueued), BlockedBy: s.blockedByLocked(j, r, now),
		}
	}
	return out
}

// conflictHoldsLocked reports whether j's resource would not admit it now.
func (s *Scheduler) conflictHoldsLocked(j *job, now int64) bool {
	r := s.resourceLocked(j)
	if r == nil {
		return false
	}
	if j.typ.cfg.Access == Shared && r.excl == 0 && r.xwait > 0 && j.flow.jobs.Top() != j {
		return false // a shared job behind its flow's head: its head is what meets the waiting writers
	}
	return !s.admitsLocked(r, j, now)
}

func (s *Scheduler) blockedByLocked(j *job, r rank, now int64) string {
	switch {
	case j.state == jobParked:
		return "conflict"
	case s.conflictHoldsLocked(j, now):
		return "conflict"
	case j.typ.paused || j.key.paused:
		return "paused"
	case j.key.capped:
		return "key cap"
	case j.typ.blocked():
		return "type cap"
	case !r.urgent && j.typ.tier.running >= j.typ.tier.cap:
		return "tier cap"
	case s.pressureHolds(r.eff):
		return "pressure"
	}
	return ""
}

func sortKeys(ks []*keyState) {
	slices.SortFunc(ks, func(a, b *keyState) int { return cmp.Compare(a.name, b.name) })
}
