package adaptive

import (
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var (
	reportDir = flag.String("report", "", "run the full comparison and write ADAPTIVE.md and adaptive.svg to this directory")
	reportFor = flag.Duration("report.duration", 120*time.Second, "fake time of each scenario of the full comparison")
)

// reportCommand is the command that writes ADAPTIVE.md, run in benchmarks/.
const reportCommand = "go test ./adaptive -run '^TestReport$' -report=.."

// TestReport runs every limiter through every scenario (Scenarios), each in its own
// synctest bubble, and with -report writes ADAPTIVE.md and adaptive.svg
// (see reportCommand). Without -report it runs 20 s scenarios and only
// checks that the document is complete.
func TestReport(t *testing.T) {
	d := 20 * time.Second
	if *reportDir != "" {
		d = *reportFor
	}
	var outs []Outcome
	for _, sc := range Scenarios(d) {
		o := Outcome{Scenario: sc, Entries: Entries(sc)}
		for _, e := range o.Entries {
			rounds := runDraws(t, sc, e, Rounds)
			o.Add(rounds)
		}
		outs = append(outs, o)
	}
	doc := Document(outs, reportCommand)
	for _, e := range Entries(SlowDisk(d)) {
		if strings.Count(doc, "| "+e.Name+" |") != 2*len(outs) {
			t.Errorf("the document does not have a row for %s in both tables of each scenario:\n%s", e.Name, doc)
		}
	}
	if !strings.Contains(doc, "fairseat adaptive: goodput") {
		t.Errorf("the document has no verdict:\n%s", doc)
	}
	if *reportDir == "" {
		return
	}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(*reportDir, "ADAPTIVE.md"), []byte(doc), 0o644))
	must(os.WriteFile(filepath.Join(*reportDir, "adaptive.svg"), []byte(SVG(outs)), 0o644))
	t.Logf("wrote %s and adaptive.svg", filepath.Join(*reportDir, "ADAPTIVE.md"))
}

// TestLost: goodput lost at each lossTick is C less the work the server
// did in it, filed by what the limiter was doing.
func TestLost(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	us := func(n int) time.Duration { return time.Duration(n) * time.Microsecond }
	// Work per tick 1.25, 1.5, 0.5 and 0.25 seats (as a job of 20ms at full
	// speed from 0 and one of 15ms at half speed from 5 to 35ms would do);
	// lost: 0.75, 0.5, 1.5, 1.75 of 8 seat-ticks.
	ticks := []lossSample{
		{at: ms(10), c: 2, limit: 1, probing: true, work: us(12500)}, // [0, 10ms)
		{at: ms(20), c: 2, limit: 1, work: us(27500)},                // [10, 20ms): below C
		{at: ms(30), c: 2, limit: 2, work: us(32500)},                // [20, 30ms)
		{at: ms(40), c: 2, limit: 2, work: ms(35)},                   // [30, 40ms)
	}
	want := Loss{Probing: 0.75 / 8, Below: 0.5 / 8, Other: 3.25 / 8}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-12 }
	rate := rates(ticks)
	if got := done(ticks, rate, 0); !near(got, 3.5*ms(10).Seconds()) {
		t.Errorf("done: %v base seconds, want %v", got, 3.5*ms(10).Seconds())
	}
	if got := done(ticks, rate, 2); !near(got, 0.75*ms(10).Seconds()) {
		t.Errorf("done from the third tick: %v base seconds, want %v", got, 0.75*ms(10).Seconds())
	}
	if got := lost(ticks, rate, 0); !near(got.Probing, want.Probing) || !near(got.Below, want.Below) || !near(got.Other, want.Other) {
		t.Errorf("lost: %+v, want %+v", got, want)
	}
	if got := lost(ticks, rate, 2); math.Abs(got.Total()-3.25/4) > 1e-12 || got.Probing != 0 || got.Below != 0 {
		t.Errorf("lost from the third tick: %+v, want all %v otherwise", got, 3.25/4)
	}

	// In real time a tick may last longer than lossTick, and its work and
	// its capacity count for as long as it lasted: 1.25 seats for 10 ms
	// (0.75 lost), 1 for 20 ms below C (1 lost for 20 ms), 0.5 for 10 ms
	// (1.5 lost), of 2 seats for 40 ms.
	late := []lossSample{
		{at: ms(10), c: 2, limit: 2, work: us(12500)},
		{at: ms(30), c: 2, limit: 1, work: us(32500)},
		{at: ms(40), c: 2, limit: 2, work: us(37500)},
	}
	rate = rates(late)
	if got := done(late, rate, 0); !near(got, ms(37).Seconds()+us(500).Seconds()) {
		t.Errorf("done, a late tick: %v base seconds, want 0.0375", got)
	}
	if got, want := lost(late, rate, 0), (Loss{Below: 20.0 / 80, Other: 22.5 / 80}); !near(got.Below, want.Below) || !near(got.Other, want.Other) || got.Probing != 0 {
		t.Errorf("lost, a late tick: %+v, want %+v", got, want)
	}
}
