package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/fairseat/fairseat/admission"
	"github.com/fairseat/fairseat/interceptors"
	"github.com/fairseat/fairseat/internal/simserver"
)

// The slowdown phase: the backend behind the git cache (its disk, a
// simserver.Server) can do cfg.Capacity clones at full speed; past that
// each clone takes longer, in proportion. For the middle third of the phase the disk slows down and
// can do half as many. The same load runs behind fairseat twice: with the
// capacity fixed at cfg.Capacity seats, and with adaptive capacity
// (Config.Adaptive), which follows what the backend can do.

// The two runs of the phase.
const (
	runFixed    = "fixed capacity"
	runAdaptive = "adaptive capacity"
)

// slowResult is what one run of the phase measured.
type slowResult struct {
	name              string
	start             time.Time
	duration          time.Duration
	records           []record
	limits, backendAt []int // seats and the backend's capacity, every slowTick
	errors            []error
}

// slowTick is how often the phase samples the limit.
const slowTick = 100 * time.Millisecond

// slowThird is the middle third of the run, when the backend is slow.
func (r *slowResult) slowThird() (from, to time.Time) {
	return r.start.Add(r.duration / 3), r.start.Add(2 * r.duration / 3)
}

// runSlowdown plays the phase's load for cfg.Duration/2 behind each of the
// two schedulers, writes its table to out and returns what both runs
// measured.
func runSlowdown(ctx context.Context, cfg config, listen func() (net.Listener, error),
	dial func(ctx context.Context, addr string) (net.Conn, error), out io.Writer) ([]*slowResult, error) {
	d := cfg.Duration / 2
	var results []*slowResult
	for _, name := range []string{runFixed, runAdaptive} {
		c := admission.Config{Capacity: cfg.Capacity}
		if name == runAdaptive {
			// It starts where the fixed capacity is, and may go from 1 seat
			// to four times that.
			c = admission.Config{Adaptive: &admission.AdaptiveConfig{Min: 1, Max: 4 * cfg.Capacity, Initial: cfg.Capacity}}
		}
		c.TierLimits = map[admission.Priority]int{admission.PriorityForeground: 4 * cfg.Capacity}
		sched, err := admission.New(c)
		if err != nil {
			return nil, err
		}
		err = sched.RegisterType(jobClone, admission.JobTypeConfig{DefaultCost: 300 * time.Millisecond, Priority: admission.PriorityForeground, NoAging: true})
		if err != nil {
			return nil, err
		}
		res, err := runSlowOnce(ctx, cfg, d, name, sched, listen, dial)
		if cerr := sched.Close(context.Background()); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, fmt.Errorf("slowdown phase, %s: %w", name, err)
		}
		results = append(results, res)
	}
	return results, writeSlowTable(out, cfg, results)
}

// runSlowOnce serves clones through sched's interceptor from a backend of
// cfg.Capacity, slowed to half for the middle third of d, under a flood of
// clones (closed loops, six per seat) and a light client cloning one
// repository after another.
func runSlowOnce(ctx context.Context, cfg config, d time.Duration, name string, sched *admission.Scheduler,
	listen func() (net.Listener, error), dial func(ctx context.Context, addr string) (net.Conn, error)) (*slowResult, error) {
	rec := new(recorder)
	disk := simserver.New(cfg.Capacity)
	srv := &gitServer{rec: rec, writers: newWriterCheck(), backend: disk}
	loopback := interceptors.PeerIn(netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128"))
	server := grpc.NewServer(grpc.ChainUnaryInterceptor(rec.stopwatch(), interceptors.UnaryServerInterceptor(sched,
		interceptors.WithRoutes(interceptors.Routes{cloneMethod: {Type: jobClone, JobID: interceptors.Field("value")}}),
		interceptors.WithKeyFunc(interceptors.TrustedMetadata(clientMetadata, loopback)))))
	server.RegisterService(&gitServiceDesc, srv)
	lis, err := listen()
	if err != nil {
		return nil, err
	}
	var serving sync.WaitGroup
	serving.Go(func() { _ = server.Serve(lis) })
	defer serving.Wait()
	defer server.Stop()
	conn, err := grpc.NewClient("passthrough:///"+lis.Addr().String(),
		grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithContextDialer(dial), grpc.WithIdleTimeout(0))
	if err != nil {
		return nil, err
	}
	defer conn.Close()

	loadCtx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	res := &slowResult{name: name, start: time.Now(), duration: d}
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	loop := func(client string, seed uint64, pause time.Duration) {
		rng := rand.New(rand.NewPCG(uint64(cfg.Seed), seed))
		for loadCtx.Err() == nil {
			repo := repositories[rng.IntN(len(repositories))].name
			callCtx := metadata.AppendToOutgoingContext(loadCtx, clientMetadata, client)
			err := conn.Invoke(callCtx, cloneMethod, wrapperspb.String(repo), new(emptypb.Empty))
			switch status.Code(err) {
			case codes.OK, codes.Canceled, codes.DeadlineExceeded:
			default:
				mu.Lock()
				res.errors = append(res.errors, err)
				mu.Unlock()
				return
			}
			if pause > 0 && work(loadCtx, pause) != nil {
				return
			}
		}
	}
	for i := range 6 * cfg.Capacity {
		wg.Go(func() { loop(clientHeavy, uint64(i), 0) })
	}
	wg.Go(func() { loop(clientLight, 1<<32, d/40) })
	for el := slowTick; el <= d; el += slowTick {
		if work(loadCtx, time.Until(res.start.Add(el))) != nil && ctx.Err() != nil {
			break
		}
		switch el {
		case d / 3 / slowTick * slowTick:
			disk.SetCapacity(max(1, cfg.Capacity/2))
		case 2 * d / 3 / slowTick * slowTick:
			disk.SetCapacity(cfg.Capacity)
		}
		res.limits = append(res.limits, sched.Snapshot().Capacity)
		res.backendAt = append(res.backendAt, disk.Capacity())
	}
	cancel()
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res.records = rec.snapshot()
	return res, nil
}

// lightLine is what to look at in the light client's figures.
func lightLine(f, a slowSummary) string {
	s := fmt.Sprintf("The light client: p99 %s from asking to done with the fixed capacity, %s with adaptive capacity; "+
		"its median wait for a seat is short in both (%s and %s), since fairness puts it first.",
		formatDuration(f.lightP99), formatDuration(a.lightP99), formatDuration(f.lightWaitP50), formatDuration(a.lightWaitP50))
	if a.lightWaitP99 > f.lightWaitP99 {
		s += fmt.Sprintf(" Its longest waits are longer with adaptive capacity (p99 %s, against %s): when the limit falls "+
			"(as the disk slows, and while a probe halves it) nobody is admitted until the clones running drain below it, "+
			"the light client included; fairness decides who goes first, not when a seat opens.",
			formatDuration(a.lightWaitP99), formatDuration(f.lightWaitP99))
	}
	return s
}

// slowSummary is one run's line of figures for the slow third.
type slowSummary struct {
	done         int           // clones finished in the slow third
	work         time.Duration // their clone times at full speed: the disk's useful work
	stretch      float64       // their time on the disk over their time at full speed, mean
	seatP99      time.Duration // their time on the disk, p99
	lightP99     time.Duration // the light client's p99 time from asking to done, whole run
	lightWaitP50 time.Duration // its median wait for a seat, whole run
	lightWaitP99 time.Duration // its p99 wait for a seat, whole run
	// Mean seats in each third of the run: before, while and after the
	// disk is slow.
	limitBefore, limitSlow, limitAfter float64
}

func (r *slowResult) summarize() slowSummary {
	from, to := r.slowThird()
	var s slowSummary
	var seats, light, lightWait []time.Duration
	for _, rec := range r.records {
		if !rec.done {
			continue
		}
		if rec.ended.After(from) && !rec.ended.After(to) {
			s.done++
			s.work += cloneTime(rec.repo)
			seats = append(seats, rec.ended.Sub(rec.started))
			s.stretch += float64(rec.ended.Sub(rec.started)) / float64(cloneTime(rec.repo))
		}
		if rec.client == clientLight {
			light = append(light, rec.ended.Sub(rec.arrived))
			lightWait = append(lightWait, rec.started.Sub(rec.arrived))
		}
	}
	for _, xs := range [][]time.Duration{seats, light, lightWait} {
		slices.Sort(xs)
	}
	q := func(xs []time.Duration, p float64) time.Duration {
		if len(xs) == 0 {
			return 0
		}
		return xs[min(len(xs)-1, int(p*float64(len(xs))))]
	}
	s.seatP99, s.lightP99 = q(seats, 0.99), q(light, 0.99)
	s.lightWaitP50, s.lightWaitP99 = q(lightWait, 0.5), q(lightWait, 0.99)
	if s.done > 0 {
		s.stretch /= float64(s.done)
	}
	n := len(r.limits)
	mean := func(ls []int) float64 {
		sum := 0
		for _, l := range ls {
			sum += l
		}
		return float64(sum) / float64(max(1, len(ls)))
	}
	s.limitBefore, s.limitSlow, s.limitAfter = mean(r.limits[:n/3]), mean(r.limits[n/3:2*n/3]), mean(r.limits[2*n/3:])
	return s
}

// writeSlowTable writes the phase's comparison and what to look at.
func writeSlowTable(w io.Writer, cfg config, results []*slowResult) error {
	var b strings.Builder
	d := results[0].duration
	fmt.Fprintf(&b, "\nWhen the backend slows down: %v of clones (%d loops of the heavy client, and the light one) on a\n"+
		"disk that does %d clones at full speed and, from %v to %v, %d; behind fairseat with a fixed\n"+
		"capacity of %d seats, then with adaptive capacity:\n\n",
		d, 6*cfg.Capacity, cfg.Capacity, (d / 3).Round(time.Millisecond), (2 * d / 3).Round(time.Millisecond), max(1, cfg.Capacity/2), cfg.Capacity)
	sums := []slowSummary{results[0].summarize(), results[1].summarize()}
	fmt.Fprintf(&b, "%-44s%-20s%-20s\n", "", results[0].name, results[1].name)
	row := func(label string, cell func(s slowSummary) string) {
		fmt.Fprintf(&b, "%-44s%-20s%-20s\n", label, cell(sums[0]), cell(sums[1]))
	}
	row("seats: before / while slow / after (means)", func(s slowSummary) string {
		return fmt.Sprintf("%.1f / %.1f / %.1f", s.limitBefore, s.limitSlow, s.limitAfter)
	})
	row("clones done while the disk is slow", func(s slowSummary) string { return fmt.Sprint(s.done) })
	row("  their work at full speed", func(s slowSummary) string { return formatDuration(s.work) })
	row("  their time on the disk / at full speed", func(s slowSummary) string { return fmt.Sprintf("%.2f× (mean)", s.stretch) })
	row("  their time on the disk, p99", func(s slowSummary) string { return formatDuration(s.seatP99) })
	row("light client: wait for a seat, p50 / p99", func(s slowSummary) string {
		return formatDuration(s.lightWaitP50) + " / " + formatDuration(s.lightWaitP99)
	})
	row("light client: p99 from asking to done", func(s slowSummary) string { return formatDuration(s.lightP99) })
	for _, r := range results {
		for _, err := range r.errors {
			fmt.Fprintf(&b, "\nunexpected error in the %s run: %v", r.name, err)
		}
	}
	f, a := sums[0], sums[1]
	b.WriteString("\nWhat to look at:\n")
	seats := fmt.Sprintf("The seats. The fixed capacity keeps admitting %d clones to a disk that now does %d at full speed; "+
		"adaptive capacity came down to %.1f seats on average while the disk was slow (%.1f before), because clones "+
		"took longer than they had at a lower load, and was at %.1f once the disk was fast again. "+
		"The debug page (admission.DebugHandler) shows the limit and its recent changes.",
		cfg.Capacity, max(1, cfg.Capacity/2), a.limitSlow, a.limitBefore, a.limitAfter)
	if a.limitSlow > 0.85*a.limitBefore {
		seats = fmt.Sprintf("The seats. Adaptive capacity had hardly come down while the disk was slow (%.1f seats on average, "+
			"%.1f before): this run is too short for it to learn what the disk can do. Run the demo with a longer -duration "+
			"(the default 20s gives the slowdown runs 10s each).", a.limitSlow, a.limitBefore)
	}
	work := fmt.Sprintf("About the same work gets done while the disk is slow (%s and %s of full-speed cloning): "+
		"this disk does no more when given more clones at once. A real one often does less (memory, cache thrashing, "+
		"timeouts), which a fixed capacity set for the fast disk then makes worse.", formatDuration(f.work), formatDuration(a.work))
	if a.work < 95*f.work/100 {
		work = fmt.Sprintf("Adaptive capacity got less work done while the disk was slow (%s of full-speed cloning, against %s): "+
			"finding the limit costs seats, since it probes (halves the limit for a round of clones) and undershoots after "+
			"a fall. On this disk, which does no more when given more clones at once, that is a loss; a real one often does "+
			"less when overloaded (memory, cache thrashing, timeouts).", formatDuration(a.work), formatDuration(f.work))
	}
	for _, line := range []string{
		seats,
		fmt.Sprintf("Time on the disk. With the fixed capacity the clones done while the disk was slow took %.2f times "+
			"as long there as at full speed, with adaptive capacity %.2f times: the clones it admits run nearer full speed, "+
			"the rest wait in the fair queue, where the light client still goes first.", f.stretch, a.stretch),
		work,
		lightLine(f, a),
	} {
		b.WriteString(wrap(line, 78, "  - ", "    ") + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
