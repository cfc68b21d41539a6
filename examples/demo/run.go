package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// config is what the flags set, and a few sizes of the load that tests may
// shrink.
type config struct {
	Duration time.Duration // of each run
	Capacity int           // seats
	Seed     int64         // of the load's random choices
	SVG      string        // where the chart is written; "" = no chart

	HeavyClones  int // sent at once by the heavy client
	LightClones  int // sent one after another by the light client
	BurstFetches int // sent at once by the user midway
}

func defaultConfig() config {
	return config{
		Duration:     20 * time.Second,
		Capacity:     8,
		Seed:         1,
		HeavyClones:  1000,
		LightClones:  6,
		BurstFetches: 30,
	}
}

// The two runs, in the order they run and are shown.
const (
	runSemaphore = "plain semaphore"
	runFairseat  = "fairseat"
)

// A result is everything one run measured.
type result struct {
	name       string
	start      time.Time
	duration   time.Duration
	capacity   int
	records    []record
	violations int     // conflict violations: a writer started beside another on one repository
	errors     []error // failed calls that were not cancelled at the end of the run
}

// progress is where a run reports how far it is, once a second: on a
// terminal one line overwritten with \r, else a line every five seconds.
// A nil w reports nothing.
type progress struct {
	w         io.Writer
	overwrite bool
}

// run plays the load behind a plain semaphore, then behind fairseat, writes
// the comparison table to out and the chart to cfg.SVG, and returns what
// both runs measured. Each run's server listens on a listener from listen,
// and its clients connect with dial (the address is the listener's).
func run(ctx context.Context, cfg config, listen func() (net.Listener, error),
	dial func(ctx context.Context, addr string) (net.Conn, error), out io.Writer, prog progress) ([]*result, error) {
	p := newPlan(cfg)
	var results []*result
	for _, name := range []string{runSemaphore, runFairseat} {
		var g gate
		if name == runSemaphore {
			g = newSemaphoreGate(cfg.Capacity)
		} else {
			fg, err := newFairseatGate(cfg.Capacity)
			if err != nil {
				return nil, err
			}
			g = fg
		}
		res, err := runOnce(ctx, cfg, name, g, p, listen, dial, prog)
		if err != nil {
			return nil, fmt.Errorf("%s run: %w", name, err)
		}
		results = append(results, res)
	}
	if err := writeTable(out, cfg, results); err != nil {
		return nil, err
	}
	if cfg.SVG != "" {
		if err := writeSVGFile(cfg.SVG, results); err != nil {
			return nil, err
		}
		fmt.Fprintf(out, "\nChart of seat share over time: %s\n", cfg.SVG)
	}
	if prog.w != nil {
		fmt.Fprintf(prog.w, "The backend slows down: fixed, then adaptive capacity (about %v)...\n", 2*(cfg.Duration/2))
	}
	if _, err := runSlowdown(ctx, cfg, listen, dial, out); err != nil {
		return nil, err
	}
	return results, nil
}

// runOnce starts a server behind g, plays the plan against it for
// cfg.Duration, stops everything and returns the measurements.
func runOnce(ctx context.Context, cfg config, name string, g gate, p plan,
	listen func() (net.Listener, error), dial func(ctx context.Context, addr string) (net.Conn, error), prog progress) (*result, error) {
	closeGate := sync.OnceFunc(g.close)
	defer closeGate()

	rec := new(recorder)
	srv := &gitServer{rec: rec, writers: newWriterCheck(), gate: g}
	server := grpc.NewServer(grpc.ChainUnaryInterceptor(rec.stopwatch(), g.interceptor()))
	server.RegisterService(&gitServiceDesc, srv)
	lis, err := listen()
	if err != nil {
		return nil, err
	}
	var serving sync.WaitGroup
	serving.Add(1)
	go func() {
		defer serving.Done()
		_ = server.Serve(lis) // returns when the server stops
	}()
	defer serving.Wait()
	defer server.Stop()

	// One connection per caller, as separate machines would have.
	connect := func() (*grpc.ClientConn, error) {
		return grpc.NewClient("passthrough:///"+lis.Addr().String(),
			grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithContextDialer(dial),
			grpc.WithIdleTimeout(0), // under the test's fake time hours pass at once; never go idle
		)
	}
	var cc loadClients
	for _, c := range []**grpc.ClientConn{&cc.heavy, &cc.light, &cc.user} {
		if *c, err = connect(); err != nil {
			return nil, err
		}
		defer (*c).Close()
	}

	loadCtx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	start := time.Now()
	stopProgress := showProgress(loadCtx, prog, name, start, cfg.Duration, rec)
	errs := play(loadCtx, p, cc, srv)
	stopProgress()
	if err := ctx.Err(); err != nil {
		return nil, err // interrupted
	}
	// Stop background work before reading the records, so that none is
	// still changing them.
	closeGate()
	return &result{
		name:       name,
		start:      start,
		duration:   cfg.Duration,
		capacity:   cfg.Capacity,
		records:    rec.snapshot(),
		violations: srv.writers.count(),
		errors:     errs,
	}, nil
}

// showProgress reports the run's progress once a second until ctx ends or
// the returned function is called (which waits for the last report).
func showProgress(ctx context.Context, prog progress, name string, start time.Time, total time.Duration, rec *recorder) (stop func()) {
	if prog.w == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for n := 1; ; n++ {
			select {
			case <-ctx.Done():
				if prog.overwrite {
					fmt.Fprint(prog.w, "\r\033[K") // clear the line
				}
				return
			case <-tick.C:
			}
			if !prog.overwrite && n%5 != 0 {
				continue
			}
			finished, waiting := rec.progress()
			line := fmt.Sprintf("%-16s %3.0fs of %v: %d done, %d waiting for a seat",
				name, time.Since(start).Seconds(), total, finished, waiting)
			if prog.overwrite {
				fmt.Fprint(prog.w, "\r\033[K"+line)
			} else {
				fmt.Fprintln(prog.w, line)
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}
