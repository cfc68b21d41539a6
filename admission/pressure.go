package admission

import (
	"fmt"
	"math"
	"runtime/metrics"
	"sync"
	"time"
)

// A PressureSource reports how loaded the server is, from 0 (idle) to 1
// (saturated). The scheduler calls Pressure under its lock, at most once per
// PressureConfig.Interval, so it must be quick, must not block and must not
// call the scheduler.
type PressureSource interface {
	Pressure() float64
}

// PressureFunc adapts a function to PressureSource.
type PressureFunc func() float64

// Pressure returns f().
func (f PressureFunc) Pressure() float64 { return f() }

// PressureConfig is the optional pressure gate: while Source reports at
// least Threshold, only jobs whose effective priority is above MinPriority
// are admitted; the rest wait (holding no seat) until the pressure drops,
// which the scheduler notices within Interval even when nothing else
// happens. Urgent jobs are held too: the starvation bound holds only while
// the pressure is below Threshold.
type PressureConfig struct {
	Source      PressureSource
	Threshold   float64       // in (0, 1]
	MinPriority Priority      // jobs at or below it wait under pressure
	Interval    time.Duration // how often the source is read; 0 = 100ms
}

// DefaultPressureInterval is the default PressureConfig.Interval.
const DefaultPressureInterval = 100 * time.Millisecond

func (p *PressureConfig) validate() (*PressureConfig, error) {
	c := *p
	switch {
	case c.Source == nil:
		return nil, fmt.Errorf("%w: Pressure.Source must not be nil", ErrInvalidConfig)
	case math.IsNaN(c.Threshold) || c.Threshold <= 0 || c.Threshold > 1:
		return nil, fmt.Errorf("%w: Pressure.Threshold must be in (0, 1], got %v", ErrInvalidConfig, c.Threshold)
	case c.Interval < 0:
		return nil, fmt.Errorf("%w: Pressure.Interval must be >= 0, got %v", ErrInvalidConfig, c.Interval)
	}
	if c.Interval == 0 {
		c.Interval = DefaultPressureInterval
	}
	return &c, nil
}

// pressureGate is the scheduler's state of the gate.
type pressureGate struct {
	cfg   *PressureConfig
	high  bool
	value float64 // last reading
	at    int64   // last reading, an instant (see Scheduler.now); 0 = never read
	// timer runs redispatch. It is made (stopped) in New: creating it here,
	// in dispatch's call graph, would make dispatch and redispatch one
	// recursive component, and escape analysis would then move every
	// caller's wake buffer to the heap.
	timer *time.Timer
}

// refreshPressureLocked reads the source if the last reading is older than
// the interval.
func (s *Scheduler) refreshPressureLocked(now int64) {
	g := s.pressure
	if g == nil || (g.at != 0 && sinceNs(now, g.at) < g.cfg.Interval) {
		return
	}
	g.at = now
	v, ok := readPressure(g.cfg.Source)
	if !ok {
		s.counters.PressureFailures++
		v = 0 // a broken source holds nothing back (see readPressure)
	}
	g.value = v
	g.high = g.value >= g.cfg.Threshold
	s.pressureReadLocked(g.value, now)
}

// readPressure reads src, and reports false if it panicked. The source is
// read under the scheduler's lock, and a panic there would leave the lock
// held and every later call hung; so a panicking source is recovered, its
// reading counts as no pressure (Counters.PressureFailures counts it), and
// the scheduler goes on as if the gate were off: a broken sensor must not
// stop the server, only its gating. A reading of NaN counts as no pressure
// as well (NaN is not at or above any threshold).
func readPressure(src PressureSource) (v float64, ok bool) {
	defer func() {
		if recover() != nil {
			v, ok = 0, false
		}
	}()
	return src.Pressure(), true
}

// pressureHolds reports whether the gate holds back work of effective
// priority eff now.
func (s *Scheduler) pressureHolds(eff Priority) bool {
	return s.pressure != nil && s.pressure.high && eff <= s.pressure.cfg.MinPriority
}

// armPressureLocked makes sure a dispatch runs after the interval while the
// gate holds back queued work, so the work starts when the pressure drops
// even if nothing else happens.
func (s *Scheduler) armPressureLocked() {
	g := s.pressure
	if g == nil || !g.high || s.queued == 0 || s.stopped {
		return
	}
	g.timer.Reset(g.cfg.Interval)
}

// redispatch runs a dispatch on its own (the pressure gate's timer).
func (s *Scheduler) redispatch() {
	var buf [8]*job
	now := s.lockAt(s.now())
	wake := s.dispatchLocked(now, buf[:0])
	s.mu.Unlock()
	s.wakeAll(wake)
}

// RuntimePressure is a PressureSource from the Go runtime's own scheduling
// latency (runtime/metrics "/sched/latencies:seconds": how long goroutines
// wait to run): the pressure is the 99th percentile of that latency since
// the previous reading, divided by target, capped at 1. A server whose
// goroutines wait target or longer for a CPU is saturated. It is safe for
// concurrent use.
type RuntimePressure struct {
	target time.Duration
	mu     sync.Mutex
	sample []metrics.Sample
	prev   []uint64
}

// NewRuntimePressure returns a RuntimePressure with the given target
// latency (e.g. 10ms); target must be positive.
func NewRuntimePressure(target time.Duration) (*RuntimePressure, error) {
	if target <= 0 {
		return nil, fmt.Errorf("%w: NewRuntimePressure: target must be > 0, got %v", ErrInvalidConfig, target)
	}
	return &RuntimePressure{target: target, sample: []metrics.Sample{{Name: "/sched/latencies:seconds"}}}, nil
}

// Pressure implements PressureSource.
func (r *RuntimePressure) Pressure() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	metrics.Read(r.sample)
	if r.sample[0].Value.Kind() != metrics.KindFloat64Histogram {
		return 0 // not supported by this runtime
	}
	h := r.sample[0].Value.Float64Histogram()
	delta := make([]uint64, len(h.Counts))
	total := uint64(0)
	for i, c := range h.Counts {
		if i < len(r.prev) {
			delta[i] = c - r.prev[i]
		} else {
			delta[i] = c
		}
		total += delta[i]
	}
	r.prev = append(r.prev[:0], h.Counts...)
	return histogramPressure(delta, h.Buckets, total, r.target)
}

// histogramPressure is the 99th percentile of a histogram (counts per
// bucket, bucket boundaries in seconds) divided by target, capped at 1.
func histogramPressure(counts []uint64, buckets []float64, total uint64, target time.Duration) float64 {
	if total == 0 {
		return 0
	}
	want := total - total/100 // the sample at the 99th percentile
	seen := uint64(0)
	for i, c := range counts {
		seen += c
		if seen >= want {
			lat := buckets[i] // lower bound of the bucket
			if math.IsInf(lat, -1) {
				lat = 0
			}
			return min(1, lat/target.Seconds())
		}
	}
	return 1
}
