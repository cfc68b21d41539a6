package adaptive

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Outcome is one scenario's results, in Entries order: each entry's
// median over Rounds runs (metric by metric; Limits from the first run),
// and the range of its goodput.
type Outcome struct {
	Scenario   Scenario
	Entries    []Entry
	Results    []Result
	GoodputMin []float64
	GoodputMax []float64
	runs       int // of each entry
}

// Rounds is how many times a report runs each limiter in each scenario,
// each time with its own draw of jobs (Scenario.Draw). Eleven, not three:
// the goodput of the adaptive limiters differs by 0.1 to 0.2 %, about as
// much as one limiter's does from draw to draw (benchmarks/ADMISSION.md,
// session 18), so a median of three draws can order them either way; and
// where seat times vary, the order of goroutines alone moved fairseat's
// median of five draws from 13.08 to 12.99 seats between two runs of the
// same code (session 22), a run or two of five dipping. Twenty-one, not
// eleven: two runs of one code read medians of eleven draws of 11.74 and
// 11.82 seats in the noisy thrashing slow disk, either side of the goal
// (95 % of a fixed C, 11.79), and 13.04 and 13.08 in the shared slow disk
// (session 35).
const Rounds = 21

// Add records the rounds of the next entry.
func (o *Outcome) Add(rounds []Result) {
	med := func(f func(Result) float64) float64 {
		v := make([]float64, len(rounds))
		for i, r := range rounds {
			v[i] = f(r)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	r := rounds[0]
	r.Goodput = med(func(r Result) float64 { return r.Goodput })
	r.Done = int(med(func(r Result) float64 { return float64(r.Done) }))
	r.P50 = time.Duration(med(func(r Result) float64 { return float64(r.P50) }))
	r.P99 = time.Duration(med(func(r Result) float64 { return float64(r.P99) }))
	r.LightP99Wait = time.Duration(med(func(r Result) float64 { return float64(r.LightP99Wait) }))
	r.MeanLimit = med(func(r Result) float64 { return r.MeanLimit })
	r.Refused = int(med(func(r Result) float64 { return float64(r.Refused) }))
	r.Lost = Loss{
		Probing: med(func(r Result) float64 { return r.Lost.Probing }),
		Below:   med(func(r Result) float64 { return r.Lost.Below }),
		Other:   med(func(r Result) float64 { return r.Lost.Other }),
	}
	lo, hi := r.Goodput, r.Goodput
	for _, x := range rounds {
		lo, hi = min(lo, x.Goodput), max(hi, x.Goodput)
	}
	o.runs = len(rounds)
	o.Results = append(o.Results, r)
	o.GoodputMin, o.GoodputMax = append(o.GoodputMin, lo), append(o.GoodputMax, hi)
}

// bestFixed is the fixed capacity with the most goodput; goodputs within 1%
// of each other count as equal, and then the lower p99 wins.
func (o Outcome) bestFixed() int {
	best := -1
	for i, e := range o.Entries {
		if !e.Fixed {
			continue
		}
		r := o.Results[i]
		switch {
		case best < 0:
			best = i
		case r.Goodput > 1.01*o.Results[best].Goodput:
			best = i
		case r.Goodput >= 0.99*o.Results[best].Goodput && r.P99 < o.Results[best].P99:
			best = i
		}
	}
	return best
}

func (o Outcome) index(name string) int {
	for i, e := range o.Entries {
		if e.Name == name {
			return i
		}
	}
	return -1
}

// Verdict says how fairseat adaptive did against the goal: goodput within
// 5% of the best fixed capacity, p99 within 1.5 times its p99, and ahead of
// every peer (goodput no lower, p99 and light p99 wait no higher; each
// comparison is given with its numbers, so a miss by a fraction of a per
// cent reads as what it is).
func (o Outcome) Verdict() []string {
	b, f := o.bestFixed(), o.index("fairseat adaptive")
	if b < 0 || f < 0 {
		return nil
	}
	best, us := o.Results[b], o.Results[f]
	g, p := us.Goodput/best.Goodput, float64(us.P99)/float64(best.P99)
	var out []string
	out = append(out, fmt.Sprintf("Best fixed capacity: %s (goodput %.2f, p99 %v).", best.Name, best.Goodput, ms(best.P99)),
		fmt.Sprintf("fairseat adaptive: goodput %.1f%% of it (goal ≥ 95%%: %s), p99 %.2f× (goal ≤ 1.5×: %s).",
			100*g, met(g >= 0.95), p, met(p <= 1.5)))
	oracle, late := -1.0, -1.0
	for i, e := range o.Entries {
		switch g := o.Results[i].Goodput; {
		case e.Oracle && e.Late == 0:
			oracle = g
			out = append(out, fmt.Sprintf("The oracle: goodput %.2f; fairseat adaptive %.2f%% of it (the rest is what reaching the limit late and probing cost).",
				g, 100*us.Goodput/g))
		case e.Oracle:
			late = g
			out = append(out, fmt.Sprintf("The oracle %v late: goodput %.2f; fairseat adaptive %.2f%% of it (the rest is what its own delay and probing cost).",
				e.Late, g, 100*us.Goodput/g))
		}
	}
	for i, e := range o.Entries {
		if !e.Peer {
			continue
		}
		r := o.Results[i]
		var ahead, behind []string
		note := func(ok bool, what string) {
			if ok {
				ahead = append(ahead, what)
			} else {
				behind = append(behind, what)
			}
		}
		note(us.Goodput >= r.Goodput, fmt.Sprintf("goodput %.2f vs %.2f (%+.1f%%)", us.Goodput, r.Goodput, 100*(us.Goodput/r.Goodput-1)))
		note(us.P99 <= r.P99, fmt.Sprintf("p99 %v vs %v", ms(us.P99), ms(r.P99)))
		note(us.LightP99Wait <= r.LightP99Wait, fmt.Sprintf("light p99 wait %v vs %v", ms(us.LightP99Wait), ms(r.LightP99Wait)))
		s := fmt.Sprintf("Against %s: ahead or level on %s", e.Name, orNone(ahead))
		if len(behind) > 0 {
			s += "; behind on " + strings.Join(behind, ", ")
		}
		switch {
		case oracle >= 0 && r.Goodput > oracle:
			s += fmt.Sprintf(" (its goodput is above the oracle's %.2f: work done faster than C)", oracle)
		case late >= 0 && r.Goodput > late && us.Goodput < r.Goodput:
			s += fmt.Sprintf(" (its goodput is above the late oracle's %.2f: no limiter that holds to C and learns it from completions is ahead of it)", late)
		}
		out = append(out, s+".")
	}
	return out
}

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "missed"
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "nothing"
	}
	return strings.Join(s, ", ")
}

// ms is a duration rounded for a table.
func ms(d time.Duration) time.Duration {
	if d >= 100*time.Millisecond {
		return d.Round(time.Millisecond)
	}
	return d.Round(100 * time.Microsecond)
}

// Markdown is one scenario's table and verdict.
func (o Outcome) Markdown() string {
	var b strings.Builder
	sc := o.Scenario
	fmt.Fprintf(&b, "## %s\n\n", sc.Name)
	fmt.Fprintf(&b, "True capacity C = %d seats", sc.C)
	slow := "a slow disk"
	if sc.CPU {
		b.WriteString(", the cores of this machine's CPU that the run used")
		slow = "half the cores"
	}
	if sc.SlowTo > 0 {
		fmt.Fprintf(&b, ", %d from %v to %v (%s)", sc.CapacityAt(sc.SlowFrom), sc.SlowFrom, sc.SlowTo, slow)
	}
	fmt.Fprintf(&b, "; %v, measured after %v; a flood of %d loops and a light client (one loop, %v between requests)",
		sc.Duration, sc.Warmup, sc.Flood, sc.LightThink)
	if sc.Noise > 0 {
		fmt.Fprintf(&b, "; each job's base time its repository's times a log-normal factor of mean 1 and spread %.2g", sc.Noise)
	}
	if sc.Thrash > 0 {
		fmt.Fprintf(&b, "; past C the server thrashes by a factor %.2g: the jobs running do C / (1 + %.2g·(running/C − 1)) seats of work in all", sc.Thrash, sc.Thrash)
	}
	b.WriteString(".\n\n")
	if o.runs == 1 {
		b.WriteString("One run, with one draw of jobs.\n\n")
	} else {
		fmt.Fprintf(&b, "Medians of %d runs, each with its own draw of jobs; the goodput's range over them beside it.\n\n", o.runs)
	}
	b.WriteString("| limiter | goodput (seats) | range | of C | p50 latency | p99 latency | light client's p99 wait | mean limit | refused |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for i, r := range o.Results {
		fmt.Fprintf(&b, "| %s | %.2f | %.2f–%.2f | %.1f%% | %v | %v | %v | %.1f | %d |\n", r.Name, r.Goodput, o.GoodputMin[i], o.GoodputMax[i],
			100*r.Goodput/float64(sc.C), ms(r.P50), ms(r.P99), ms(r.LightP99Wait), r.MeanLimit, r.Refused)
	}
	b.WriteString("\n")
	for _, v := range o.Verdict() {
		fmt.Fprintf(&b, "- %s\n", v)
	}
	b.WriteString("\nWhere the goodput was lost against the true capacity, in per cent of the window's capacity-seconds " +
		"(medians; see Loss in run.go; a negative share is work done faster than C allows for a moment):\n\n")
	b.WriteString("| limiter | while probing | limit below C | otherwise | total |\n")
	b.WriteString("|---|---:|---:|---:|---:|\n")
	for _, r := range o.Results {
		l := r.Lost
		fmt.Fprintf(&b, "| %s | %.2f%% | %.2f%% | %.2f%% | %.2f%% |\n", r.Name, 100*l.Probing, 100*l.Below, 100*l.Other, 100*l.Total())
	}
	b.WriteString("\n")
	return b.String()
}

// SVG draws the limit over time of every limiter, one panel per outcome,
// with the true capacity dashed.
func SVG(outs []Outcome) string {
	const (
		width, panelH  = 900, 300
		left, right    = 60, 230
		top, gap, maxY = 40, 70, 80.0
	)
	colors := []string{"#bbbbbb", "#888888", "#555555", "#e6ab02", "#f4d27a", "#d62728", "#1f77b4", "#2ca02c", "#9467bd"}
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	height := top + len(outs)*(panelH+gap)
	w(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", width, height)
	w(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	for pi, o := range outs {
		sc := o.Scenario
		y0 := top + pi*(panelH+gap)
		plotW := float64(width - left - right)
		x := func(i int) float64 { return float64(left) + float64(i+1)*plotW/float64(sc.Duration/Tick) }
		y := func(v float64) float64 { return float64(y0+panelH) - math.Min(v, maxY)/maxY*panelH }
		w(`<text x="%d" y="%d" font-size="15" font-weight="bold">Limit over time, %s (true capacity dashed; above %.0f clipped)</text>`+"\n", left, y0-12, sc.Name, maxY)
		for v := 0.0; v <= maxY; v += 16 {
			w(`<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#eee"/><text x="%d" y="%.1f" text-anchor="end">%.0f</text>`+"\n",
				left, width-right, y(v), y(v), left-6, y(v)+4, v)
		}
		for s := time.Duration(0); s <= sc.Duration; s += 10 * time.Second {
			xs := float64(left) + s.Seconds()/sc.Duration.Seconds()*plotW
			w(`<text x="%.1f" y="%d" text-anchor="middle">%.0fs</text>`+"\n", xs, y0+panelH+16, s.Seconds())
		}
		// The true capacity.
		var pts []string
		for i := range int(sc.Duration / Tick) {
			c := sc.CapacityAt(time.Duration(i+1) * Tick)
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(i), y(float64(c))))
		}
		w(`<polyline fill="none" stroke="black" stroke-dasharray="6 4" points="%s"/>`+"\n", strings.Join(pts, " "))
		for ri, r := range o.Results {
			pts = pts[:0]
			for i, n := range r.Limits {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(i), y(float64(n))))
			}
			c := colors[ri%len(colors)]
			sw := 1.5
			if r.Name == "fairseat adaptive" {
				sw = 2.5
			}
			w(`<polyline fill="none" stroke="%s" stroke-width="%.1f" points="%s"><title>%s</title></polyline>`+"\n", c, sw, strings.Join(pts, " "), r.Name)
			w(`<rect x="%d" y="%d" width="12" height="12" fill="%s"/><text x="%d" y="%d">%s (mean %.1f)</text>`+"\n",
				width-right+10, y0+ri*18, c, width-right+26, y0+ri*18+10, r.Name, r.MeanLimit)
		}
	}
	w("</svg>\n")
	return b.String()
}

// Document is ADAPTIVE.md: the introduction, then each outcome's table and
// verdict, then the chart.
func Document(outs []Outcome, command string) string {
	var b strings.Builder
	b.WriteString("# Adaptive capacity: fairseat against fixed capacities and adaptive limiters\n\n")
	fmt.Fprintf(&b, "Generated in benchmarks/ by `%s` (package adaptive, TestReport). Do not edit by hand.\n\n", command)
	b.WriteString(intro)
	for _, o := range outs {
		b.WriteString(o.Markdown())
	}
	b.WriteString("![The limit over time of every limiter](adaptive.svg)\n")
	return b.String()
}

const intro = `One simulated server for every limiter: a job's seat time is base × max(1, running/C), running the
jobs the server runs at its start and C its true capacity. Past C the server does no more work, each
job only takes longer, so a limit above C adds latency and no goodput, and one below C wastes seats;
but a job's seat time is fixed when it starts, so a job started just before the load rose is not
slowed by the jobs started after it, and for a moment a limiter running more than C jobs does more
than C seats of work (a negative share in the second table of each scenario). In the thrashing slow
disks the server thrashes past C (simserver.SeatTime): it does less than C in all, the less the more
jobs it runs, as a real server given more work than fits its caches, memory or locks does, so that a
limit above C costs goodput as well as latency. In the shared slow disks the server shares itself
among the jobs running at every instant, as a CPU or a disk does (simserver.NewShared): each runs at
base/SeatTime of the jobs running now, so a job slows down as soon as others join it; at a steady
load its seat times are the same, but running more than C jobs never does more than C seats of work,
not even for a moment.
The load: a flood of closed loops (six times C, more than the server can serve) and a light client,
over 100 repositories, a tenth of the requests to one of 20 heavy ones (300 ms of base time), the rest
to light ones (30 to 70 ms). In all but the noisy scenarios every job of a repository takes its base time;
in the noisy ones a job's base time is its repository's times a log-normal factor of mean 1 and spread
0.5, as a real server's seat times vary from one job to the next. The noisy thrashing slow disk has
both: there the level above Tolerance·C at which fairseat adaptive settles where seat times vary (the
package doc, "What noise still costs") costs goodput, not only latency; the noisy shared slow disk
has both a shared server and seat times that vary, as a CPU-bound server whose requests differ in
size, where fairseat adaptive settles higher still. Every run takes place in a testing/synctest bubble: fake time, which the
peers read through time.Now too, so the figures do not depend on this machine, and a rerun gives the
same figures up to the order of goroutines woken at one instant (which moves some peers' figures by
several per cent). Each limiter runs once with each of the report's draws of jobs (the clients'
random sources seeded anew; the same draws for every limiter, as many as each table's heading says),
and the tables give medians and the goodput's range: one draw can favour one limiter over another (in
benchmarks/ADMISSION.md, session 18, fairseat at Tolerance 1.3 led Gradient2 on the first draw of
the noisy slow disk and trailed it in 18 of 20 draws).

The adaptive limiters all start at 20 seats (Gradient2's, Vegas's and failsafe-go's default initial
limit) between 1 and 200. The fixed capacities are fairseat's scheduler with Config.Capacity fixed;
fairseat adaptive is the same scheduler with Config.Adaptive and default parameters. The peers know
neither fairness keys nor job IDs: their queue is one FIFO (go-concurrency-limits' QueueBlockingLimiter,
failsafe-go's semaphore). The oracle is fairseat with a fixed capacity of Tolerance·C, rounded (18
seats for C = 16, 9 for C = 8), set anew at the very instant C changes: where fairseat adaptive
settles, reached with no delay and no probe, the goodput of a limiter that holds to C and knows it.
The late oracle is the same, set 0.1 s after C changes (OracleLate in limiters.go: about when the
first completions of jobs started after the change reach a limiter): the goodput of a limiter that
holds to C and learns it from its completions, as the adaptive ones do, with no delay of its own.
Columns: goodput is the base time of the work the server did per second in the measured window, in
seats (C, but for the moments above), a job running across an edge of the window counting for the
part of its work done inside it (not whole or not at all, as it would if goodput counted the requests completed
in the window: that measure strays by what is in flight at either edge); latency is from the request to its end (wait and seat time) over both clients; the light
client's p99 wait is its wait for a seat; the mean limit is over the measured window. The goal
(issue 16): goodput within 5% of the best fixed capacity, p99 within 1.5× of it, and ahead of every
peer.

`
