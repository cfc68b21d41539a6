package adaptive

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/fairseat/fairseat/internal/simserver"
)

// Scenario is one run's server and load.
type Scenario struct {
	Name     string
	C        int           // true capacity
	Duration time.Duration // of the run
	Warmup   time.Duration // not measured (the limit over time is drawn from the start)
	// The true capacity (CapacityAt) is C/2 in [SlowFrom, SlowTo) (a slow disk); zero
	// SlowTo: never.
	SlowFrom, SlowTo time.Duration
	Flood            int           // the flood's closed loops
	LightThink       time.Duration // the light client's pause between requests
	// Noise is the spread of a job's base time around its repository's
	// (simserver.Spread; 0: every job of a repository takes the same base
	// time).
	Noise float64
	// Draw chooses the jobs the clients draw (repositories and, with
	// Noise, their times): each client's loop seeds its random source with
	// its number and Draw. Runs of one Draw draw the same jobs, and differ
	// only in the order in which goroutines woken at one instant run; the
	// report runs each limiter with Draws 0 to Rounds-1.
	Draw uint64
	// Thrash is how much less the server does in all past C
	// (simserver.SeatTime's a; 0: it does C however many jobs it runs).
	Thrash float64
	// Shared runs a server that shares itself among its jobs
	// (simserver.NewShared): a job slows down as soon as others join it,
	// not only when it starts under load.
	Shared bool
	// Repos multiplies the repositories the clients draw from (draw): 20
	// heavy and 80 light ones times Repos, each drawn as often as the
	// others of its kind; 0 is 1. A (type, job ID) takes its reference
	// only at a load the controller holds uncongested, so the more
	// repositories, the fewer of them have one under a flood
	// (benchmarks/ADMISSION.md, session 39).
	Repos int
	// CPU runs on this machine's CPU (cpuServer), not a simulated server:
	// C is the cores the run uses (GOMAXPROCS), and the run takes real
	// time, outside testing/synctest. Thrash and Shared do not apply.
	CPU bool
}

// CapacityAt is the true capacity at el into the run.
func (sc Scenario) CapacityAt(el time.Duration) int {
	if sc.SlowTo > 0 && el >= sc.SlowFrom && el < sc.SlowTo {
		return sc.C / 2
	}
	return sc.C
}

// Steady is the main scenario: a true capacity of 16 seats all along, a
// flood of 96 loops (six times the capacity) and a light client.
func Steady(d time.Duration) Scenario {
	return Scenario{Name: "steady", C: 16, Duration: d, Warmup: 10 * time.Second, Flood: 96, LightThink: 50 * time.Millisecond}
}

// SlowDisk is Steady with the true capacity halved for the middle third.
func SlowDisk(d time.Duration) Scenario {
	sc := Steady(d)
	sc.Name, sc.SlowFrom, sc.SlowTo = "slow disk", d/3, 2*d/3
	return sc
}

// NoisySlowDisk is SlowDisk on a server whose seat times vary from job to
// job: each job's base time is its repository's times a log-normal factor
// of spread 0.5 (half of the jobs within about ×0.7 to ×1.4 of the median;
// one in twenty past twice it), as a real server's do.
func NoisySlowDisk(d time.Duration) Scenario {
	sc := SlowDisk(d)
	sc.Name, sc.Noise = "noisy slow disk", 0.5
	return sc
}

// ThrashingSlowDisk is SlowDisk on a server that thrashes past C by a
// factor 0.3 (simserver.SeatTime): with twice C jobs running it does 77 %
// of C, with four times C 53 %. A real server given more work than fits
// its caches, memory or locks does less in all, not the same work more
// slowly; there a limit above C costs goodput, not only latency.
func ThrashingSlowDisk(d time.Duration) Scenario {
	sc := SlowDisk(d)
	sc.Name, sc.Thrash = "thrashing slow disk", 0.3
	return sc
}

// NoisyThrashingSlowDisk is NoisySlowDisk on a server that thrashes as
// ThrashingSlowDisk's does: seat times vary from job to job, and a limit
// above C costs goodput. Where seat times vary, fairseat adaptive settles
// above Tolerance·C (the package doc, "What noise still costs"); this is
// where that level costs more than latency.
func NoisyThrashingSlowDisk(d time.Duration) Scenario {
	sc := NoisySlowDisk(d)
	sc.Name, sc.Thrash = "noisy thrashing slow disk", 0.3
	return sc
}

// SharedSlowDisk is SlowDisk on a server that shares itself among the
// jobs running at every instant (simserver.NewShared), as a CPU or a disk
// does: a job slows down as soon as others join it, not only when it
// starts under load, so no moment of running more than C jobs does more
// than C seats of work.
func SharedSlowDisk(d time.Duration) Scenario {
	sc := SlowDisk(d)
	sc.Name, sc.Shared = "shared slow disk", true
	return sc
}

// NoisySharedSlowDisk is SharedSlowDisk where seat times vary as in
// NoisySlowDisk: a CPU-bound server whose requests differ in size, the
// one a real server resembles most. There fairseat adaptive settles
// higher than on either alone (the package doc's shared server;
// benchmarks/ADMISSION.md, session 35).
func NoisySharedSlowDisk(d time.Duration) Scenario {
	sc := SharedSlowDisk(d)
	sc.Name, sc.Noise = "noisy shared slow disk", 0.5
	return sc
}

// CPU is SlowDisk on this machine's CPU (Scenario.CPU), with a true
// capacity of cores (GOMAXPROCS), half of them in the middle third, and a
// flood of six loops a core. It takes d of real time.
func CPU(d time.Duration, cores int) Scenario {
	sc := SlowDisk(d)
	sc.Name, sc.C, sc.Flood, sc.CPU = "CPU", cores, 6*cores, true
	return sc
}

// Scenarios are the report's scenarios, d long each.
func Scenarios(d time.Duration) []Scenario {
	return []Scenario{Steady(d), SlowDisk(d), NoisySlowDisk(d), ThrashingSlowDisk(d), NoisyThrashingSlowDisk(d), SharedSlowDisk(d), NoisySharedSlowDisk(d)}
}

// Tick is how often a run records the limit (Result.Limits).
const Tick = 100 * time.Millisecond

// lossTick is how often a run samples the limit and the true capacity to
// account for lost goodput (Result.Lost): a probe lasts a few Ticks.
const lossTick = 10 * time.Millisecond

// Result is what one limiter did in one scenario.
type Result struct {
	Name string
	// Goodput is the work done per second in the measured window, in seats
	// of base time (at most C, but for the moments where a server of
	// simserver.New runs jobs started under less load): the base time the
	// server did in the window (simserver.Server.Work), a job running
	// across an edge of it counting for the part it did inside.
	Goodput float64
	// Completed is the base time of the requests completed in the window,
	// per second: the measure the report used before Goodput. It counts
	// the whole of a job that began before the window and nothing of one
	// still running at its end, so it strays from Goodput by what is in
	// flight at either edge (diagnose_test.go shows the split).
	Completed float64
	Done      int // requests completed in the window
	// P50 and P99 are the latency (wait and seat time) of the requests
	// completed in the window, both clients.
	P50, P99 time.Duration
	// LightP99Wait is the light client's p99 wait for a seat.
	LightP99Wait time.Duration
	Refused      int   // requests the limiter refused (retried after 10 ms)
	Limits       []int // the limit at every Tick from the start
	MeanLimit    float64
	// Lost is the goodput lost against the true capacity in the measured
	// window, as a fraction of its capacity-seconds (the integral of C),
	// by what the limiter was doing then (see Loss).
	Lost Loss
	// ticks are what Lost was computed from, and jobs the jobs the server
	// ran, for diagnostics (diagnose_test.go).
	ticks []lossSample
	jobs  []served
}

// Loss splits the goodput a run lost against the true capacity: at each
// lossTick, the capacity C less the base time the server did per second in
// it (simserver.Server.Work: past C the server does no more, so the jobs it
// runs then do C in all). Lost work counts where it happened: while the
// limiter probed (it has a Probing method saying so), while its limit was
// below C otherwise, or at another time (a limit at or above C whose seats
// are not all busy yet, or whose jobs were admitted at a load that made
// them slow). Each is a fraction of the window's capacity-seconds; one may
// be negative where a server of simserver.New did more than C for a moment
// (jobs started under less load run faster than C allows for the load now;
// a shared server never does).
type Loss struct {
	Probing, Below, Other float64
}

// Total is all the lost goodput.
func (l Loss) Total() float64 { return l.Probing + l.Below + l.Other }

// prober is a Limiter that lowers its limit on purpose now and then:
// fairseat's probes.
type prober interface {
	Probing() bool
}

// served is one job the server ran: when it took its seat, for how long,
// and its base time.
type served struct {
	start, seat, base time.Duration
}

// server is what Run serves its jobs on: a simserver.Server, or a
// cpuServer.
type server interface {
	Serve(base time.Duration) time.Duration
	Capacity() int
	SetCapacity(c int)
	Work() time.Duration
}

// newServer returns sc's server.
func (sc Scenario) newServer() server {
	if sc.CPU {
		return newCPUServer(sc.C)
	}
	v := simserver.New(sc.C)
	if sc.Shared {
		v = simserver.NewShared(sc.C)
	}
	v.SetThrash(sc.Thrash)
	return v
}

// Run plays sc against l and closes l. It must run inside a
// testing/synctest bubble (every goroutine it starts has returned when it
// does), but for a CPU scenario, which takes real time and must not.
func Run(sc Scenario, name string, l Limiter) (Result, error) {
	v := sc.newServer()
	ctx, cancel := context.WithCancel(context.Background())
	start := time.Now()
	from := start.Add(sc.Warmup)
	var (
		mu        sync.Mutex
		latencies []time.Duration
		light     []time.Duration
		work      time.Duration
		jobs      []served
		refused   int
		firstErr  error
		wg        sync.WaitGroup
	)
	loop := func(key string, seed uint64, think time.Duration) {
		rng := rand.New(rand.NewPCG(seed, 1+sc.Draw))
		for ctx.Err() == nil {
			id, base := draw(rng, max(sc.Repos, 1))
			base = time.Duration(float64(base) * simserver.Spread(rng, sc.Noise))
			asked := time.Now()
			var wait time.Duration
			err := l.Do(ctx, key, id, func() {
				wait = time.Since(asked)
				at := time.Since(start)
				seat := v.Serve(base)
				mu.Lock()
				jobs = append(jobs, served{at, seat, base})
				mu.Unlock()
			})
			now := time.Now()
			switch {
			case err == nil:
				if now.After(from) && ctx.Err() == nil {
					mu.Lock()
					latencies = append(latencies, now.Sub(asked))
					work += base
					if key == "light" {
						light = append(light, wait)
					}
					mu.Unlock()
				}
			case ctx.Err() != nil:
				return
			default:
				mu.Lock()
				refused++
				if firstErr == nil && refused > 1e6 {
					firstErr = fmt.Errorf("%s: refuses everything: %w", name, err)
				}
				mu.Unlock()
				time.Sleep(10 * time.Millisecond)
				continue
			}
			if think > 0 {
				time.Sleep(think)
			}
		}
	}
	for i := range sc.Flood {
		wg.Go(func() { loop("flood", uint64(i), 0) })
	}
	wg.Go(func() { loop("light", 1<<32, sc.LightThink) })

	r := Result{Name: name}
	p, _ := l.(prober)
	var ticks []lossSample
	for el := lossTick; el <= sc.Duration; el += lossTick {
		// Until el, not for lossTick: in real time (a CPU scenario) a tick
		// that woke late does not delay the ones after it. In fake time the
		// two are the same.
		time.Sleep(time.Until(start.Add(el)))
		// c is the true capacity during the tick that ended; the next one
		// may have another.
		c, limit := v.Capacity(), l.Limit()
		ticks = append(ticks, lossSample{at: time.Since(start), c: c, limit: limit, probing: p != nil && p.Probing(), work: v.Work()})
		if el%Tick == 0 {
			r.Limits = append(r.Limits, limit)
		}
		if next := sc.CapacityAt(el); next != c {
			v.SetCapacity(next)
		}
	}
	window := time.Since(from)
	cancel()
	wg.Wait()
	if err := l.Close(); err != nil {
		return r, err
	}
	if firstErr != nil {
		return r, firstErr
	}
	slices.Sort(latencies)
	slices.Sort(light)
	r.Completed = work.Seconds() / window.Seconds()
	r.Done, r.Refused = len(latencies), refused
	r.P50, r.P99 = quantile(latencies, 0.5), quantile(latencies, 0.99)
	r.LightP99Wait = quantile(light, 0.99)
	sum := 0
	for _, n := range r.Limits[int(sc.Warmup/Tick):] {
		sum += n
	}
	r.MeanLimit = float64(sum) / float64(len(r.Limits)-int(sc.Warmup/Tick))
	rate := rates(ticks)
	r.Goodput = done(ticks, rate, int(sc.Warmup/lossTick)) / window.Seconds()
	r.Lost = lost(ticks, rate, int(sc.Warmup/lossTick))
	r.ticks, r.jobs = ticks, jobs
	return r, nil
}

// lossSample is a lossTick of a run: the true capacity during it, and at
// its end the limit, whether the limiter probed, and the server's work so
// far.
type lossSample struct {
	at       time.Duration // when it was taken, from the start: el, but late in real time
	c, limit int
	probing  bool
	work     time.Duration
}

// add files x, the goodput lost at tick t, under what the limiter was
// doing then.
func (l *Loss) add(t lossSample, x float64) {
	switch {
	case t.probing:
		l.Probing += x
	case t.limit < t.c:
		l.Below += x
	default:
		l.Other += x
	}
}

// span is how long tick i lasted: lossTick, but in real time, where a
// tick may wake late and the next one early.
func span(ticks []lossSample, i int) float64 {
	if i == 0 {
		return ticks[0].at.Seconds()
	}
	return (ticks[i].at - ticks[i-1].at).Seconds()
}

// done is the base seconds of work done in the ticks from tick from on,
// rate being rates' result.
func done(ticks []lossSample, rate []float64, from int) float64 {
	w := 0.0
	for i := from; i < len(ticks); i++ {
		w += rate[i] * span(ticks, i)
	}
	return w
}

// lost accounts the goodput lost in ticks[from:] (see Loss), rate being
// rates' result.
func lost(ticks []lossSample, rate []float64, from int) Loss {
	var out Loss
	capacity := 0.0
	for i := from; i < len(ticks); i++ {
		t, dt := ticks[i], span(ticks, i)
		x := (float64(t.c) - rate[i]) * dt
		capacity += float64(t.c) * dt
		out.add(t, x)
	}
	out.Probing /= capacity
	out.Below /= capacity
	out.Other /= capacity
	return out
}

// rates is the base seconds of work the server did per second in each
// tick.
func rates(ticks []lossSample) []float64 {
	rate := make([]float64, len(ticks))
	var before time.Duration
	for i, t := range ticks {
		rate[i] = (t.work - before).Seconds() / span(ticks, i)
		before = t.work
	}
	return rate
}

// draw picks a job: one of 20·repos heavy repositories (300 ms) a tenth
// of the time, else one of 80·repos light ones (30 to 70 ms by
// repository).
func draw(rng *rand.Rand, repos int) (string, time.Duration) {
	if rng.IntN(10) == 0 {
		return fmt.Sprintf("heavy-%d", rng.IntN(20*repos)), 300 * time.Millisecond
	}
	i := rng.IntN(80 * repos)
	return fmt.Sprintf("light-%d", i), 30*time.Millisecond + time.Duration(i%5)*10*time.Millisecond
}

func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}
