package adaptive

import (
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/fairseat/fairseat/admission"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestRunEveryLimiter plays a short steady scenario against every limiter:
// each serves both clients and stops cleanly, and a fixed capacity equal to
// the true one keeps the server busy.
func TestRunEveryLimiter(t *testing.T) {
	sc := Steady(12 * time.Second)
	sc.Warmup = 4 * time.Second
	for _, e := range Entries(sc) {
		t.Run(e.Name, func(t *testing.T) {
			r := runEntry(t, sc, e)
			t.Logf("%+v", Result{Name: r.Name, Goodput: r.Goodput, Done: r.Done, P50: r.P50, P99: r.P99,
				LightP99Wait: r.LightP99Wait, MeanLimit: r.MeanLimit})
			if r.Done == 0 || r.LightP99Wait == 0 || len(r.Limits) != int(sc.Duration/Tick) {
				t.Errorf("%s: %d requests done, light p99 wait %v, %d limit samples", e.Name, r.Done, r.LightP99Wait, len(r.Limits))
			}
			if e.Name == "fixed c" && r.Goodput < 0.9*float64(sc.C) {
				t.Errorf("fixed c: goodput %.2f seats, want at least 0.9·%d", r.Goodput, sc.C)
			}
		})
	}
}

// fromMin is fairseat adaptive started at Min, as the package doc advises
// on a server that shares itself among its jobs (a CPU), where the
// report's limiters all start at Initial.
var fromMin = Entry{Name: "fairseat adaptive from Min", New: func() (Limiter, error) {
	return newFairseat(admission.Config{Adaptive: &admission.AdaptiveConfig{Min: 1, Max: Max}})
}}

// runDraws runs entry e through sc once with each of the draws of jobs 0
// to n-1 (Scenario.Draw), as the report does.
func runDraws(t *testing.T, sc Scenario, e Entry, n int) []Result {
	t.Helper()
	var rounds []Result
	for i := range n {
		sc.Draw = uint64(i)
		rounds = append(rounds, runEntry(t, sc, e))
	}
	return rounds
}

// runEntry runs entry e through sc in its own synctest bubble.
func runEntry(t *testing.T, sc Scenario, e Entry) Result {
	t.Helper()
	var r Result
	synctest.Test(t, func(t *testing.T) {
		l, err := e.New()
		if err != nil {
			t.Fatal(err)
		}
		if r, err = Run(sc, e.Name, l); err != nil {
			t.Fatal(err)
		}
	})
	return r
}
