package admission_test

import (
	"context"
	"fmt"

	"github.com/fairseat/fairseat/admission"
)

// Events report scheduling decisions. Here a configured tenant's fair-share
// allocation as it becomes active and drains.
func ExampleWithEventHandler() {
	s, err := admission.New(admission.Config{
		Capacity: 4,
		Keys:     map[string]admission.KeyPolicy{"tenant-a": {Weight: 3}},
	}, admission.WithEventHandler(func(e admission.Event) {
		fmt.Printf("%v %s: %g -> %g seats (%s)\n", e.Kind, e.Key, e.Previous, e.New, e.Reason)
	}))
	if err != nil {
		panic(err)
	}
	_ = s.RegisterType("clone", admission.JobTypeConfig{Priority: admission.PriorityForeground})
	a, _ := s.Acquire(context.Background(), admission.Request{Type: "clone", JobID: "r1", FairnessKey: "tenant-a"})
	b, _ := s.Acquire(context.Background(), admission.Request{Type: "clone", JobID: "r2", FairnessKey: "203.0.113.7"})
	b.Release()
	a.Release()
	_ = s.Close(context.Background()) // delivers the queued events, then stops
	// Output:
	// allocation_changed tenant-a: 0 -> 4 seats (key_activated)
	// allocation_changed tenant-a: 4 -> 3 seats (rebalance)
	// allocation_changed other: 0 -> 1 seats (key_activated)
	// allocation_changed tenant-a: 3 -> 4 seats (rebalance)
	// allocation_changed other: 1 -> 0 seats (key_drained)
	// allocation_changed tenant-a: 4 -> 0 seats (key_drained)
}
