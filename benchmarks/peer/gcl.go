package peer

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/platinummonkey/go-concurrency-limits/core"
	"github.com/platinummonkey/go-concurrency-limits/limit"
	"github.com/platinummonkey/go-concurrency-limits/limiter"
	"github.com/platinummonkey/go-concurrency-limits/strategy"
)

// gcl is github.com/platinummonkey/go-concurrency-limits with a fixed limit
// (limit.FixedLimit; the adaptive limits are its point, but a fixed limit is
// what compares with a seat count), enforced by limiter.DefaultLimiter and
// made to wait by limiter.QueueBlockingLimiter (FIFO backlog).
//
// The "gcl-partitioned" variant replaces the simple strategy with
// strategy.LookupPartitionStrategy: one partition per key of Config.Weights,
// each guaranteed ceil(Capacity·weight/Σweights) seats (at least 1). A
// partition below its guarantee may acquire even when the total is at the
// limit, so the total can exceed Capacity by design (MaxHolders); keys not
// in Config.Weights share one "<unknown>" partition of 1 seat.
type gcl struct {
	def *limiter.DefaultLimiter
	l   *limiter.QueueBlockingLimiter
}

// gclBacklog bounds the QueueBlockingLimiter's backlog far above anything
// the harness queues (the default is 100), so that it waits rather than
// sheds, as every peer here does.
const gclBacklog = 1 << 20

// gclBacklogTimeout is how long a waiter stays in the backlog before the
// limiter gives up on it; Do then enqueues it again. The default is 1 s.
const gclBacklogTimeout = time.Second

type gclKey struct{}

func init() {
	register(Peer{
		Name: "gcl-fixed",
		New:  func(c Config) (Limiter, error) { return newGCL(c, false) },
	})
	register(Peer{
		Name:        "gcl-partitioned",
		Keyed:       true,
		Weighted:    true,
		Partitioned: true,
		MaxHolders: func(c Config) int {
			n := c.Capacity
			for _, s := range gclShares(c) {
				n += s
			}
			return n + 1 // the "<unknown>" partition
		},
		New: func(c Config) (Limiter, error) { return newGCL(c, true) },
	})
}

// gclShares returns each partition's guaranteed seats, as
// LookupPartition.UpdateLimit computes them.
func gclShares(c Config) map[string]int {
	var sum float64
	for k := range c.Weights {
		sum += weightOf(c.Weights, k)
	}
	shares := make(map[string]int, len(c.Weights))
	for k := range c.Weights {
		shares[k] = int(math.Max(1, math.Ceil(float64(c.Capacity)*weightOf(c.Weights, k)/sum)))
	}
	return shares
}

func newGCL(c Config, partitioned bool) (Limiter, error) {
	reg := core.EmptyMetricRegistryInstance
	var strat core.Strategy = strategy.NewSimpleStrategyWithMetricRegistry(c.Capacity, reg)
	if partitioned {
		if len(c.Weights) == 0 {
			return nil, fmt.Errorf("gcl-partitioned: Config.Weights must name the partitions")
		}
		var sum float64
		for k := range c.Weights {
			sum += weightOf(c.Weights, k)
		}
		parts := make(map[string]*strategy.LookupPartition, len(c.Weights))
		for k := range c.Weights {
			parts[k] = strategy.NewLookupPartitionWithMetricRegistry(k, weightOf(c.Weights, k)/sum, int32(c.Capacity), reg)
		}
		lookup := func(ctx context.Context) string {
			k, _ := ctx.Value(gclKey{}).(string)
			return k
		}
		ps, err := strategy.NewLookupPartitionStrategyWithMetricRegistry(parts, lookup, int32(c.Capacity), reg)
		if err != nil {
			return nil, err
		}
		strat = ps
	}
	// NewDefaultLimiterWithDefaults would pick the adaptive Vegas limit.
	return newGCLWithLimit(limit.NewFixedLimit("bench", c.Capacity, reg), strat, reg)
}

// newGCLWithLimit enforces lim with limiter.DefaultLimiter and queues with
// limiter.QueueBlockingLimiter (FIFO backlog). The window parameters are
// the library's defaults (1 s windows of at least 100 samples, RTTs under
// 100 µs ignored), which a fixed limit reads but never acts on.
func newGCLWithLimit(lim core.Limit, strat core.Strategy, reg core.MetricRegistry) (*gcl, error) {
	def, err := limiter.NewDefaultLimiter(lim,
		int64(time.Second), int64(time.Second), int64(100*time.Microsecond), 100,
		strat, limit.NoopLimitLogger{}, reg)
	if err != nil {
		return nil, err
	}
	return &gcl{def: def, l: limiter.NewQueueBlockingLimiterFromConfig(def, limiter.QueueLimiterConfig{
		Ordering:            limiter.OrderingFIFO,
		MaxBacklogSize:      gclBacklog,
		MaxBacklogTimeout:   gclBacklogTimeout,
		BacklogEvictDoneCtx: true,
		MetricRegistry:      reg,
	})}, nil
}

// An AdaptiveGCL is go-concurrency-limits with an adaptive limit
// (limit.Gradient2Limit, limit.VegasLimit) in place of gcl-fixed's fixed
// one, enforced and queued as gcl-fixed is. It is safe for concurrent use.
type AdaptiveGCL struct{ *gcl }

// NewAdaptiveGCL returns a limiter enforcing lim, whose limit starts at
// initial seats.
func NewAdaptiveGCL(lim core.Limit, initial int) (*AdaptiveGCL, error) {
	reg := core.EmptyMetricRegistryInstance
	g, err := newGCLWithLimit(lim, strategy.NewSimpleStrategyWithMetricRegistry(initial, reg), reg)
	if err != nil {
		return nil, err
	}
	return &AdaptiveGCL{g}, nil
}

// Limit is the limit now.
func (a *AdaptiveGCL) Limit() int { return a.def.EstimatedLimit() }

func (l *gcl) Do(ctx context.Context, key string, fn func()) error {
	ctx = context.WithValue(ctx, gclKey{}, key)
	for {
		lis, ok := l.l.Acquire(ctx)
		if ok {
			defer lis.OnSuccess()
			fn()
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		// The backlog timed out (or was full): wait again, at the back.
	}
}

func (l *gcl) Close() error { return nil }
