package admission_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/fairseat/fairseat/admission"
)

// A scheduler with a cost store saves what it learned when it closes; the
// next one, on the same file, starts with those estimates.
func ExampleWithCostStore() {
	dir, err := os.MkdirTemp("", "fairseat-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	store := admission.FileCostStore(filepath.Join(dir, "costs"))
	clone := admission.JobTypeConfig{DefaultCost: 10 * time.Second, Priority: admission.PriorityForeground}
	ctx := context.Background()

	// Before the deploy: learn what two clones cost, save at Close.
	s, err := admission.New(admission.Config{Capacity: 4}, admission.WithCostStore(store, time.Minute))
	if err != nil {
		panic(err)
	}
	_ = s.RegisterType("clone", clone)
	for _, repo := range []string{"github.com/golang/go", "github.com/torvalds/linux"} {
		_ = s.RunSync(ctx, "clone", repo, "203.0.113.7", func(context.Context) error { return nil })
	}
	_ = s.Close(ctx)
	fmt.Println("estimates saved:", s.Snapshot().Counters.CostEntriesSaved)

	// After the deploy: the estimates are back before the first request.
	s, err = admission.New(admission.Config{Capacity: 4}, admission.WithCostStore(store, time.Minute))
	if err != nil {
		panic(err)
	}
	_ = s.RegisterType("clone", clone)
	fmt.Println("learned clone costs:", s.Snapshot().Types[0].LearnedCosts)
	_ = s.Close(ctx)
	// Output:
	// estimates saved: 2
	// learned clone costs: 2
}

// With adaptive capacity, a FileCostStore keeps the limit as well: the
// next process starts where the last one was, not at Initial. (Here the
// limit is pinned by SetAdaptiveBounds, as an operator would in an
// incident; a controller that settled saves where it settled.)
func ExampleCapacityStore() {
	dir, err := os.MkdirTemp("", "fairseat-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	store := admission.FileCostStore(filepath.Join(dir, "costs"))
	cfg := func() admission.Config {
		return admission.Config{Adaptive: &admission.AdaptiveConfig{Min: 2, Max: 64, Initial: 4}}
	}
	ctx := context.Background()

	s, err := admission.New(cfg(), admission.WithCostStore(store, time.Minute))
	if err != nil {
		panic(err)
	}
	fmt.Println("first start:", s.Snapshot().Capacity, "seats")
	_ = s.SetAdaptiveBounds(24, 24)
	_ = s.Close(ctx) // saves the limit with the estimates

	s, err = admission.New(cfg(), admission.WithCostStore(store, time.Minute))
	if err != nil {
		panic(err)
	}
	snap := s.Snapshot()
	fmt.Println("after a restart:", snap.Capacity, "seats, loaded", snap.CostStore.LoadedCapacity)
	_ = s.Close(ctx)
	// Output:
	// first start: 4 seats
	// after a restart: 24 seats, loaded 24
}
