package admission

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"
)

// CostEstimate is one learned cost, as a [CostStore] keeps it: the estimate
// in seconds of the job type and job ID, and when it was last observed
// (wall clock). The zero value is not a valid estimate (its type is empty).
// It is a plain value.
type CostEstimate struct {
	Type     JobType
	JobID    string
	Seconds  float64
	Observed time.Time
}

// A CostStore keeps learned cost estimates across restarts (see
// [WithCostStore]). The scheduler calls Load once, in New, and Save from a
// timer and once more in Close, never two calls at once.
//
// Load returns every estimate it has, or an error and no estimate: a
// store must never hand out part of a damaged list. A store with nothing
// in it (a first start) returns no estimate and a nil error. Save replaces
// what the store holds with the estimates given; it must not keep the slice
// after it returns. Both must honour ctx: Close waits for a running Save.
type CostStore interface {
	Load(ctx context.Context) ([]CostEstimate, error)
	Save(ctx context.Context, estimates []CostEstimate) error
}

// A CapacityStore is a [CostStore] that also keeps adaptive capacity's
// limit across restarts; [FileCostStore] is one. With Config.Adaptive set,
// New calls LoadCapacity just after Load, and each save calls SaveCapacity
// just after Save, with the same context, which both must honour as Load
// and Save do, and never two calls at once; a scheduler of fixed capacity
// calls neither.
//
// LoadCapacity returns the last limit saved, or 0 and a nil error if none
// was (a first start). New then starts the limit there, within [Min, Max]
// (the bounds may have changed since), instead of at AdaptiveConfig.Initial:
// a restarted server takes up its work where the last process had settled,
// not at Min (the package doc, "Warm restarts", says what that was measured
// to save). SaveCapacity is given the limit in seats, as it was before a
// running probe halved it. A failure of either is one of the store's
// (Counters.CostLoadFailures, CostSaveFailures).
type CapacityStore interface {
	CostStore
	LoadCapacity(ctx context.Context) (int, error)
	SaveCapacity(ctx context.Context, limit int) error
}

// Defaults and bounds of [WithCostStore].
const (
	// DefaultCostSaveInterval is the interval between saves when
	// WithCostStore is given 0.
	DefaultCostSaveInterval = time.Minute
	// CostStoreTimeout bounds the Load in New and each periodic Save (their
	// context's deadline). The Save in Close uses Close's context.
	CostStoreTimeout = 10 * time.Second
)

// WithCostStore makes learned costs survive a restart: New loads the
// estimates of store before it returns (so before the first admission),
// and the scheduler saves them to store every interval (0 =
// [DefaultCostSaveInterval]; negative is an invalid config) and once more
// at Close. A nil store means no store. With Config.Adaptive set, a store
// that is a [CapacityStore] (as FileCostStore is) keeps the limit too.
//
// A store that fails never stops the scheduler: a failed Load leaves it
// cold (every job charged its type's DefaultCost until observed), a failed
// Save leaves the store as it was until the next one; each failure is
// logged as a warning with the WithLogger logger and counted
// (Counters.CostLoadFailures, CostSaveFailures; metric
// fairseat.cost.store.failures). The package doc ("Warm restarts") says
// which loaded estimates are used and how a save holds the lock.
func WithCostStore(store CostStore, every time.Duration) Option {
	return optionFunc(func(o *options) { o.costStore, o.costEvery = store, every })
}

// costStoreState is the scheduler's side of WithCostStore. The first three
// fields never change after New; the rest are guarded by Scheduler.mu.
type costStoreState struct {
	store CostStore
	every time.Duration
	timer *time.Timer // runs saveCostsOnTimer; armed in New and after each timer's save, stopped by Close

	// aside holds the loaded estimates of job types not registered yet, by
	// type, each list oldest first; RegisterType moves a type's list into
	// the cost LRU. No type in aside is in Scheduler.types. asideN is the
	// number of estimates in aside, at most cfg.MaxCostEntries.
	aside  map[JobType][]asideCost
	asideN int
	// done is non-nil from a timer's copy to the end of its Save, and
	// closed then; cancel (non-nil with done) cancels that Save's context,
	// which Close does when its own context ends while it waits.
	done   chan struct{}
	cancel context.CancelFunc
	last   CostStoreSnapshot // LastSave* fields
	loaded int               // CostStoreSnapshot.LoadedCapacity; set in New only
}

// asideCost is a loaded estimate waiting for its type (costStoreState.aside).
type asideCost struct {
	id  string
	est float64 // seconds
	at  int64   // last observation, an instant (see Scheduler.now), > 0
}

// CostStoreSnapshot describes the [WithCostStore] persistence in a
// [Snapshot]. The zero value means no store is configured. It is a plain
// value.
type CostStoreSnapshot struct {
	Every time.Duration // interval between saves; 0 = no CostStore
	// Aside counts loaded estimates whose job type is not registered yet.
	Aside int
	// LastSave is when the last save (by the timer or by Close) ended, zero
	// before the first; LastSaveDuration is how long it took, the copy
	// under the lock and the store's Save together; LastSaveEntries the
	// estimates it handed to the store; LastSaveError its error ("" if it
	// succeeded).
	LastSave         time.Time
	LastSaveDuration time.Duration
	LastSaveEntries  int
	LastSaveError    string
	// LoadedCapacity is the adaptive limit New started from, loaded from a
	// CapacityStore and brought within [Min, Max]; 0 if none was loaded.
	LoadedCapacity int
}

func validateCostStore(o *options) error {
	if o.costEvery < 0 {
		return fmt.Errorf("%w: WithCostStore: every must be >= 0, got %v", ErrInvalidConfig, o.costEvery)
	}
	return nil
}

// startCostStore loads the store's estimates into s.store.aside and arms
// the save timer (the end of New).
func (s *Scheduler) startCostStore(store CostStore, every time.Duration) {
	if every == 0 {
		every = DefaultCostSaveInterval
	}
	cs := &costStoreState{store: store, every: every, aside: map[JobType][]asideCost{}}
	s.store = cs
	ctx, cancel := context.WithTimeout(context.Background(), CostStoreTimeout)
	ests, err := loadCosts(ctx, store)
	limit, limitErr := s.loadCapacity(ctx, store)
	cancel()
	now := s.lockAt(s.now())
	if err != nil {
		s.counters.CostLoadFailures++
	} else {
		s.keepAsideLocked(ests, now)
	}
	if limitErr != nil {
		s.counters.CostLoadFailures++
	} else if limit > 0 {
		s.restoreLimitLocked(limit)
	}
	cs.timer = s.afterFunc(every, s.saveCostsOnTimer)
	s.mu.Unlock()
	if err != nil {
		s.log.Warn("admission: cost store load failed; starting with no learned costs", "err", err)
	}
	if limitErr != nil {
		s.log.Warn("admission: cost store: loading the adaptive limit failed; starting at AdaptiveConfig.Initial", "err", limitErr)
	}
}

// recoverStore, deferred by a call to a store's method, turns a panic of
// the method into *err.
func recoverStore(method string, err *error) {
	if v := recover(); v != nil {
		*err = fmt.Errorf("admission: %s panicked: %v", method, v)
	}
}

// loadCosts calls store.Load, turning a panic into an error.
func loadCosts(ctx context.Context, store CostStore) (ests []CostEstimate, err error) {
	defer recoverStore("CostStore.Load", &err)
	return store.Load(ctx)
}

// loadCapacity calls store's LoadCapacity if it is a CapacityStore and the
// capacity is adaptive (0 and nil otherwise), turning a panic or a
// negative limit into an error.
func (s *Scheduler) loadCapacity(ctx context.Context, store CostStore) (limit int, err error) {
	cs, ok := store.(CapacityStore)
	if !ok || s.adaptive == nil {
		return 0, nil
	}
	defer recoverStore("CapacityStore.LoadCapacity", &err)
	if limit, err = cs.LoadCapacity(ctx); err == nil && limit < 0 {
		return 0, fmt.Errorf("admission: CapacityStore.LoadCapacity returned %d, want 0 (none saved) or a limit of at least 1", limit)
	}
	return limit, err
}

// restoreLimitLocked starts adaptive capacity at limit, a loaded one,
// within the bounds, instead of at Initial. New calls it before it
// returns, so before any admission or sample.
func (s *Scheduler) restoreLimitLocked(limit int) {
	c := s.adaptive.cfg
	c.Initial = min(c.Max, max(c.Min, limit))
	s.adaptive = newAdaptive(c)
	s.cfg.Capacity = c.Initial
	s.store.loaded = c.Initial
}

// keepAsideLocked files loaded estimates in aside. It skips (and counts in
// CostEntriesSkipped) an estimate that is invalid (empty type, a cost that
// is not a finite number >= 0, no observation time), expired (older than
// CostTTL), a duplicate of a newer one, or beyond the MaxCostEntries newest.
// An observation time in the future (another host's clock) reads as now.
func (s *Scheduler) keepAsideLocked(ests []CostEstimate, now int64) {
	newest := make(map[costKey]asideCost, min(len(ests), s.cfg.MaxCostEntries))
	skipped := 0
	unixEpoch, nowT := time.Unix(0, 0), time.Unix(0, now)
	for _, e := range ests {
		if e.Type == "" || math.IsNaN(e.Seconds) || math.IsInf(e.Seconds, 0) || e.Seconds < 0 ||
			!e.Observed.After(unixEpoch) {
			skipped++
			continue
		}
		at := now
		if e.Observed.Before(nowT) {
			at = e.Observed.UnixNano()
		}
		if sinceNs(now, at) > s.cfg.CostTTL {
			skipped++
			continue
		}
		k := costKey{e.Type, foldIdentifier(e.JobID)}
		if old, ok := newest[k]; ok {
			skipped++
			if old.at >= at {
				continue
			}
		}
		newest[k] = asideCost{id: k.id, est: e.Seconds, at: at}
	}
	type loaded struct {
		typ JobType
		c   asideCost
	}
	all := make([]loaded, 0, len(newest))
	for k, c := range newest {
		all = append(all, loaded{k.typ, c})
	}
	// Oldest first (ties by key, so the order is reproducible): RegisterType
	// adds a type's list in this order, which leaves the newest estimate at
	// the LRU's front.
	slices.SortFunc(all, func(a, b loaded) int {
		return cmp.Or(cmp.Compare(a.c.at, b.c.at), cmp.Compare(a.typ, b.typ), cmp.Compare(a.c.id, b.c.id))
	})
	if over := len(all) - s.cfg.MaxCostEntries; over > 0 {
		skipped += over
		all = all[over:]
	}
	cs := s.store
	for _, l := range all {
		cs.aside[l.typ] = append(cs.aside[l.typ], l.c)
	}
	cs.asideN = len(all)
	s.counters.CostEntriesSkipped += uint64(skipped)
}

// adoptCostsLocked makes the loaded estimates of t, a type RegisterType has
// just added, learned estimates, oldest first, while the cost LRU has room:
// a loaded estimate never evicts one learned since New. Those that expired
// since New or find no room are skipped.
func (s *Scheduler) adoptCostsLocked(t *typeState, now int64) {
	cs := s.store
	if cs == nil || cs.asideN == 0 {
		return
	}
	list, ok := cs.aside[t.name]
	if !ok {
		return
	}
	delete(cs.aside, t.name)
	cs.asideN -= len(list)
	for _, c := range list {
		if sinceNs(now, c.at) > s.cfg.CostTTL || s.costs.Len() >= s.cfg.MaxCostEntries {
			s.counters.CostEntriesSkipped++
			continue
		}
		e := &costEntry{key: costKey{t.name, c.id}, est: c.est, at: c.at}
		s.costs.Add(e.key, e) // t is new: no entry of it is tracked, and there is room, so nothing is evicted
		s.costsFront = e
		s.costAddedLocked(t, e)
		s.counters.CostEntriesLoaded++
	}
}

// copyCostsLocked is what a save writes: every unexpired estimate, those
// kept aside for unregistered types first (by type name), then the tracked
// ones from the oldest to the newest. It costs O(entries) and allocates the
// result and the LRU's list of entries; it calls no store, hook or handler.
func (s *Scheduler) copyCostsLocked(now int64) []CostEstimate {
	cs := s.store
	entries := s.costs.Values() // oldest to newest, without touching recency
	out := make([]CostEstimate, 0, len(entries)+cs.asideN)
	ttl := s.cfg.CostTTL
	if cs.asideN > 0 {
		for _, typ := range slices.Sorted(maps.Keys(cs.aside)) {
			for _, c := range cs.aside[typ] {
				if sinceNs(now, c.at) <= ttl {
					out = append(out, CostEstimate{Type: typ, JobID: c.id, Seconds: c.est, Observed: time.Unix(0, c.at).UTC()})
				}
			}
		}
	}
	for _, e := range entries {
		if sinceNs(now, e.at) <= ttl {
			out = append(out, CostEstimate{Type: e.key.typ, JobID: e.key.id, Seconds: e.est, Observed: time.Unix(0, e.at).UTC()})
		}
	}
	return out
}

// saveCostsOnTimer is the save timer's function. It starts no save once
// Close has begun (Close makes the last one), copies under the lock, saves
// outside it, and re-arms the timer unless Close has begun meanwhile.
func (s *Scheduler) saveCostsOnTimer() {
	start := s.lockAt(s.now())
	cs := s.store
	if s.closing {
		s.mu.Unlock()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), CostStoreTimeout)
	done := make(chan struct{})
	cs.done, cs.cancel = done, cancel
	ests, limit := s.copyCostsLocked(start), s.savedLimitLocked()
	s.mu.Unlock()

	err := saveCosts(ctx, cs.store, ests, limit)
	cancel()
	end := s.now()
	s.warnSave(err, "") // before the save counts as done: a Close waiting for it finds it logged

	end = s.lockAt(end)
	s.savedLocked(len(ests), start, end, err)
	cs.done, cs.cancel = nil, nil
	if !s.closing {
		cs.timer.Reset(cs.every)
	}
	s.mu.Unlock()
	close(done)
}

// saveCostsAtClose makes the last save, with Close's ctx, after the
// background drain: it stops the timer, waits for a save the timer started
// (cancelling it if ctx ends first), then saves once more. Nothing saves
// after it returns.
func (s *Scheduler) saveCostsAtClose(ctx context.Context) {
	cs := s.store
	if cs == nil {
		return
	}
	s.mu.Lock()
	cs.timer.Stop() // Close has set closing: a timer that fires anyway starts no save
	done, cancel := cs.done, cs.cancel
	s.mu.Unlock()
	if done != nil {
		select {
		case <-done:
		case <-ctx.Done():
			cancel()
			<-done // the store honours its context (CostStore)
		}
	}
	start := s.lockAt(s.now())
	ests, limit := s.copyCostsLocked(start), s.savedLimitLocked()
	s.mu.Unlock()

	err := saveCosts(ctx, cs.store, ests, limit)

	end := s.lockAt(s.now())
	s.savedLocked(len(ests), start, end, err)
	s.mu.Unlock()
	s.warnSave(err, " at Close")
}

// saveCosts calls store.Save, and then, if limit > 0, store's SaveCapacity
// (limit is 0 unless the capacity is adaptive), even if Save failed: the
// two are independent. It turns a panic into an error, and returns the
// errors of both.
func saveCosts(ctx context.Context, store CostStore, ests []CostEstimate, limit int) error {
	err := func() (err error) {
		defer recoverStore("CostStore.Save", &err)
		return store.Save(ctx, ests)
	}()
	if cs, ok := store.(CapacityStore); ok && limit > 0 {
		err = errors.Join(err, func() (err error) {
			defer recoverStore("CapacityStore.SaveCapacity", &err)
			return cs.SaveCapacity(ctx, limit)
		}())
	}
	return err
}

// savedLimitLocked is the limit a save hands to a CapacityStore: the
// adaptive limit in seats, as it was before a running probe halved it; 0
// if the capacity is fixed.
func (s *Scheduler) savedLimitLocked() int {
	a := s.adaptive
	if a == nil {
		return 0
	}
	return a.seatsOf(a.unprobed())
}

// savedLocked records the outcome of a save of n estimates that ran from
// instant start to end.
func (s *Scheduler) savedLocked(n int, start, end int64, err error) {
	s.store.last = CostStoreSnapshot{LastSave: s.timeAt(end), LastSaveDuration: sinceNs(end, start), LastSaveEntries: n}
	if err != nil {
		s.store.last.LastSaveError = err.Error()
		s.counters.CostSaveFailures++
		return
	}
	s.counters.CostSaves++
	s.counters.CostEntriesSaved += uint64(n)
}

func (s *Scheduler) warnSave(err error, when string) {
	if err != nil {
		s.log.Warn("admission: cost store save failed"+when+"; the store keeps its previous estimates", "err", err)
	}
}

// costStoreSnapshotLocked is the Snapshot's CostStore part.
func (s *Scheduler) costStoreSnapshotLocked() CostStoreSnapshot {
	cs := s.store
	if cs == nil {
		return CostStoreSnapshot{}
	}
	snap := cs.last
	snap.Every, snap.Aside, snap.LoadedCapacity = cs.every, cs.asideN, cs.loaded
	return snap
}
