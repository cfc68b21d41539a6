package adaptive

import (
	"flag"
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

// TestReport runs every limiter through both scenarios, each in its own
// synctest bubble, and with -report writes ADAPTIVE.md and adaptive.svg
// (see reportCommand). Without -report it runs 20 s scenarios and only
// checks that the document is complete.
func TestReport(t *testing.T) {
	d := 20 * time.Second
	if *reportDir != "" {
		d = *reportFor
	}
	var outs []Outcome
	for _, sc := range []Scenario{Steady(d), SlowDisk(d)} {
		o := Outcome{Scenario: sc, Entries: Entries(sc.C)}
		for _, e := range o.Entries {
			var rounds []Result
			for range Rounds {
				rounds = append(rounds, runEntry(t, sc, e))
			}
			o.Add(rounds)
		}
		outs = append(outs, o)
	}
	doc := Document(outs, reportCommand)
	for _, e := range Entries(16) {
		if strings.Count(doc, "| "+e.Name+" |") != 2 {
			t.Errorf("the document does not have a row for %s in each scenario:\n%s", e.Name, doc)
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
