// Command demo shows in one command what fairseat does for a gRPC server.
//
//	go run ./examples/demo
//
// It starts a real gRPC server on loopback TCP that simulates a git cache:
// Clone and Fetch requests from callers, Repack and Pull jobs the server
// queues for itself. Work takes time according to the repository (a clone
// of linux.git takes 1.2s, a tiny repository 30ms). A built-in load
// generator then plays a mixed workload for 20 seconds:
//
//   - heavy: a CI farm that starts 1000 clones at once;
//   - light: a developer who clones a few repositories, one after another;
//   - user: someone who triggers a burst of 30 fetches halfway through;
//   - background: repacks and pulls the server queues every second.
//
// The same load runs twice, first behind a plain semaphore with as many
// seats (a gRPC interceptor around golang.org/x/sync/semaphore: first come,
// first served, and nothing keeps a repack out of a repository in use), then
// behind fairseat (admission.Scheduler and the interceptors package), and
// the demo prints the two side by side.
//
// # Reading the table
//
// One line per caller, one group of columns per run:
//
//   - done: requests finished during the run, out of those that reached
//     the server. The heavy client asks for more than the server can do in
//     the time, in both runs; what matters is who else gets served.
//   - p50/p99 wait: how long requests waited for a seat (the median, and
//     the worst but one in a hundred). A "+" means that request was still
//     waiting when the run ended: the real wait is longer.
//   - seat share: the part of all seat time (seats x run time) the caller
//     used. Idle seats are listed too: a seat stays idle when nothing
//     waits, or (with fairseat) when all that waits needs a repository a
//     repack or pull holds.
//   - conflict violations: how often a writer (repack, pull) started on a
//     repository in use, or a reader (clone, fetch) started on one a writer
//     held. The handlers count this themselves; fairseat's conflict group
//     and shared access must keep it at 0.
//   - background: the longest wait of a maintenance job, and how many ran.
//
// Under a first-come-first-served semaphore the light client, the user and
// the maintenance jobs queue behind the heavy client's 1000 clones. Under
// fairseat each caller's share is weighed by the seat time it has already
// used (virtual time), so a caller that has used little goes first; clones
// and fetches of one repository run together, and a repack or pull of it
// waits for them, holding no seat, and then runs alone; and
// background jobs age up to the requests' priority, so they are never
// starved.
//
// The demo also draws the share of seats per caller over time for both
// runs, as an SVG file (-svg; by default fairseat-demo.svg in the
// system's temporary directory).
//
// # When the backend slows down
//
// A last phase (two runs of half the duration each) puts the clones on a
// disk that does -capacity clones at full speed, each taking longer in
// proportion past that, and slows it to half for the middle third: a slow
// disk. The heavy client keeps six clones per seat outstanding, the light
// one clones one repository after another. It runs behind fairseat with
// the capacity fixed at -capacity seats, then with adaptive capacity
// (admission.Config.Adaptive), and prints what to look at: the seats
// (adaptive capacity comes down to about what the slow disk can do and
// goes back up), the time a clone spends on the disk (the fixed capacity
// doubles it; the adaptive one keeps it at full speed, the rest waiting in
// the fair queue), and the light client, still first in line.
//
// Flags:
//
//	-duration  length of each of the first two runs (default 20s; the slowdown runs take half)
//	-capacity  seats (default 8)
//	-seed      seed of the load's random choices (default 1)
//	-svg       where to write the chart
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
)

func main() {
	cfg := defaultConfig()
	flag.DurationVar(&cfg.Duration, "duration", cfg.Duration, "length of each of the two runs")
	flag.IntVar(&cfg.Capacity, "capacity", cfg.Capacity, "seats: requests and jobs that may run at once")
	flag.Int64Var(&cfg.Seed, "seed", cfg.Seed, "seed of the load's random choices")
	flag.StringVar(&cfg.SVG, "svg", filepath.Join(os.TempDir(), "fairseat-demo.svg"), "where to write the SVG chart (empty: no chart)")
	flag.Parse()
	if cfg.Duration <= 0 || cfg.Capacity <= 0 {
		fmt.Fprintln(os.Stderr, "demo: -duration and -capacity must be positive")
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	listen := func() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }
	dial := func(ctx context.Context, addr string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	}
	fmt.Printf("Playing the load behind a plain semaphore, then behind fairseat, then a slowing backend (about %v)...\n\n",
		2*cfg.Duration+2*(cfg.Duration/2))
	if _, err := run(ctx, cfg, listen, dial, os.Stdout, progress{w: os.Stderr, overwrite: isTerminal(os.Stderr)}); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

// isTerminal reports whether f is a terminal (a character device), where a
// progress line can be overwritten in place.
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
