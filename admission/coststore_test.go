package admission

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// checkCostStoreLocked verifies the invariants written on costStoreState
// (checkInvariantsLocked).
func (s *Scheduler) checkCostStoreLocked() error {
	cs := s.store
	if cs == nil {
		return nil
	}
	n := 0
	for typ, list := range cs.aside {
		if _, ok := s.types[typ]; ok {
			return fmt.Errorf("cost store: registered type %q still has %d estimates aside", typ, len(list))
		}
		for i, c := range list {
			if c.at <= 0 || (i > 0 && list[i-1].at > c.at) {
				return fmt.Errorf("cost store: aside estimates of %q not oldest first with positive times: %+v", typ, list)
			}
		}
		n += len(list)
	}
	if n != cs.asideN || n > s.cfg.MaxCostEntries {
		return fmt.Errorf("cost store: asideN %d, counted %d, MaxCostEntries %d", cs.asideN, n, s.cfg.MaxCostEntries)
	}
	if (cs.done == nil) != (cs.cancel == nil) {
		return fmt.Errorf("cost store: done %v and cancel set %v disagree", cs.done, cs.cancel != nil)
	}
	return nil
}

// logBuffer collects log output from any goroutine.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(b, nil)) }

// cloneType is the job type of the cost store tests: a foreground clone
// whose DefaultCost is 5 s.
var cloneType = JobTypeConfig{DefaultCost: 5 * time.Second, Priority: PriorityForeground}

// newStoreScheduler returns a scheduler with store, saving every interval,
// with type "clone" registered; logs go to the returned buffer.
func newStoreScheduler(t *testing.T, cfg Config, store CostStore, every time.Duration) (*Scheduler, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	s, err := New(cfg, WithLogger(logs.logger()), WithCostStore(store, every))
	must(t, err)
	must(t, s.RegisterType("clone", cloneType))
	checkInvariants(t, s)
	return s, logs
}

// runFor runs one job of type clone for d (in a synctest bubble, fake time).
func runFor(t *testing.T, s *Scheduler, id, key string, d time.Duration) {
	t.Helper()
	must(t, s.RunSync(t.Context(), "clone", id, key, func(context.Context) error {
		time.Sleep(d)
		return nil
	}))
}

// typeSnap returns the Snapshot's entry for type name.
func typeSnap(t *testing.T, snap Snapshot, name JobType) TypeSnapshot {
	t.Helper()
	for _, ts := range snap.Types {
		if ts.Type == name {
			return ts
		}
	}
	t.Fatalf("type %q not in the snapshot %+v", name, snap.Types)
	return TypeSnapshot{}
}

// keyV returns the virtual time of key in the Snapshot.
func keyV(t *testing.T, snap Snapshot, key string) float64 {
	t.Helper()
	for _, k := range snap.Keys {
		if k.Key == key {
			return k.VirtualTime
		}
	}
	t.Fatalf("key %q not active in the snapshot %+v", key, snap.Keys)
	return 0
}

// wantStoreCounters checks the cost store counters of s.
func wantStoreCounters(t *testing.T, s *Scheduler, loaded, skipped, saves, loadFail, saveFail uint64) {
	t.Helper()
	snap := s.Snapshot()
	c := snap.Counters
	if c.CostEntriesLoaded != loaded || c.CostEntriesSkipped != skipped || c.CostSaves != saves ||
		c.CostLoadFailures != loadFail || c.CostSaveFailures != saveFail {
		t.Fatalf("cost store counters: loaded %d skipped %d saves %d (%d estimates) load failures %d save failures %d;\n"+
			"want loaded %d skipped %d saves %d load failures %d save failures %d (store %+v)",
			c.CostEntriesLoaded, c.CostEntriesSkipped, c.CostSaves, c.CostEntriesSaved, c.CostLoadFailures, c.CostSaveFailures,
			loaded, skipped, saves, loadFail, saveFail, snap.CostStore)
	}
}

// TestCostStoreWarmRestart is the whole story: costs learned in one life of
// the scheduler are saved at Close, loaded by the next New on the same file,
// and the first admission of a learned job is charged its learned cost —
// in V_k, and so in the order of two callers — where a cold start charges
// DefaultCost.
func TestCostStoreWarmRestart(t *testing.T) {
	for _, warm := range []bool{true, false} {
		t.Run(fmt.Sprint("warm=", warm), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "costs")
				cfg := Config{Capacity: 3, CostAlpha: 1} // α = 1: the estimate is the last observation

				// First life: learn that linux costs 60 s and small 2 s.
				s, _ := newStoreScheduler(t, cfg, FileCostStore(path), time.Hour)
				runFor(t, s, "linux", "k", 60*time.Second)
				runFor(t, s, "small", "k", 2*time.Second)
				must(t, s.Close(t.Context()))
				wantStoreCounters(t, s, 0, 0, 1, 0, 0)
				if !warm {
					must(t, os.Remove(path))
				}

				// Second life.
				s, logs := newStoreScheduler(t, cfg, FileCostStore(path), time.Hour)
				defer func() { must(t, s.Close(t.Context())) }()
				wantLearned, wantMean := 0, cloneType.DefaultCost
				if warm {
					wantLearned, wantMean = 2, 31*time.Second
					wantStoreCounters(t, s, 2, 0, 0, 0, 0)
				} else {
					wantStoreCounters(t, s, 0, 0, 0, 0, 0) // a missing file is a cold start, not a failure
				}
				if got := typeSnap(t, s.Snapshot(), "clone"); got.LearnedCosts != wantLearned || got.MeanCost != wantMean {
					t.Fatalf("before the first admission: %d learned costs, mean %v; want %d, %v", got.LearnedCosts, got.MeanCost, wantLearned, wantMean)
				}
				if l := logs.String(); l != "" {
					t.Fatalf("unexpected log output: %s", l)
				}

				// First admissions: a clones linux, b clones small; a third
				// caller holds the last seat.
				pa, err := s.Acquire(t.Context(), Request{Type: "clone", JobID: "linux", FairnessKey: "a"})
				must(t, err)
				pb, err := s.Acquire(t.Context(), Request{Type: "clone", JobID: "small", FairnessKey: "b"})
				must(t, err)
				ph, err := s.Acquire(t.Context(), Request{Type: "clone", JobID: "other", FairnessKey: "h"})
				must(t, err)
				snap := s.Snapshot()
				wantA, wantB := 5.0, 5.0 // DefaultCost
				if warm {
					wantA, wantB = 60, 2
				}
				if va, vb := keyV(t, snap, "a"), keyV(t, snap, "b"); va != wantA || vb != wantB {
					t.Fatalf("V_a = %v, V_b = %v after their first admissions, want %v and %v", va, vb, wantA, wantB)
				}

				// Then both queue again, a first; the next free seat goes to
				// the key with the lower V_k (b when warm), or by arrival
				// (a) when both were charged DefaultCost.
				order := make(chan string, 2)
				var wg sync.WaitGroup
				for _, k := range []string{"a", "b"} {
					wg.Go(func() {
						p, err := s.Acquire(t.Context(), Request{Type: "clone", JobID: "next-" + k, FairnessKey: k})
						if err != nil {
							t.Error(err)
							return
						}
						order <- k
						p.Release()
					})
					synctest.Wait()
				}
				ph.Release()
				wg.Wait()
				first := <-order
				if want := map[bool]string{true: "b", false: "a"}[warm]; first != want {
					t.Fatalf("the freed seat went to %q first, want %q", first, want)
				}
				pa.Release()
				pb.Release()
				checkInvariants(t, s)
			})
		})
	}
}

// TestCostStorePeriodicSave: the timer saves every interval, re-armed after
// each save, and Close saves once more; nothing saves after Close.
func TestCostStorePeriodicSave(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "costs")
		s, _ := newStoreScheduler(t, Config{Capacity: 1, CostAlpha: 1}, FileCostStore(path), time.Minute)
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("a file exists before the first save: %v", err)
		}
		runFor(t, s, "linux", "k", 30*time.Second)
		time.Sleep(30*time.Second + time.Millisecond) // the first save, at 1 min
		synctest.Wait()
		wantStoreCounters(t, s, 0, 0, 1, 0, 0)
		got := loadFile(t, path)
		if len(got) != 1 || got[0].Type != "clone" || got[0].JobID != "linux" || got[0].Seconds != 30 {
			t.Fatalf("after the first save the file holds %+v", got)
		}
		st := s.Snapshot().CostStore
		if st.Every != time.Minute || st.LastSaveEntries != 1 || st.LastSaveError != "" || st.LastSave.IsZero() {
			t.Fatalf("CostStore snapshot %+v", st)
		}

		runFor(t, s, "small", "k", 10*time.Second)
		time.Sleep(50 * time.Second) // the second save, at 2 min
		synctest.Wait()
		wantStoreCounters(t, s, 0, 0, 2, 0, 0)
		if got := loadFile(t, path); len(got) != 2 {
			t.Fatalf("after the second save the file holds %+v", got)
		}
		must(t, s.Close(t.Context()))
		wantStoreCounters(t, s, 0, 0, 3, 0, 0)
		if c := s.Snapshot().Counters; c.CostEntriesSaved != 1+2+2 {
			t.Fatalf("CostEntriesSaved = %d, want 5", c.CostEntriesSaved)
		}
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		wantStoreCounters(t, s, 0, 0, 3, 0, 0)
	})
}

func loadFile(t *testing.T, path string) []CostEstimate {
	t.Helper()
	ests, err := FileCostStore(path).Load(t.Context())
	must(t, err)
	return ests
}

// gateStore is a CostStore whose Saves block until released (or their
// context ends), and which records what it was asked.
type gateStore struct {
	loads   []CostEstimate
	release chan struct{} // a Save waits for a receive from it; nil: Saves return at once

	mu               sync.Mutex
	entered          chan struct{} // signalled by every Save as it starts
	saves, inFlight  int
	maxInFlight      int
	errs             []error
	saved            []CostEstimate // a copy of the last Save's estimates
	panicLoad, panic bool
	fail             error // returned by Save when set
}

func (g *gateStore) setFail(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.fail = err
}

func (g *gateStore) lastSaved() []CostEstimate {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.saved
}

func newGateStore(blocking bool) *gateStore {
	g := &gateStore{entered: make(chan struct{}, 100)}
	if blocking {
		g.release = make(chan struct{})
	}
	return g
}

func (g *gateStore) Load(ctx context.Context) ([]CostEstimate, error) {
	if g.panicLoad {
		panic("load exploded")
	}
	return g.loads, nil
}

func (g *gateStore) Save(ctx context.Context, ests []CostEstimate) error {
	g.mu.Lock()
	g.saves++
	g.inFlight++
	g.maxInFlight = max(g.maxInFlight, g.inFlight)
	g.saved = slices.Clone(ests)
	g.mu.Unlock()
	g.entered <- struct{}{}
	var err error
	if g.panic {
		panic("save exploded")
	}
	if g.release != nil {
		select {
		case <-g.release:
		case <-ctx.Done():
			err = ctx.Err()
		}
	} else {
		err = ctx.Err()
	}
	g.mu.Lock()
	g.inFlight--
	if err == nil {
		err = g.fail
	}
	g.errs = append(g.errs, err)
	g.mu.Unlock()
	return err
}

func (g *gateStore) stats() (saves, maxInFlight int, errs []error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.saves, g.maxInFlight, append([]error(nil), g.errs...)
}

// TestCostStoreCloseWaitsForSave: a Close that begins while the timer's
// save runs waits for it, then saves once more; the saves never overlap and
// none starts after Close returns.
func TestCostStoreCloseWaitsForSave(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGateStore(true)
		s, _ := newStoreScheduler(t, Config{Capacity: 1}, g, time.Minute)
		time.Sleep(time.Minute)
		<-g.entered // the timer's save is running, blocked
		closed := make(chan error, 1)
		go func() { closed <- s.Close(context.Background()) }()
		synctest.Wait()
		select {
		case err := <-closed:
			t.Fatalf("Close returned (%v) while the timer's save was still running", err)
		default:
		}
		if saves, _, _ := g.stats(); saves != 1 {
			t.Fatalf("%d saves started while the first one runs, want 1", saves)
		}
		g.release <- struct{}{} // the timer's save ends
		<-g.entered             // Close's save starts
		g.release <- struct{}{}
		must(t, <-closed)
		time.Sleep(time.Hour)
		synctest.Wait()
		saves, maxIn, errs := g.stats()
		if saves != 2 || maxIn != 1 || errors.Join(errs...) != nil {
			t.Fatalf("%d saves, at most %d at once, errors %v; want 2, 1, none", saves, maxIn, errs)
		}
		wantStoreCounters(t, s, 0, 0, 2, 0, 0)
	})
}

// TestCostStoreCloseContextEnds: when Close's context ends while the
// timer's save runs, that save is cancelled, Close's own save fails with the
// ended context, both are counted and logged, and Close returns.
func TestCostStoreCloseContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGateStore(true)
		s, logs := newStoreScheduler(t, Config{Capacity: 1}, g, time.Minute)
		time.Sleep(time.Minute)
		<-g.entered
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		start := time.Now()
		must(t, s.Close(ctx)) // no background work: nothing was dropped
		if d := time.Since(start); d != 5*time.Second {
			t.Fatalf("Close took %v, want the 5s of its context", d)
		}
		saves, maxIn, errs := g.stats()
		if saves != 2 || maxIn != 1 || len(errs) != 2 || !errors.Is(errs[0], context.Canceled) || !errors.Is(errs[1], context.DeadlineExceeded) {
			t.Fatalf("%d saves (at most %d at once), errors %v; want 2, 1, [canceled, deadline exceeded]", saves, maxIn, errs)
		}
		wantStoreCounters(t, s, 0, 0, 0, 0, 2)
		if st := s.Snapshot().CostStore; !strings.Contains(st.LastSaveError, "deadline exceeded") {
			t.Fatalf("LastSaveError %q, want the ended context", st.LastSaveError)
		}
		if l := logs.String(); strings.Count(l, "cost store save failed") != 2 || !strings.Contains(l, "save failed at Close") {
			t.Fatalf("want two save warnings, one at Close; log:\n%s", l)
		}
	})
}

// TestCostStorePanics: a store that panics is a failed store, not a crash.
func TestCostStorePanics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGateStore(false)
		g.panicLoad, g.panic = true, true
		s, logs := newStoreScheduler(t, Config{Capacity: 1}, g, time.Minute)
		time.Sleep(time.Minute)
		synctest.Wait()
		must(t, s.Close(t.Context()))
		wantStoreCounters(t, s, 0, 0, 0, 1, 2)
		if l := logs.String(); !strings.Contains(l, "Load panicked: load exploded") || strings.Count(l, "Save panicked: save exploded") != 2 {
			t.Fatalf("log:\n%s", l)
		}
	})
}

// TestCostStoreLoadRules: which loaded estimates become learned costs.
func TestCostStoreLoadRules(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		now := time.Now()
		ago := func(d time.Duration) time.Time { return now.Add(-d) }
		g := newGateStore(false)
		long := strings.Repeat("x", MaxIdentifierLen+1)
		g.loads = []CostEstimate{
			{Type: "clone", JobID: "a", Seconds: 10, Observed: ago(time.Hour)},
			{Type: "clone", JobID: "a", Seconds: 11, Observed: ago(2 * time.Hour)},     // duplicate, older: skipped
			{Type: "clone", JobID: "b", Seconds: 20, Observed: ago(25 * time.Hour)},    // older than CostTTL (24h): skipped
			{Type: "clone", JobID: "c", Seconds: math.NaN(), Observed: ago(time.Hour)}, // invalid: skipped
			{Type: "clone", JobID: "d", Seconds: -1, Observed: ago(time.Hour)},         // invalid: skipped
			{Type: "", JobID: "e", Seconds: 1, Observed: ago(time.Hour)},               // no type: skipped
			{Type: "clone", JobID: "f", Seconds: 1},                                    // no time: skipped
			{Type: "clone", JobID: "future", Seconds: 7, Observed: now.Add(time.Hour)}, // another host's clock: now
			{Type: "clone", JobID: long, Seconds: 8, Observed: ago(time.Minute)},       // folded, as Acquire folds it
			{Type: "repack", JobID: "a", Seconds: 30, Observed: ago(23 * time.Hour)},   // unregistered: aside
			{Type: "repack", JobID: "b", Seconds: 40, Observed: ago(time.Hour)},
		}
		s, _ := newStoreScheduler(t, Config{Capacity: 1}, g, time.Hour)
		defer func() { must(t, s.Close(t.Context())) }()
		wantStoreCounters(t, s, 3, 6, 0, 0, 0)
		if got := typeSnap(t, s.Snapshot(), "clone"); got.LearnedCosts != 3 || got.MeanCost != 25*time.Second/3 {
			t.Fatalf("clone: %d learned, mean %v; want 3 (a, future, the long ID), (10+7+8)/3 s", got.LearnedCosts, got.MeanCost)
		}
		s.mu.Lock()
		est, _ := s.estimateLocked(s.types["clone"], foldIdentifier(long), s.now())
		s.mu.Unlock()
		if est != 8 {
			t.Fatalf("the long job ID's estimate is %v under its folded name, want 8", est)
		}
		if st := s.Snapshot().CostStore; st.Aside != 2 {
			t.Fatalf("Aside = %d, want repack's 2", st.Aside)
		}

		// An hour later repack is registered: its estimate from 23 h ago
		// has expired meanwhile, the other becomes learned.
		time.Sleep(time.Hour + time.Second)
		must(t, s.RegisterType("repack", JobTypeConfig{Priority: PriorityBackground}))
		checkInvariants(t, s)
		wantStoreCounters(t, s, 4, 7, 1, 0, 0) // (and the timer saved once, at 1 h)
		if got := typeSnap(t, s.Snapshot(), "repack"); got.LearnedCosts != 1 || got.MeanCost != 40*time.Second {
			t.Fatalf("repack: %d learned, mean %v; want 1, 40s", got.LearnedCosts, got.MeanCost)
		}
		if st := s.Snapshot().CostStore; st.Aside != 0 {
			t.Fatalf("Aside = %d after repack was registered", st.Aside)
		}
	})
}

// TestCostStoreMaxCostEntries: at most MaxCostEntries loaded estimates are
// kept (the newest), a loaded estimate never evicts one learned since New,
// and estimates still aside are saved again.
func TestCostStoreMaxCostEntries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		now := time.Now()
		g := newGateStore(false)
		for i := range 5 { // clone 0..4, observed 5..1 minutes ago
			g.loads = append(g.loads, CostEstimate{Type: "clone", JobID: fmt.Sprint(i), Seconds: float64(i), Observed: now.Add(-time.Duration(5-i) * time.Minute)})
		}
		g.loads = append(g.loads, CostEstimate{Type: "later", JobID: "x", Seconds: 9, Observed: now.Add(-30 * time.Second)})
		s, _ := newStoreScheduler(t, Config{Capacity: 1, MaxCostEntries: 3, CostAlpha: 1}, g, time.Minute)
		defer func() { must(t, s.Close(t.Context())) }()
		// The 3 newest are clone 3, clone 4 and later/x; clone 0..2 are skipped.
		wantStoreCounters(t, s, 2, 3, 0, 0, 0)
		if st := s.Snapshot().CostStore; st.Aside != 1 {
			t.Fatalf("Aside = %d, want later's 1", st.Aside)
		}
		runFor(t, s, "new", "k", time.Second) // the LRU is full now: 3, 4, new
		time.Sleep(time.Minute - time.Second)
		synctest.Wait()
		saved := g.lastSaved()
		var got []string
		for _, e := range saved {
			got = append(got, fmt.Sprintf("%s/%s=%v", e.Type, e.JobID, e.Seconds))
		}
		if want := []string{"later/x=9", "clone/3=3", "clone/4=4", "clone/new=1"}; !slices.Equal(got, want) {
			t.Fatalf("saved %q, want %q (aside first, then oldest to newest)", got, want)
		}
		must(t, s.RegisterType("later", JobTypeConfig{Priority: PriorityBackground}))
		checkInvariants(t, s)
		wantStoreCounters(t, s, 2, 4, 1, 0, 0) // no room for later/x: skipped
		if got := typeSnap(t, s.Snapshot(), "clone"); got.LearnedCosts != 3 {
			t.Fatalf("clone has %d learned costs, want its 3 (none evicted)", got.LearnedCosts)
		}
	})
}

// TestCostStoreInvalidOption: a negative interval is an invalid config
// naming the option; a nil store is no store.
func TestCostStoreInvalidOption(t *testing.T) {
	_, err := New(Config{Capacity: 1}, WithCostStore(newGateStore(false), -time.Second))
	if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "WithCostStore: every") {
		t.Fatalf("New with a negative interval: %v", err)
	}
	s, err := New(Config{Capacity: 1}, WithCostStore(nil, time.Second))
	must(t, err)
	if st := s.Snapshot().CostStore; st != (CostStoreSnapshot{}) {
		t.Fatalf("a nil store is configured: %+v", st)
	}
	must(t, s.Close(t.Context()))
	s, err = New(Config{Capacity: 1}, WithCostStore(newGateStore(false), 0))
	must(t, err)
	if st := s.Snapshot().CostStore; st.Every != DefaultCostSaveInterval {
		t.Fatalf("interval 0 gives %v, want DefaultCostSaveInterval", st.Every)
	}
	must(t, s.Close(t.Context()))
}

// capStore is a CapacityStore in memory: no estimates, a limit, and
// failures or panics on demand. It counts the calls of its capacity
// methods.
type capStore struct {
	mu                   sync.Mutex
	limit                int
	loadErr, saveErr     error
	saveCostsErr         error
	panicLoad, panicSave bool
	capLoads, capSaves   int
	saved                []int
}

func (c *capStore) Load(context.Context) ([]CostEstimate, error) { return nil, nil }

func (c *capStore) Save(context.Context, []CostEstimate) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.saveCostsErr
}

func (c *capStore) LoadCapacity(context.Context) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.capLoads++
	if c.panicLoad {
		panic("capacity load exploded")
	}
	return c.limit, c.loadErr
}

func (c *capStore) SaveCapacity(_ context.Context, limit int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.capSaves++
	if c.panicSave {
		panic("capacity save exploded")
	}
	if c.saveErr != nil {
		return c.saveErr
	}
	c.limit = limit
	c.saved = append(c.saved, limit)
	return nil
}

// TestCostStoreCapacity: an adaptive scheduler starts at the limit its
// CapacityStore loads, brought within [Min, Max], and saves its limit with
// every save; a failed or panicking load leaves it at Initial, logged and
// counted; a fixed capacity neither loads nor saves one.
func TestCostStoreCapacity(t *testing.T) {
	adaptive := func() Config { return Config{Adaptive: &AdaptiveConfig{Min: 2, Max: 40, Initial: 4}} }
	for _, tc := range []struct {
		name      string
		store     *capStore
		cfg       Config
		start     int    // the capacity New starts at
		loaded    int    // Snapshot's CostStore.LoadedCapacity
		loadFails uint64 // Counters.CostLoadFailures
		log       string // in the log, if not ""
	}{
		{name: "none saved", store: &capStore{}, cfg: adaptive(), start: 4},
		{name: "saved", store: &capStore{limit: 18}, cfg: adaptive(), start: 18, loaded: 18},
		{name: "above Max", store: &capStore{limit: 90}, cfg: adaptive(), start: 40, loaded: 40},
		{name: "below Min", store: &capStore{limit: 1}, cfg: adaptive(), start: 2, loaded: 2},
		{name: "load fails", store: &capStore{limit: 18, loadErr: errors.New("disk on fire")}, cfg: adaptive(), start: 4, loadFails: 1,
			log: "loading the adaptive limit failed; starting at AdaptiveConfig.Initial"},
		{name: "negative", store: &capStore{limit: -3}, cfg: adaptive(), start: 4, loadFails: 1, log: "LoadCapacity returned -3"},
		{name: "load panics", store: &capStore{limit: 18, panicLoad: true}, cfg: adaptive(), start: 4, loadFails: 1,
			log: "LoadCapacity panicked: capacity load exploded"},
		{name: "fixed capacity", store: &capStore{limit: 18}, cfg: Config{Capacity: 7}, start: 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st := tc.store
				s, logs := newStoreScheduler(t, tc.cfg, st, time.Minute)
				snap := s.Snapshot()
				if snap.Capacity != tc.start || snap.CostStore.LoadedCapacity != tc.loaded || snap.Counters.CostLoadFailures != tc.loadFails {
					t.Fatalf("at New: capacity %d, LoadedCapacity %d, load failures %d; want %d, %d, %d",
						snap.Capacity, snap.CostStore.LoadedCapacity, snap.Counters.CostLoadFailures, tc.start, tc.loaded, tc.loadFails)
				}
				if a := snap.Adaptive; a != nil && a.Limit != float64(tc.start) {
					t.Fatalf("adaptive limit %v, want %d", a.Limit, tc.start)
				}
				if tc.log != "" && !strings.Contains(logs.String(), tc.log) {
					t.Fatalf("log lacks %q:\n%s", tc.log, logs.String())
				}
				time.Sleep(time.Minute) // the timer's save
				synctest.Wait()
				must(t, s.Close(t.Context()))
				st.mu.Lock()
				defer st.mu.Unlock()
				if tc.cfg.Adaptive == nil {
					if st.capLoads != 0 || st.capSaves != 0 {
						t.Fatalf("a fixed capacity called LoadCapacity %d and SaveCapacity %d times; want neither", st.capLoads, st.capSaves)
					}
					return
				}
				if want := []int{tc.start, tc.start}; !slices.Equal(st.saved, want) || st.capLoads != 1 {
					t.Fatalf("LoadCapacity called %d times (want 1); saved limits %v, want %v", st.capLoads, st.saved, want)
				}
				wantStoreCounters(t, s, 0, 0, 2, tc.loadFails, 0)
			})
		})
	}
}

// TestCostStoreCapacitySaveFails: Save and SaveCapacity are independent:
// either failing (or SaveCapacity panicking) leaves the other done, and a
// save with a failure counts once and logs both errors.
func TestCostStoreCapacitySaveFails(t *testing.T) {
	for _, tc := range []struct {
		name     string
		store    *capStore
		saved    []int
		wantLogs []string
	}{
		{name: "Save fails", store: &capStore{saveCostsErr: errors.New("costs lost")}, saved: []int{4, 4}, wantLogs: []string{"costs lost"}},
		{name: "SaveCapacity fails", store: &capStore{saveErr: errors.New("limit lost")}, wantLogs: []string{"limit lost"}},
		{name: "both fail", store: &capStore{saveCostsErr: errors.New("costs lost"), saveErr: errors.New("limit lost")},
			wantLogs: []string{"costs lost", "limit lost"}},
		{name: "SaveCapacity panics", store: &capStore{panicSave: true}, wantLogs: []string{"SaveCapacity panicked: capacity save exploded"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st := tc.store
				s, logs := newStoreScheduler(t, Config{Adaptive: &AdaptiveConfig{Min: 2, Max: 40, Initial: 4}}, st, time.Minute)
				time.Sleep(time.Minute)
				synctest.Wait()
				must(t, s.Close(t.Context()))
				wantStoreCounters(t, s, 0, 0, 0, 0, 2)
				st.mu.Lock()
				defer st.mu.Unlock()
				if st.capSaves != 2 || !slices.Equal(st.saved, tc.saved) {
					t.Fatalf("SaveCapacity called %d times (want 2), saved %v (want %v)", st.capSaves, st.saved, tc.saved)
				}
				for _, w := range tc.wantLogs {
					if n := strings.Count(logs.String(), w); n != 2 {
						t.Fatalf("log has %q %d times, want 2 (one per save):\n%s", w, n, logs.String())
					}
				}
			})
		})
	}
}

// TestCostStoreCapacityDuringProbe: a save during a probe hands the store
// the limit the probe halved, not the probe's.
func TestCostStoreCapacityDuringProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &capStore{limit: 20}
		s, _ := newStoreScheduler(t, Config{Adaptive: &AdaptiveConfig{Min: 2, Max: 40, Initial: 4}}, st, time.Minute)
		now := s.lockAt(s.now())
		s.startProbeLocked(now)
		probing, limit := s.cfg.Capacity, s.savedLimitLocked()
		s.mu.Unlock()
		if probing >= 20 || limit != 20 {
			t.Fatalf("during a probe: capacity %d, saved limit %d; want below 20, and 20", probing, limit)
		}
		must(t, s.Close(t.Context()))
		st.mu.Lock()
		defer st.mu.Unlock()
		if !slices.Equal(st.saved, []int{20}) {
			t.Fatalf("Close saved %v, want [20]", st.saved)
		}
	})
}

// TestCostStoreCapacityFile: the limit survives a restart through a
// FileCostStore: pinned at 12 in one life of the scheduler, the next
// starts at 12 where its Initial is 4.
func TestCostStoreCapacityFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "costs")
	cfg := func() Config { return Config{Adaptive: &AdaptiveConfig{Min: 2, Max: 40, Initial: 4}} }
	s, _ := newStoreScheduler(t, cfg(), FileCostStore(path), time.Hour)
	must(t, s.SetAdaptiveBounds(12, 12))
	must(t, s.Close(t.Context()))
	s, logs := newStoreScheduler(t, cfg(), FileCostStore(path), time.Hour)
	defer s.Close(t.Context())
	if snap := s.Snapshot(); snap.Capacity != 12 || snap.CostStore.LoadedCapacity != 12 {
		t.Fatalf("after a restart: capacity %d, LoadedCapacity %d; want 12 and 12 (log: %s)", snap.Capacity, snap.CostStore.LoadedCapacity, logs)
	}
	// The debug page says so, in its HTML and its JSON.
	page := func(format string) []byte {
		rec := httptest.NewRecorder()
		DebugHandler(s).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/debug?format="+format, nil))
		return rec.Body.Bytes()
	}
	if html, want := page("html"), "Started at 12 seats, the limit loaded from the cost store."; !bytes.Contains(html, []byte(want)) {
		t.Errorf("debug page lacks %q:\n%s", want, html)
	}
	var view struct {
		Adaptive struct {
			Loaded int `json:"loaded_capacity"`
		} `json:"adaptive"`
	}
	if err := json.Unmarshal(page("json"), &view); err != nil || view.Adaptive.Loaded != 12 {
		t.Errorf("debug JSON: adaptive.loaded_capacity %d, %v; want 12", view.Adaptive.Loaded, err)
	}
}
