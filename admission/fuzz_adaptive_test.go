package admission

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fairseat/fairseat/internal/simserver"
)

// FuzzAdaptive drives a scheduler with adaptive capacity, as FuzzDispatch
// drives one with a fixed capacity, through arrivals, completions, seats
// handed back, cancellations and time passing, and through what only the
// controller reads: any seat time (none at all, a nanosecond, an hour, or
// a simulated server's, base × max(1, load/C), which makes the controller
// probe, cut and grow; C halves and doubles as a disk slows down and
// recovers, and the server may thrash past C, simserver.SeatTime), time
// jumps past CostTTL, its bounds moved by
// SetAdaptiveBounds (valid or not), SetCapacity (refused while adaptive),
// and pressure readings of any value (NaN, ±Inf, negative, above 1) with
// queue-delay shedding on or off. There is no reference model of the
// controller: after every step it checks the scheduler's invariants
// (checkInvariantsLocked, which for adaptive capacity include a finite
// controller state and finite references, a limit within its bounds whose seats are the
// capacity, and kept capacity changes that follow on from each other),
// that those changes are in the order of their times, and that no job is
// admitted while the seats are full; after
// the last operation, that the debug page and its JSON render the state. A
// NaN, a limit out of bounds, a panic, or a deadlock (which synctest
// reports) in the controller fails here.
//
// The scheduler runs in a synctest bubble so that its own clock (SetAdaptiveBounds,
// the pressure gate's timer) and the explicit times of the locked calls are
// one fake clock.
func FuzzAdaptive(f *testing.F) {
	for _, s := range adaptiveFuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		synctest.Test(t, func(t *testing.T) { runAdaptiveFuzz(t, data) })
	})
}

// adaptiveFuzzSeeds are FuzzAdaptive's seed inputs.
var adaptiveFuzzSeeds = [][]byte{
	{},
	// Min 1, Max 16, Initial 4, C 4: a flood of arrivals, then completions
	// at the simulated server's seat times, time passing between them.
	append([]byte{0x00, 0x0f, 0x03, 0x03, 0x00, 0x00},
		[]byte{0, 0x00, 0, 0x09, 0, 0x12, 0, 0x1b, 0, 0x24, 0, 0x2d, 0, 0x36, 0, 0x3f,
			3, 0x10, 7, 0x02, 3, 0x20, 7, 0x02, 3, 0x30, 0, 0x01, 3, 0x00, 7, 0x01, 3, 0x00}...),
	// Shedding on, pressure NaN then +Inf, bounds moved, a seat of no time.
	append([]byte{0x21, 0x1f, 0x08, 0x07, 0x35, 0x01},
		[]byte{0, 0x00, 0, 0x08, 0, 0x10, 9, 0x05, 7, 0x03, 9, 0x06, 7, 0x03, 8, 0x31,
			4, 0x00, 3, 0xc0, 10, 0x03, 6, 0x00, 7, 0x8a, 5, 0x00}...),
	steadyThenSlowDisk(),
}

// steadyThenSlowDisk is a seed input that reaches explainFall: Min 1, Max
// 16, Initial 4, C 4, ProbeInterval 10, no pressure; sixteen arrivals,
// then 100 rounds of an arrival and a completion at the simulated
// server's seat time, long enough for the probes to go quiet, then the
// server's capacity halves under 83 more. (Random inputs seldom hold the
// server steady for so long: one in 300 or none reached it.)
func steadyThenSlowDisk() []byte {
	b := []byte{0x00, 0x0f, 0x03, 0x03, 0x00, 0x45}
	for i := range 16 {
		b = append(b, 0, byte(i%8|i/8<<3)) // key k(i%8), job ID r(i/8)
	}
	for i := range 100 {
		b = append(b, 0, byte(i%8|i*3%8<<3), 3, byte(i*7%64))
	}
	b = append(b, 11, 0) // C halves
	for i := range 83 {
		b = append(b, 0, byte(i%8|i*5%8<<3), 3, byte(i*11%64))
	}
	return b
}

// The seat times a completion may be given besides the simulated
// server's (adaptiveDriver.observed).
var fuzzSeatTimes = []time.Duration{0, time.Nanosecond, time.Microsecond, time.Millisecond,
	30 * time.Millisecond, 300 * time.Millisecond, time.Second, time.Hour}

// The pressure readings an operation may set.
var fuzzPressures = []float64{0, 0.5, 0.95, 1, 1.5, math.NaN(), math.Inf(1), math.Inf(-1), -1}

// adaptiveFuzzConfig reads the scheduler's configuration from six bytes;
// c is the simulated server's true capacity.
func adaptiveFuzzConfig(b [6]byte, pressure *float64) (cfg Config, c int) {
	minSeats := 1 + int(b[0]&0x07)
	maxSeats := minSeats + int(b[1]&0x3f)
	initial := minSeats + int(b[2])%(maxSeats-minSeats+1)
	c = 1 + int(b[3]&0x1f)
	a := &AdaptiveConfig{
		Min: minSeats, Max: maxSeats, Initial: initial,
		Tolerance:     1 + float64(1+b[4]&0x0f)/16, // 1.0625 to 2
		ProbeInterval: 5 + int(b[5]&0x3f),
	}
	if b[0]&0x20 != 0 {
		a.QueueDelayTarget = 20 * time.Millisecond
	}
	if b[4]&0x10 != 0 {
		a.Smoothing = 1
	}
	if b[4]&0x20 != 0 {
		a.UsedFraction = 0.5
	}
	cfg = Config{Adaptive: a, MaxQueue: 48, CostTTL: 30 * time.Second, KeyTTL: 30 * time.Second}
	if b[2]&0x80 != 0 {
		// A key guaranteed seats: its MinSeats must fit in Min, here and
		// in every SetAdaptiveBounds.
		cfg.Keys = map[string]KeyPolicy{"k0": {MinSeats: 1 + minSeats/2, Weight: 2}}
	}
	if b[5]&0x40 == 0 {
		cfg.Pressure = &PressureConfig{
			Source:      PressureFunc(func() float64 { return *pressure }),
			Threshold:   0.9,
			MinPriority: PriorityBackground,
		}
	}
	return cfg, c
}

// adaptiveDriver is the fuzz target's record of its jobs.
type adaptiveDriver struct {
	t       *testing.T
	s       *Scheduler
	c       int     // the simulated server's true capacity
	thrash  float64 // and how it thrashes past it (simserver.SeatTime's a): 0 or 0.5
	queued  []*job
	running []*job
	ops     []string
	run     adaptiveFuzzRun // what the input made the controller do so far
	// guaranteed is the configured keys' MinSeats, which Min must hold.
	guaranteed int
}

// adaptiveFuzzRun is what one input made the controller do.
type adaptiveFuzzRun struct {
	changes [len(capacityReasons)]uint64 // capacity changes by reason
	shed    uint64                       // arrivals and queued jobs refused by queue-delay shedding
	probes  bool                         // a step ended with a probe running
	fell    bool                         // a step ended with a fall waiting for a probe to explain it (explainFall)
}

func runAdaptiveFuzz(t *testing.T, data []byte) adaptiveFuzzRun {
	var head [6]byte
	n := copy(head[:], data)
	data = data[n:]
	pressure := 0.0
	cfg, c := adaptiveFuzzConfig(head, &pressure)
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("New(%+v): %v", *cfg.Adaptive, err)
	}
	defer s.Close(context.Background())
	for _, typ := range []struct {
		name JobType
		p    Priority
	}{{"clone", PriorityForeground}, {"repack", PriorityBackground}} {
		if err := s.RegisterType(typ.name, JobTypeConfig{DefaultCost: 100 * time.Millisecond, Priority: typ.p}); err != nil {
			t.Fatal(err)
		}
	}
	d := &adaptiveDriver{t: t, s: s, c: c, guaranteed: cfg.Keys["k0"].MinSeats}
	d.logf("config %+v, C %d", *cfg.Adaptive, c)
	for len(data) >= 2 && len(d.ops) < 400 {
		op, arg := data[0], data[1]
		data = data[2:]
		switch op % 12 {
		case 0, 1, 2: // an arrival: type, key and job ID from arg
			typ := JobType("clone")
			if arg&0x40 != 0 {
				typ = "repack"
			}
			d.arrive(typ, fmt.Sprintf("k%d", arg&0x07), fmt.Sprintf("r%d", arg>>3&0x07))
		case 3, 4: // a completion
			if len(d.running) > 0 {
				d.finish(int(arg&0x3f)%len(d.running), d.observed(arg), true)
			}
		case 5: // a seat handed back by a waiter that gave up
			if len(d.running) > 0 {
				d.finish(int(arg)%len(d.running), nil, false)
			}
		case 6: // a waiter's context ends
			if len(d.queued) > 0 {
				d.cancel(int(arg) % len(d.queued))
			}
		case 7: // time passes: 0 to 1.5 s, or 10 s to 137 s (past CostTTL)
			step := time.Duration(arg&0x0f) * 100 * time.Millisecond
			if arg&0x80 != 0 {
				step = time.Duration(10+int(arg&0x7f)) * time.Second
			}
			d.advance(step)
		case 8: // the operator moves the bounds, validly or not
			d.setBounds(int(arg&0x0f), int(arg>>4))
		case 9: // the pressure source reads another value
			pressure = fuzzPressures[int(arg)%len(fuzzPressures)]
			d.logf("pressure %v", pressure)
			d.step(func(now int64) { s.dispatchLocked(now, nil) })
		case 11: // the simulated server's capacity halves or doubles (a slow disk, and back), or it starts or stops thrashing past C
			switch {
			case arg&0x80 != 0:
				d.thrash = 0.5 - d.thrash
				d.logf("thrash %v", d.thrash)
			case arg&1 == 0:
				d.c = max(1, d.c/2)
				d.logf("C %d", d.c)
			default:
				d.c = min(64, 2*d.c)
				d.logf("C %d", d.c)
			}
		case 10: // the operator sets the capacity by hand: refused
			if err := s.SetCapacity(1 + int(arg)); !errors.Is(err, ErrInvalidConfig) {
				d.fatalf("SetCapacity(%d) with adaptive capacity = %v, want ErrInvalidConfig", 1+int(arg), err)
			}
		}
	}
	if err := debugPageRenders(s); err != nil {
		d.fatalf("%v", err)
	}
	d.drain()
	s.mu.Lock()
	d.run.changes, d.run.shed = s.adaptive.changes, s.counters.RejectedOverload
	s.mu.Unlock()
	return d.run
}

func (d *adaptiveDriver) logf(format string, args ...any) {
	d.ops = append(d.ops, fmt.Sprintf(format, args...))
}

func (d *adaptiveDriver) fatalf(format string, args ...any) {
	d.t.Helper()
	fatalAfter(d.t, d.s, d.ops, format, args...)
}

// observed is a completion's seat time: the simulated server's for most
// args (its job's base time, from the job ID, times max(1, load/C), and
// longer still past C while it thrashes), one of fuzzSeatTimes for the
// rest.
func (d *adaptiveDriver) observed(arg byte) func(j *job) time.Duration {
	if arg < 0xc0 {
		return func(j *job) time.Duration {
			base := time.Duration(30+40*int(j.jobID[1]-'0')) * time.Millisecond
			return simserver.SeatTime(base, int(j.load), d.c, d.thrash)
		}
	}
	seat := fuzzSeatTimes[int(arg)%len(fuzzSeatTimes)]
	return func(*job) time.Duration { return seat }
}

// step runs op under the scheduler's lock at the bubble's now, then sorts
// the driver's jobs by their state and checks the invariants.
func (d *adaptiveDriver) step(op func(now int64)) {
	d.t.Helper()
	s := d.s
	s.mu.Lock()
	before := s.inUse
	op(s.now())
	err := s.checkInvariantsLocked()
	if kept := s.adaptive.keptChanges(); err == nil {
		// One goroutine at a time on one fake clock: the changes are in
		// the order of their times (with concurrent calls they need not
		// be, see CapacityChange.Time).
		for i := 1; i < len(kept); i++ {
			if kept[i].at < kept[i-1].at {
				err = fmt.Errorf("kept capacity change %+v before %+v in time", kept[i], kept[i-1])
			}
		}
	}
	inUse, capacity := s.inUse, s.cfg.Capacity
	d.run.probes = d.run.probes || s.adaptive.probing
	d.run.fell = d.run.fell || s.adaptive.fell
	s.mu.Unlock()
	if err != nil {
		d.fatalf("invariant: %v", err)
	}
	admitted := d.sort()
	if admitted > 0 && inUse > capacity && inUse > before {
		d.fatalf("%d admitted with %d seats in use of %d", admitted, inUse, capacity)
	}
}

// sort moves the driver's jobs that dispatch admitted or shed since the
// last step (or pushed out), and returns how many it admitted.
func (d *adaptiveDriver) sort() (admitted int) {
	d.t.Helper()
	var bad error
	d.s.mu.Lock()
	q := d.queued[:0]
	for _, j := range d.queued {
		switch j.state {
		case jobQueued, jobParked:
			q = append(q, j)
		case jobRunning:
			d.running = append(d.running, j)
			admitted++
		default:
			if !errors.Is(j.err, ErrOverloaded) && !errors.Is(j.err, ErrQueueFull) {
				bad = fmt.Errorf("a queued job is in state %d with error %v; only shedding (ErrOverloaded) or a push-out (ErrQueueFull) ends one", j.state, j.err)
			}
		}
	}
	d.s.mu.Unlock()
	clear(d.queued[len(q):])
	d.queued = q
	if bad != nil {
		d.fatalf("%v", bad)
	}
	return admitted
}

func (d *adaptiveDriver) arrive(typ JobType, key, jobID string) {
	d.t.Helper()
	j := &job{jobID: jobID, foreground: true}
	d.logf("arrive %s/%s key=%s", typ, jobID, key)
	var err error
	d.step(func(now int64) {
		s := d.s
		var wake []*job
		wake, err = s.enqueueLocked(j, s.types[typ], key, now, nil)
		if err == nil {
			// queued for sort, which sees (under the lock: the pressure
			// gate's timer dispatches too) whether dispatch admitted it
			d.queued = append(d.queued, j)
			s.dispatchLocked(now, wake)
		}
	})
	if err != nil && !errors.Is(err, ErrQueueFull) && !errors.Is(err, ErrOverloaded) {
		d.fatalf("arrival refused with %v, want ErrQueueFull or ErrOverloaded", err)
	}
}

// finish ends running job i, as Release does after the seat time seat
// gives (learn), or as abandon does when a waiter gave up just as it was
// admitted: no charge, nothing learned, counted as cancelled.
func (d *adaptiveDriver) finish(i int, seat func(*job) time.Duration, learn bool) {
	d.t.Helper()
	j := d.running[i]
	d.running = append(d.running[:i], d.running[i+1:]...)
	observed := time.Duration(0)
	if learn {
		observed = seat(j)
	}
	d.logf("finish %s/%s load=%d seat=%v learn=%v", j.typ.name, j.jobID, j.load, observed, learn)
	d.step(func(now int64) {
		d.s.finishLocked(j, now, observed, learn)
		if !learn {
			d.s.counters.Cancelled++
			j.err = context.Canceled
		}
		d.s.dispatchLocked(now, nil)
	})
}

func (d *adaptiveDriver) cancel(i int) {
	d.t.Helper()
	j := d.queued[i]
	d.queued = append(d.queued[:i], d.queued[i+1:]...)
	d.logf("cancel %s/%s", j.typ.name, j.jobID)
	d.step(func(now int64) {
		d.s.unqueueLocked(j, now)
		d.s.counters.Cancelled++
		j.err = context.Canceled
	})
}

// advance lets fake time pass; the pressure gate's timer may fire on the
// way (synctest.Wait lets its dispatch finish), and the dispatch after it
// is the next arrival's or release's.
func (d *adaptiveDriver) advance(step time.Duration) {
	d.t.Helper()
	d.logf("advance %v", step)
	time.Sleep(step)
	synctest.Wait()
	d.step(func(now int64) { d.s.dispatchLocked(now, nil) })
}

func (d *adaptiveDriver) setBounds(minSeats, maxSeats int) {
	d.t.Helper()
	d.logf("bounds %d..%d", minSeats, maxSeats)
	err := d.s.SetAdaptiveBounds(minSeats, maxSeats)
	if valid := minSeats >= 1 && minSeats <= maxSeats && minSeats >= d.guaranteed; valid != (err == nil) || err != nil && !errors.Is(err, ErrInvalidConfig) {
		d.fatalf("SetAdaptiveBounds(%d, %d) = %v", minSeats, maxSeats, err)
	}
	d.step(func(int64) {})
}

// drain ends every queued and running job, and checks that nothing is left.
func (d *adaptiveDriver) drain() {
	d.t.Helper()
	for len(d.queued) > 0 || len(d.running) > 0 {
		switch {
		case len(d.queued) > 0:
			d.cancel(0)
		default:
			d.finish(0, func(*job) time.Duration { return 50 * time.Millisecond }, true)
		}
	}
	d.s.mu.Lock()
	inUse, queued := d.s.inUse, d.s.queued
	d.s.mu.Unlock()
	if inUse != 0 || queued != 0 {
		d.fatalf("drained: %d seats in use, %d queued", inUse, queued)
	}
}

// TestAdaptiveRandomSequences runs FuzzAdaptive's driver on its seed
// inputs and 300 random ones, most of them floods of arrivals answered at
// the simulated server's seat times, and checks that together they reach
// every part of the controller the fuzz target means to test: each reason
// of a capacity change, a probe, a fall of the limit after the probes went
// quiet (which the next probe explains or not: explainFall), and
// queue-delay shedding. (A fuzz target whose driver never got there would
// pass on anything.)
func TestAdaptiveRandomSequences(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var total adaptiveFuzzRun
	inputs := slices.Clone(adaptiveFuzzSeeds)
	for range 300 {
		inputs = append(inputs, randomAdaptiveInput(r))
	}
	for i, data := range inputs {
		var run adaptiveFuzzRun
		ok := t.Run(fmt.Sprint(i), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { run = runAdaptiveFuzz(t, data) })
		})
		if !ok {
			t.Fatalf("input %q", data)
		}
		for i, n := range run.changes {
			total.changes[i] += n
		}
		total.shed += run.shed
		total.probes = total.probes || run.probes
		total.fell = total.fell || run.fell
	}
	for i, n := range total.changes {
		if n == 0 {
			t.Errorf("no capacity change for reason %q in %d inputs", capacityReasons[i], len(inputs))
		}
	}
	if !total.probes || !total.fell || total.shed == 0 {
		t.Errorf("%d inputs: a probe ran %v, a fall brought one on %v, %d shed", len(inputs), total.probes, total.fell, total.shed)
	}
	t.Logf("capacity changes by reason %v: %v; shed %d", capacityReasons, total.changes, total.shed)
}

// randomAdaptiveInput returns a configuration and up to 400 operations:
// arrivals and simulated completions in the main, the rest as they fall.
func randomAdaptiveInput(r *rand.Rand) []byte {
	b := make([]byte, 6+2*r.IntN(401))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	for i := 6; i+1 < len(b); i += 2 {
		switch n := r.IntN(100); {
		case n < 2:
			b[i] = 11 // the server's capacity changes
		case n < 40:
			b[i] = byte(r.IntN(3)) // arrive
		case n < 80:
			b[i], b[i+1] = 3, b[i+1]&0x7f // complete at the simulated server's time
		}
	}
	return b
}
