package admission

// Benchmarks of the cost store (WithCostStore, FileCostStore). Results and
// the commands that produced them are in benchmarks/COSTSTORE.md.
//
//   - BenchmarkCostSave: FileCostStore.Save of MaxCostEntries (10,000)
//     estimates, fsync and rename included, against a naive store (the
//     same estimates as JSON, written with os.WriteFile, not synced).
//   - BenchmarkCostCopy: the copy a save takes under the scheduler's lock,
//     from a full cost LRU: the lock hold time of a save.
//   - BenchmarkAcquireDuringSave: one goroutine's Acquire+Release latency
//     (mean and percentiles) while another saves in a loop, against the
//     same with no save running.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// benchCosts are n estimates of type clone, job IDs shaped like repository
// names, observed over the last n seconds.
func benchCosts(n int) []CostEstimate {
	now := time.Now()
	out := make([]CostEstimate, n)
	for i := range out {
		out[i] = CostEstimate{Type: "clone", JobID: fmt.Sprintf("github.com/org-%03d/repository-%05d", i%1000, i),
			Seconds: 1 + float64(i%600), Observed: now.Add(-time.Duration(n-i) * time.Second)}
	}
	return out
}

// listStore is a CostStore that loads a fixed list and saves through save.
type listStore struct {
	list []CostEstimate
	save func(context.Context, []CostEstimate) error
}

func (l *listStore) Load(context.Context) ([]CostEstimate, error) { return l.list, nil }
func (l *listStore) Save(ctx context.Context, e []CostEstimate) error {
	return l.save(ctx, e)
}

// fullCostScheduler returns a scheduler whose cost LRU holds
// DefaultMaxCostEntries learned estimates (loaded from a store), saving
// with save when asked.
func fullCostScheduler(b *testing.B, save func(context.Context, []CostEstimate) error) *Scheduler {
	b.Helper()
	st := &listStore{list: benchCosts(DefaultMaxCostEntries), save: save}
	s, err := New(Config{Capacity: 4}, WithCostStore(st, time.Hour))
	if err != nil {
		b.Fatal(err)
	}
	if err := s.RegisterType("clone", benchTypeConfig); err != nil {
		b.Fatal(err)
	}
	if n := s.Snapshot().Counters.CostEntriesLoaded; n != DefaultMaxCostEntries {
		b.Fatalf("%d estimates loaded, want %d", n, DefaultMaxCostEntries)
	}
	b.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

func BenchmarkCostSave(b *testing.B) {
	ests := benchCosts(DefaultMaxCostEntries)
	ctx := context.Background()
	b.Run("store=file", func(b *testing.B) {
		st := FileCostStore(filepath.Join(b.TempDir(), "costs"))
		b.ReportAllocs()
		for b.Loop() {
			if err := st.Save(ctx, ests); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("store=file-nosync", func(b *testing.B) { // the encoding and the write, without fsync or rename
		path := filepath.Join(b.TempDir(), "costs")
		b.ReportAllocs()
		for b.Loop() {
			data, err := encodeCostFile(ests)
			if err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(path, data, 0o600); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("store=naive-json", func(b *testing.B) {
		path := filepath.Join(b.TempDir(), "costs.json")
		b.ReportAllocs()
		for b.Loop() {
			data, err := json.Marshal(ests)
			if err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(path, data, 0o600); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("load=file", func(b *testing.B) {
		st := FileCostStore(filepath.Join(b.TempDir(), "costs"))
		if err := st.Save(ctx, ests); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if got, err := st.Load(ctx); err != nil || len(got) != len(ests) {
				b.Fatal(len(got), err)
			}
		}
	})
}

// BenchmarkCostCopy measures the part of a save that holds the lock.
func BenchmarkCostCopy(b *testing.B) {
	s := fullCostScheduler(b, func(context.Context, []CostEstimate) error { return nil })
	b.ReportAllocs()
	for b.Loop() {
		now := s.now()
		s.mu.Lock()
		ests := s.copyCostsLocked(now)
		s.mu.Unlock()
		if len(ests) != DefaultMaxCostEntries {
			b.Fatal(len(ests))
		}
	}
}

// BenchmarkAcquireDuringSave times each uncontended Acquire+Release of one
// goroutine while another goroutine runs the timer's save
// (saveCostsOnTimer) back to back, to a FileCostStore, and reports the
// mean and percentiles of the per-operation latency (the clock reads
// around each operation are included in both variants).
func BenchmarkAcquireDuringSave(b *testing.B) {
	for _, saving := range []bool{false, true} {
		b.Run(fmt.Sprint("saving=", saving), func(b *testing.B) {
			file := FileCostStore(filepath.Join(b.TempDir(), "costs"))
			s := fullCostScheduler(b, file.Save)
			r := Request{Type: "clone", JobID: "github.com/org-007/repository-00007", FairnessKey: "client-0"}
			ctx := context.Background()
			stop := make(chan struct{})
			var wg sync.WaitGroup
			saves := 0
			if saving {
				wg.Go(func() {
					for {
						select {
						case <-stop:
							return
						default:
						}
						s.saveCostsOnTimer()
						saves++
					}
				})
				for s.Snapshot().Counters.CostSaves == 0 { // saves are running
					time.Sleep(time.Millisecond)
				}
			}
			lat := make([]time.Duration, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				t0 := time.Now()
				p, err := s.Acquire(ctx, r)
				if err != nil {
					b.Fatal(err)
				}
				p.Release()
				lat[i] = time.Since(t0)
			}
			b.StopTimer()
			close(stop)
			wg.Wait()
			if c := s.Snapshot().Counters; c.CostSaveFailures != 0 {
				b.Fatalf("%d saves failed: %s", c.CostSaveFailures, s.Snapshot().CostStore.LastSaveError)
			}
			slices.Sort(lat)
			q := func(p float64) float64 { return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))]) }
			b.ReportMetric(q(0.5), "p50-ns")
			b.ReportMetric(q(0.99), "p99-ns")
			b.ReportMetric(q(0.999), "p99.9-ns")
			b.ReportMetric(q(0.9999), "p99.99-ns")
			b.ReportMetric(float64(lat[len(lat)-1]), "max-ns")
			b.ReportMetric(float64(saves), "saves")
		})
	}
}
