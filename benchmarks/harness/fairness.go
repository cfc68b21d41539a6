package harness

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/fairseat/fairseat/benchmarks/peer"
)

// A Flow is one client of a closed-loop run: Outstanding goroutines that
// each issue a request, hold the seat for the run's work duration, and
// issue the next at once.
type Flow struct {
	Key         string
	Outstanding int
	Weight      float64 // 0 = 1; only weighted peers honour it
}

// FlowResult is what one flow got during a closed-loop run.
type FlowResult struct {
	Key       string
	Completed int
	// Seats is the flow's average number of seats held over the
	// measurement window: seat time inside the window / window length.
	Seats float64
}

// ClosedLoopConfig describes a closed-loop run.
type ClosedLoopConfig struct {
	Capacity int
	Flows    []Flow
	Work     time.Duration // seat time of every request
	Warmup   time.Duration // not measured
	Window   time.Duration // measured
}

// ThreeFlows is the closed-loop fairness case: 12, 4 and 2 outstanding
// requests on 4 seats; a fair limiter gives each flow 4/3 seats.
func ThreeFlows(work, warmup, window time.Duration) ClosedLoopConfig {
	return ClosedLoopConfig{
		Capacity: 4,
		Flows:    []Flow{{Key: "heavy", Outstanding: 12}, {Key: "medium", Outstanding: 4}, {Key: "light", Outstanding: 2}},
		Work:     work, Warmup: warmup, Window: window,
	}
}

// WeightedPair is the weighted case: two backlogged flows (8 outstanding
// each) weighted 3:1 on 4 seats; a weighted-fair limiter gives them 3 and 1
// seats.
func WeightedPair(work, warmup, window time.Duration) ClosedLoopConfig {
	return ClosedLoopConfig{
		Capacity: 4,
		Flows:    []Flow{{Key: "gold", Outstanding: 8, Weight: 3}, {Key: "bronze", Outstanding: 8, Weight: 1}},
		Work:     work, Warmup: warmup, Window: window,
	}
}

func (c ClosedLoopConfig) peerConfig() peer.Config {
	w := make(map[string]float64, len(c.Flows))
	for _, f := range c.Flows {
		w[f.Key] = f.Weight
		if f.Weight == 0 {
			w[f.Key] = 1
		}
	}
	return peer.Config{Capacity: c.Capacity, Weights: w}
}

// ClosedLoop runs c against a new limiter of p, in real time (or fake time
// inside a testing/synctest bubble), and returns each flow's result in the
// order of c.Flows. It takes Warmup + Window plus the last requests' work.
func ClosedLoop(p peer.Peer, c ClosedLoopConfig) ([]FlowResult, error) {
	l, err := p.New(c.peerConfig())
	if err != nil {
		return nil, err
	}
	defer l.Close()

	t0 := time.Now()
	from, to := t0.Add(c.Warmup), t0.Add(c.Warmup+c.Window)
	ctx, cancel := context.WithDeadline(context.Background(), to)
	defer cancel()

	var mu sync.Mutex
	res := make([]FlowResult, len(c.Flows))
	var seatTime = make([]time.Duration, len(c.Flows))
	var wg sync.WaitGroup
	var firstErr error
	for i, f := range c.Flows {
		res[i].Key = f.Key
		for range f.Outstanding {
			wg.Go(func() {
				for ctx.Err() == nil {
					var start, end time.Time
					err := l.Do(ctx, f.Key, func() {
						start = time.Now()
						time.Sleep(c.Work)
						end = time.Now()
					})
					if err != nil {
						if ctx.Err() == nil {
							mu.Lock()
							firstErr = cmpErr(firstErr, fmt.Errorf("%s: flow %s: %w", p.Name, f.Key, err))
							mu.Unlock()
						}
						return
					}
					// Only seat time inside [from, to] counts.
					s, e := maxTime(start, from), minTime(end, to)
					mu.Lock()
					if e.After(s) {
						seatTime[i] += e.Sub(s)
					}
					if !start.Before(from) && !end.After(to) {
						res[i].Completed++
					}
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	for i := range res {
		res[i].Seats = seatTime[i].Seconds() / c.Window.Seconds()
	}
	return res, firstErr
}

func cmpErr(old, new error) error {
	if old != nil {
		return old
	}
	return new
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// FloodConfig describes the flood case: one client submits Flood requests
// at once; once they are queued, a light client issues requests one after
// another until the flood has been served.
type FloodConfig struct {
	Capacity int
	Flood    int
	Work     time.Duration // seat time of every request, both clients
	Settle   time.Duration // pause after starting the flood, so that it is queued
}

// DefaultFlood is the flood case of the report: 1000 requests on 4 seats.
func DefaultFlood(work time.Duration) FloodConfig {
	return FloodConfig{Capacity: 4, Flood: 1000, Work: work, Settle: 20 * time.Millisecond}
}

// FloodResult is what the light client saw.
type FloodResult struct {
	LightRequests int
	LightP50      time.Duration // wait from calling Do to holding a seat
	LightP99      time.Duration
	LightMax      time.Duration
	FloodDone     time.Duration // from the flood's start to its last completion
}

// Flood runs c against a new limiter of p.
func Flood(p peer.Peer, c FloodConfig) (FloodResult, error) {
	l, err := p.New(peer.Config{Capacity: c.Capacity, Weights: map[string]float64{"flood": 1, "light": 1}})
	if err != nil {
		return FloodResult{}, err
	}
	defer l.Close()
	ctx := context.Background()

	t0 := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, c.Flood+1)
	for range c.Flood {
		wg.Go(func() {
			if err := l.Do(ctx, "flood", func() { time.Sleep(c.Work) }); err != nil {
				errs <- err
			}
		})
	}
	floodDone := make(chan time.Duration)
	go func() { wg.Wait(); floodDone <- time.Since(t0) }()
	time.Sleep(c.Settle)

	var waits []time.Duration
	var r FloodResult
light:
	for {
		select {
		case r.FloodDone = <-floodDone:
			break light
		default:
		}
		called := time.Now()
		var wait time.Duration
		if err := l.Do(ctx, "light", func() { wait = time.Since(called); time.Sleep(c.Work) }); err != nil {
			errs <- err
			r.FloodDone = <-floodDone
			break
		}
		waits = append(waits, wait)
	}
	close(errs)
	for err := range errs {
		return r, fmt.Errorf("%s: %w", p.Name, err)
	}
	r.LightRequests = len(waits)
	if len(waits) > 0 {
		slices.Sort(waits)
		r.LightP50 = percentile(waits, 0.50)
		r.LightP99 = percentile(waits, 0.99)
		r.LightMax = waits[len(waits)-1]
	}
	return r, nil
}

// percentile returns the q-quantile of sorted (nearest rank).
func percentile(sorted []time.Duration, q float64) time.Duration {
	i := int(float64(len(sorted))*q+0.999999) - 1
	i = max(0, min(i, len(sorted)-1))
	return sorted[i]
}
