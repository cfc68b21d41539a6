package peer

import (
	"context"
	"time"

	"github.com/fairseat/fairseat/admission"
)

// fairseatType is the one job type every request is admitted under. It has
// no conflict group (requests carry no job ID) and its tier cap is lifted
// to Capacity, so that only Capacity and fairness decide.
const fairseatType admission.JobType = "bench"

// fairseatQueue bounds the queue far above anything the harness queues
// (10,000 keys plus a 1000-request flood), so that fairseat, like every
// other peer here, waits rather than sheds.
const fairseatQueue = 1 << 20

// fairseat is admission.Scheduler through its public API: Acquire and
// Permit.Release, fairness key per request, KeyPolicy.Weight per key.
type fairseat struct{ s *admission.Scheduler }

func init() {
	register(Peer{
		Name:     "fairseat",
		Keyed:    true,
		Weighted: true,
		New:      newFairseat,
	})
}

func newFairseat(c Config) (Limiter, error) {
	keys := make(map[string]admission.KeyPolicy, len(c.Weights))
	for k, w := range c.Weights {
		keys[k] = admission.KeyPolicy{Weight: w}
	}
	s, err := admission.New(admission.Config{
		Capacity:   c.Capacity,
		TierLimits: map[admission.Priority]int{admission.PriorityForeground: c.Capacity},
		Keys:       keys,
		MaxQueue:   fairseatQueue,
		MaxKeys:    fairseatQueue,
	})
	if err != nil {
		return nil, err
	}
	err = s.RegisterType(fairseatType, admission.JobTypeConfig{
		DefaultCost: time.Millisecond,
		Priority:    admission.PriorityForeground,
	})
	if err != nil {
		return nil, err
	}
	return &fairseat{s: s}, nil
}

func (l *fairseat) Do(ctx context.Context, key string, fn func()) error {
	p, err := l.s.Acquire(ctx, admission.Request{Type: fairseatType, FairnessKey: key})
	if err != nil {
		return err
	}
	defer p.Release()
	fn()
	return nil
}

// FairseatType is the job type a fairseat limiter admits under.
const FairseatType = fairseatType

// FairseatScheduler returns the scheduler behind a limiter built by the
// "fairseat" peer (for fairseat's own gRPC interceptor), or nil.
func FairseatScheduler(l Limiter) *admission.Scheduler {
	if f, ok := l.(*fairseat); ok {
		return f.s
	}
	return nil
}

func (l *fairseat) Close() error { return l.s.Close(context.Background()) }
