package admission_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fairseat/fairseat/admission"
)

func Example() {
	s, err := admission.New(admission.Config{Capacity: 4})
	if err != nil {
		panic(err)
	}
	_ = s.RegisterType("clone", admission.JobTypeConfig{
		DefaultCost:   10 * time.Second,
		ConflictGroup: "git",
		Priority:      admission.PriorityForeground,
	})
	_ = s.RegisterType("repack", admission.JobTypeConfig{
		DefaultCost:    time.Minute,
		MaxConcurrency: 1,
		ConflictGroup:  "git",
		Priority:       admission.PriorityBackground,
	})

	// Foreground: wait for a seat, run holding it, release.
	err = s.RunSync(context.Background(), "clone", "github.com/golang/go", "203.0.113.7",
		func(ctx context.Context) error {
			fmt.Println("cloning github.com/golang/go")
			return nil
		})
	fmt.Println("clone:", err)

	// Background: queued at once, runs when a seat and the repository are free.
	done := make(chan struct{})
	_ = s.Submit("repack", "github.com/golang/go", func(ctx context.Context) error {
		defer close(done)
		fmt.Println("repacking github.com/golang/go")
		return nil
	})
	<-done

	// Close drains background work, then stops.
	fmt.Println("close:", s.Close(context.Background()))
	_, err = s.Acquire(context.Background(), admission.Request{Type: "clone", JobID: "x"})
	fmt.Println("after close:", errors.Is(err, admission.ErrClosed))
	// Output:
	// cloning github.com/golang/go
	// clone: <nil>
	// repacking github.com/golang/go
	// close: <nil>
	// after close: true
}

// The queue in dispatch order: a light caller that arrives last is still
// first, because the heavy caller has already been charged for its running
// clone.
func ExampleScheduler_Snapshot() {
	s, _ := admission.New(admission.Config{Capacity: 1})
	_ = s.RegisterType("clone", admission.JobTypeConfig{DefaultCost: 10 * time.Second, Priority: 8})

	p, _ := s.Acquire(context.Background(), admission.Request{Type: "clone", JobID: "linux", FairnessKey: "heavy"})
	ctx, cancel := context.WithCancel(context.Background())
	for i, key := range []string{"heavy", "heavy", "heavy", "light"} {
		go s.Acquire(ctx, admission.Request{Type: "clone", JobID: fmt.Sprint("repo", i), FairnessKey: key})
		for s.Snapshot().Queued < i+1 {
			time.Sleep(time.Millisecond)
		}
	}
	for _, q := range s.Snapshot().Queue {
		fmt.Println(q.Key, q.JobID)
	}
	cancel()
	for s.Snapshot().Queued > 0 { // let the cancelled waiters leave
		time.Sleep(time.Millisecond)
	}
	p.Release()
	_ = s.Close(context.Background())
	// Output:
	// light repo3
	// heavy repo0
	// heavy repo1
	// heavy repo2
}

func ExampleNew_invalid() {
	_, err := admission.New(admission.Config{Capacity: 4, Aging: &admission.AgingConfig{Grace: time.Minute}})
	fmt.Println(err)
	fmt.Println(errors.Is(err, admission.ErrInvalidConfig))
	// Output:
	// admission: invalid config: Aging.Interval must be > 0, got 0s
	// true
}

func ExampleScheduler_StarvationBound() {
	s, _ := admission.New(admission.Config{
		Capacity: 8,
		Aging:    &admission.AgingConfig{Grace: time.Minute, Interval: 10 * time.Second, Urgent: 41},
	})
	_ = s.RegisterType("repack", admission.JobTypeConfig{Priority: admission.PriorityBackground})
	// Priority 10 needs ceil((41-10)/1) = 31 promotions: 1m + 31·10s.
	fmt.Println(s.StarvationBound("repack"))
	// Output:
	// 6m10s
}
