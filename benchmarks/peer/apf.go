package peer

import (
	"context"
	"fmt"
	"hash/maphash"

	fq "k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing"
	"k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing/eventclock"
	"k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing/queueset"
	"k8s.io/apiserver/pkg/util/flowcontrol/metrics"
	"k8s.io/apiserver/pkg/util/flowcontrol/request"
)

// Queuing as in APF's suggested "system" and "node-high" priority levels
// (k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap): 64 queues, hand size 6,
// queue length limit 50 — except the queue length, see apfQueueLength.
const (
	apfQueues = 64
	// apfQueueLength is raised from the default 50 so that, like every other
	// peer here, the queue set waits rather than sheds: 64 × 50 = 3200
	// queued requests would reject part of the 10,000-key benchmark.
	apfQueueLength = 1 << 16
)

// apf is one priority level of Kubernetes API Priority and Fairness: the
// fair-queuing queue set of k8s.io/apiserver, with shuffle sharding of each
// flow (fairness key) over a hand of its queues. One request is one seat
// (WorkEstimate.InitialSeats = 1). APF has no per-flow weight: weights in
// APF are shares between priority levels, not between flows of one level.
type apf struct {
	qs   fq.QueueSet
	seed maphash.Seed
}

func init() {
	for _, hand := range []int{6, 1} {
		register(Peer{
			Name:  fmt.Sprintf("apf-hand%d", hand),
			Keyed: true,
			New:   func(c Config) (Limiter, error) { return newAPF(c, hand) },
		})
	}
}

func newAPF(c Config, hand int) (Limiter, error) {
	factory := queueset.NewQueueSetFactory(eventclock.Real{})
	completer, err := factory.BeginConstruction(
		fq.QueuingConfig{
			Name:             "bench",
			DesiredNumQueues: apfQueues,
			QueueLengthLimit: apfQueueLength,
			HandSize:         hand,
		},
		metrics.RatioedGaugePair{RequestsWaiting: noGauge{}, RequestsExecuting: noGauge{}},
		noGauge{}, // seats executing
		noGauge{}, // seat demand
	)
	if err != nil {
		return nil, err
	}
	qs := completer.Complete(fq.DispatchingConfig{
		ConcurrencyLimit:       c.Capacity,
		ConcurrencyDenominator: c.Capacity,
	})
	return &apf{qs: qs, seed: maphash.MakeSeed()}, nil
}

// oneSeat is the work estimate of every request: one seat, no extra
// latency.
var oneSeat = request.WorkEstimate{InitialSeats: 1}

func (l *apf) Do(ctx context.Context, key string, fn func()) error {
	// The flow distinguisher's hash picks the flow's hand of queues, as
	// APF's filter hashes (FlowSchema name, distinguisher).
	h := maphash.String(l.seed, key)
	req, _ := l.qs.StartRequest(ctx, &oneSeat, h, key, "bench", nil, nil, nil)
	if req == nil {
		return ErrRejected
	}
	ran := false
	req.Finish(func() { ran = true; fn() })
	if !ran {
		if err := ctx.Err(); err != nil {
			return err
		}
		return ErrRejected
	}
	return nil
}

func (l *apf) Close() error { return nil }

// noGauge discards observations: the queue set requires gauges, and the
// real ones (Prometheus vectors) are not what is being measured.
type noGauge struct{}

func (noGauge) Set(float64)            {}
func (noGauge) Inc()                   {}
func (noGauge) Dec()                   {}
func (noGauge) Add(float64)            {}
func (noGauge) SetToCurrentTime()      {}
func (noGauge) SetDenominator(float64) {}
