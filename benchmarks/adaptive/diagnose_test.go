package adaptive

import (
	"flag"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

var (
	diagnose       = flag.String("diagnose", "", "entries to diagnose, by name, comma-separated (see TestDiagnose)")
	diagnoseRounds = flag.Int("diagnose.rounds", 9, "runs of each diagnosed entry in each scenario")
	diagnoseRepos  = flag.Int("diagnose.repos", 1, "Scenario.Repos of every scenario diagnosed")
)

// TestDiagnose says where a limiter loses goodput over time; it runs only
// with -diagnose, in benchmarks/:
//
//	go test ./adaptive -run '^TestDiagnose$' -diagnose='fairseat adaptive,oracle' -v
//
// The entries are the report's and "fairseat adaptive from Min"; with
// -diagnose.repos=N every scenario draws from N times the repositories.
// For each scenario (of the report's length) and each entry named, it logs
// the medians over -diagnose.rounds runs, each with its own draw of jobs
// (Scenario.Draw 0, 1, ..., as the report's), with
// every run's goodput and its total loss, then for the first run: the
// work of the requests completed in the window (Result.Completed) split
// into the goodput, the work done in the window, and the two edges it
// counts as well (a job running when the window opens counts whole, one
// running when it closes not at all), and every second that lost more
// than 0.005% of the window's capacity-seconds, by kind.
func TestDiagnose(t *testing.T) {
	if *diagnose == "" {
		t.Skip("runs only with -diagnose")
	}
	names := strings.Split(*diagnose, ",")
	for _, sc := range Scenarios(*reportFor) {
		sc.Repos = *diagnoseRepos
		for _, e := range append(Entries(sc), fromMin) {
			if !slices.Contains(names, e.Name) {
				continue
			}
			rounds := runDraws(t, sc, e, *diagnoseRounds)
			var o Outcome
			o.Add(rounds)
			m := o.Results[0]
			var each []string
			for _, r := range rounds {
				each = append(each, fmt.Sprintf("%.4f (lost %.3f%%)", r.Goodput, 100*r.Lost.Total()))
			}
			var b strings.Builder
			fmt.Fprintf(&b, "%s, %s: medians of %d runs: goodput %.4f, p99 %v, light p99 wait %v, mean limit %.2f, lost while probing %.3f%%, limit below C %.3f%%, otherwise %.3f%%\n  each run: %s\n",
				sc.Name, e.Name, len(rounds), m.Goodput, m.P99, m.LightP99Wait, m.MeanLimit,
				100*m.Lost.Probing, 100*m.Lost.Below, 100*m.Lost.Other, strings.Join(each, ", "))
			timeline(&b, sc, rounds[0])
			t.Log(b.String())
		}
	}
}

// timeline writes r's completed work split by where it was done, and the
// seconds in which r lost most.
func timeline(b *strings.Builder, sc Scenario, r Result) {
	rate := rates(r.ticks)
	from := int(sc.Warmup / lossTick)
	window := (sc.Duration - sc.Warmup).Seconds()
	var opening, closing, capacity float64 // seat-seconds
	for i := from; i < len(r.ticks); i++ {
		capacity += float64(r.ticks[i].c) * span(r.ticks, i)
	}
	for _, j := range r.jobs {
		// A job's mean speed: on a shared server it varied while it ran,
		// so the edges are estimates there.
		speed := j.base.Seconds() / j.seat.Seconds()
		if end := j.start + j.seat; j.start < sc.Warmup && end > sc.Warmup {
			opening += speed * (sc.Warmup - j.start).Seconds()
		} else if j.start < sc.Duration && end > sc.Duration {
			closing += speed * (sc.Duration - j.start).Seconds()
		}
	}
	fmt.Fprintf(b, "  first run: completed %.4f = goodput %.4f (done in the window) + %.4f before it by jobs that ended in it - %.4f in it by jobs still running at its end\n",
		r.Completed, r.Goodput, opening/window, closing/window)
	perSecond := int(time.Second / lossTick)
	for s := from; s < len(r.ticks); s += perSecond {
		var l Loss
		lo, hi := math.MaxInt, 0
		for i := s; i < min(s+perSecond, len(r.ticks)); i++ {
			t := r.ticks[i]
			l.add(t, (float64(t.c)-rate[i])*span(r.ticks, i)/capacity)
			lo, hi = min(lo, t.limit), max(hi, t.limit)
		}
		if math.Abs(l.Probing)+math.Abs(l.Below)+math.Abs(l.Other) > 0.00005 {
			fmt.Fprintf(b, "  %3ds, C %2d, limit %2d-%2d: lost while probing %+.3f%%, limit below C %+.3f%%, otherwise %+.3f%%\n",
				s/perSecond, r.ticks[s].c, lo, hi, 100*l.Probing, 100*l.Below, 100*l.Other)
		}
	}
}
