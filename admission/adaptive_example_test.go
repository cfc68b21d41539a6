package admission_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fairseat/fairseat/admission"
)

// A server whose capacity nobody knows: the limit starts at 8 seats and
// follows what the server can do, between 2 and 64. The foreground tier's
// cap is raised to Max, or it would stop the limit at 40.
func ExampleAdaptiveConfig() {
	s, err := admission.New(admission.Config{
		Adaptive: &admission.AdaptiveConfig{
			Min: 2, Max: 64, Initial: 8,
			QueueDelayTarget: 50 * time.Millisecond, // refuse the heaviest callers once a standing queue forms
		},
		TierLimits: map[admission.Priority]int{admission.PriorityForeground: 64},
	})
	if err != nil {
		panic(err)
	}
	defer s.Close(context.Background())

	snap := s.Snapshot()
	fmt.Printf("capacity %d, limit in [%d, %d]\n", snap.Capacity, snap.Adaptive.Min, snap.Adaptive.Max)

	// The capacity is the controller's: an operator moves its bounds.
	err = s.SetCapacity(4)
	fmt.Println(errors.Is(err, admission.ErrInvalidConfig))
	if err := s.SetAdaptiveBounds(2, 4); err != nil {
		panic(err)
	}
	snap = s.Snapshot()
	last := snap.Adaptive.History[len(snap.Adaptive.History)-1]
	fmt.Printf("capacity %d (%d -> %d, %s)\n", snap.Capacity, last.Previous, last.New, last.Reason)
	// Output:
	// capacity 8, limit in [2, 64]
	// true
	// capacity 4 (8 -> 4, operator)
}
