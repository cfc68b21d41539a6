package adaptive

import (
	"runtime"
	"sync/atomic"
	"time"
)

// cpuServer is a real server, where the other servers of this package are
// simulated: a job burns this machine's CPU for its base time, as measured
// on one idle core, so its true capacity is the number of cores the Go
// runtime runs goroutines on (GOMAXPROCS). Past it the runtime shares the
// cores among the running jobs, switching every 10 ms or so, and each job
// takes longer: a CPU-bound server, as simserver.NewShared simulates one,
// with whatever else a real machine adds (the runtime's scheduler, the
// garbage collector, the limiter's own goroutines, other processes). It
// takes real time: run it outside testing/synctest, where the clock would
// not move while a job burns.
//
// Work counts the base time done in slices of a millisecond as the jobs
// run. SetCapacity sets GOMAXPROCS: half the cores is the slow disk's
// analogue, a server that lost half its CPU.
type cpuServer struct {
	perMs float64      // spin iterations per millisecond of one core (calibrate)
	work  atomic.Int64 // base time done, in nanoseconds
	c     atomic.Int32 // GOMAXPROCS as set by newCPUServer or SetCapacity
}

// spun keeps the last state of spin's generator, so that the compiler
// cannot drop the loop.
var spun atomic.Uint64

// newCPUServer sets GOMAXPROCS to c and measures the CPU's speed.
func newCPUServer(c int) *cpuServer {
	v := &cpuServer{}
	v.SetCapacity(c)
	v.perMs = calibrate()
	return v
}

// spin burns n iterations of a xorshift generator from state x and
// returns its state.
func spin(x uint64, n int) uint64 {
	for range n {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	return x
}

// calibrate returns how many iterations of spin one core does per
// millisecond: the fastest of 40 measurements of 2^20 iterations (about
// 1.5 ms each on the AMD EPYC host of benchmarks/ADMISSION.md, session
// 39), the one least disturbed by anything else running.
func calibrate() float64 {
	const n = 1 << 20
	best := time.Duration(1<<63 - 1)
	x := uint64(1)
	for range 40 {
		start := time.Now()
		x = spin(x, n)
		best = min(best, time.Since(start))
	}
	spun.Store(x)
	return n / (float64(best) / float64(time.Millisecond))
}

// Serve burns base of CPU and returns the time it took.
func (v *cpuServer) Serve(base time.Duration) time.Duration {
	start := time.Now()
	x := uint64(start.UnixNano()) | 1
	for left := base; left > 0; left -= time.Millisecond {
		d := min(left, time.Millisecond)
		x = spin(x, int(v.perMs*float64(d)/float64(time.Millisecond)))
		v.work.Add(int64(d))
	}
	spun.Store(x)
	return time.Since(start)
}

// Capacity is GOMAXPROCS as last set.
func (v *cpuServer) Capacity() int { return int(v.c.Load()) }

// SetCapacity sets GOMAXPROCS to c.
func (v *cpuServer) SetCapacity(c int) {
	runtime.GOMAXPROCS(c)
	v.c.Store(int32(c))
}

// Work is the base time done since newCPUServer.
func (v *cpuServer) Work() time.Duration { return time.Duration(v.work.Load()) }
