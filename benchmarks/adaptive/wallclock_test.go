package adaptive

import (
	"flag"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

var (
	wallclock        = flag.Duration("wallclock", 0, "real time of each run of TestWallClock (0: skip it)")
	wallclockRounds  = flag.Int("wallclock.rounds", 1, "runs of each limiter in each of TestWallClock's scenarios")
	wallclockOnly    = flag.String("wallclock.scenarios", "CPU,slow disk", "TestWallClock's scenarios, by name, comma-separated")
	wallclockEntries = flag.String("wallclock.entries", "", "TestWallClock's limiters, by name, comma-separated (empty: all)")
)

// TestWallClock runs the report's limiters in real time, outside
// testing/synctest, where the report runs them in fake time: on this
// machine's CPU (the CPU scenario: jobs that burn the cores, whose number
// is the true capacity) and on the simulated servers, timed by the real
// clock. It asks whether what the report measures holds where the clock is
// real: timers fire late, the runtime, the garbage collector and other
// processes take the CPU, and nothing repeats. It runs only with
// -wallclock, in benchmarks/, and logs each scenario's table as the report
// writes it:
//
//	go test ./adaptive -run '^TestWallClock$' -wallclock=60s -timeout 2h -v
//
// Each run takes -wallclock of real time, every limiter in turn
// (-wallclock.rounds draws each), and "fairseat adaptive from Min"
// beside them; the late oracle is left out. The CPU
// scenario uses every core the machine has (runtime.NumCPU) and halves
// GOMAXPROCS for its middle third; other work on the machine moves its
// figures. benchmarks/ADMISSION.md records what it measured.
func TestWallClock(t *testing.T) {
	if *wallclock == 0 {
		t.Skip("runs only with -wallclock")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	d := *wallclock
	names, entries := strings.Split(*wallclockOnly, ","), strings.Split(*wallclockEntries, ",")
	for _, sc := range append([]Scenario{CPU(d, runtime.NumCPU())}, Scenarios(d)...) {
		if !slices.Contains(names, sc.Name) {
			continue
		}
		o := Outcome{Scenario: sc}
		for _, e := range append(Entries(sc), fromMin) {
			if e.Late > 0 || *wallclockEntries != "" && !slices.Contains(entries, e.Name) {
				continue
			}
			var rounds []Result
			for i := range *wallclockRounds {
				sc.Draw = uint64(i)
				l, err := e.New()
				if err != nil {
					t.Fatal(err)
				}
				r, err := Run(sc, e.Name, l)
				if err != nil {
					t.Fatal(err)
				}
				var each []string // the limit at each second
				for s := 0; s < len(r.Limits); s += int(time.Second / Tick) {
					each = append(each, strconv.Itoa(r.Limits[s]))
				}
				t.Logf("%s, %s, draw %d: goodput %.3f, p99 %v, mean limit %.1f; the limit each second: %s",
					sc.Name, e.Name, i, r.Goodput, ms(r.P99), r.MeanLimit, strings.Join(each, " "))
				rounds = append(rounds, r)
			}
			o.Entries = append(o.Entries, e)
			o.Add(rounds)
		}
		t.Logf("real time, GOMAXPROCS %d at the start:\n%s", runtime.GOMAXPROCS(0), o.Markdown())
	}
}
