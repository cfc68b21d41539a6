// Command quickstart shows fairseat's admission scheduler on its own, in a
// couple of seconds: a greedy client starts 40 clones at once, a light client
// asks for 3 clones a moment later, and background repacks wait for seats.
// The same load then runs behind a plain FIFO semaphore for comparison.
//
//	go run ./examples/quickstart
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"slices"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/fairseat/fairseat/admission"
	"golang.org/x/sync/semaphore"
)

const (
	seats      = 4
	greedyJobs = 40
	lightJobs  = 3
	jobTime    = 20 * time.Millisecond
	lightDelay = 50 * time.Millisecond
)

// gate is what the two runs share: wait for a seat, run, give it back.
type gate func(ctx context.Context, client, repo string, work func()) error

func main() {
	fair, err := fairseatGate()
	if err != nil {
		log.Fatal(err)
	}
	sem := semaphore.NewWeighted(seats)
	fifo := func(ctx context.Context, _, _ string, work func()) error {
		if err := sem.Acquire(ctx, 1); err != nil {
			return err
		}
		defer sem.Release(1)
		work()
		return nil
	}

	fmt.Printf("%d seats. %q starts %d clones at once; %q asks for %d clones %v later.\n"+
		"Each clone holds a seat for %v.\n\n", seats, "greedy", greedyJobs, "light", lightJobs, lightDelay, jobTime)
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "gate\tclient\tclones\tmedian wait\tworst wait\t")
	for _, run := range []struct {
		name string
		g    gate
	}{{"semaphore (FIFO)", fifo}, {"fairseat", fair.gate}} {
		waits := play(run.g)
		for _, c := range []string{"greedy", "light"} {
			ws := waits[c]
			slices.Sort(ws)
			fmt.Fprintf(w, "%s\t%s\t%d\t%v\t%v\t\n", run.name, c, len(ws),
				ws[len(ws)/2].Round(time.Millisecond), ws[len(ws)-1].Round(time.Millisecond))
		}
	}
	w.Flush()
	snap := fair.s.Snapshot()
	fmt.Printf("\nfairseat admitted %d requests; %d background repacks ran in the seats foreground left free.\n",
		snap.Counters.Admitted-uint64(fair.repacks), fair.repacks)
	fmt.Println("With fairseat the light client is served as soon as a seat opens, instead of behind the whole burst.")
	if err := fair.s.Close(context.Background()); err != nil {
		log.Fatal(err)
	}
}

// play runs the workload through g and returns each client's queue waits.
func play(g gate) map[string][]time.Duration {
	var mu sync.Mutex
	waits := map[string][]time.Duration{}
	var wg sync.WaitGroup
	clone := func(client string, i int) {
		defer wg.Done()
		asked := time.Now()
		err := g(context.Background(), client, fmt.Sprintf("%s/repo%d", client, i), func() {
			mu.Lock()
			waits[client] = append(waits[client], time.Since(asked))
			mu.Unlock()
			time.Sleep(jobTime)
		})
		if err != nil {
			log.Printf("%s clone %d: %v", client, i, err)
		}
	}
	for i := range greedyJobs {
		wg.Add(1)
		go clone("greedy", i)
	}
	time.Sleep(lightDelay)
	for i := range lightJobs {
		wg.Add(1)
		go clone("light", i)
	}
	wg.Wait()
	return waits
}

type fairGate struct {
	s       *admission.Scheduler
	repacks int
}

func fairseatGate() (*fairGate, error) {
	s, err := admission.New(admission.Config{Capacity: seats})
	if err != nil {
		return nil, err
	}
	if err := s.RegisterType("clone", admission.JobTypeConfig{
		DefaultCost: jobTime, ConflictGroup: "git", Priority: admission.PriorityForeground,
	}); err != nil {
		return nil, err
	}
	if err := s.RegisterType("repack", admission.JobTypeConfig{
		DefaultCost: jobTime, ConflictGroup: "git", Priority: 1, // at most one background seat
	}); err != nil {
		return nil, err
	}
	fg := &fairGate{s: s}
	for _, repo := range []string{"linux", "git", "go"} {
		if err := s.Submit("repack", repo, func(context.Context) error {
			time.Sleep(jobTime)
			return nil
		}); err != nil {
			return nil, err
		}
		fg.repacks++
	}
	return fg, nil
}

func (f *fairGate) gate(ctx context.Context, client, repo string, work func()) error {
	return f.s.RunSync(ctx, "clone", repo, client, func(context.Context) error {
		work()
		return nil
	})
}
