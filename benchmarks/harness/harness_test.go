package harness

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/fairseat/fairseat/benchmarks/peer"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// The fairness runs are smoke-tested inside a synctest bubble: time is
// fake, so a run of seconds takes milliseconds and nothing depends on the
// machine's speed. The checks are about bookkeeping, not about who is fair.

func TestClosedLoopSmoke(t *testing.T) {
	for _, p := range peer.All() {
		t.Run(p.Name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := ThreeFlows(2*time.Millisecond, 20*time.Millisecond, 200*time.Millisecond)
				res, err := ClosedLoop(p, c)
				if err != nil {
					t.Fatal(err)
				}
				if len(res) != len(c.Flows) {
					t.Fatalf("got %d results for %d flows", len(res), len(c.Flows))
				}
				var seats float64
				for i, r := range res {
					if r.Key != c.Flows[i].Key {
						t.Errorf("result %d is for %q, want %q", i, r.Key, c.Flows[i].Key)
					}
					seats += r.Seats
				}
				if bound := float64(p.Holders(peer.Config{Capacity: c.Capacity, Weights: c.peerConfig().Weights})); seats > bound+1e-9 {
					t.Errorf("flows held %.3f seats on average, more than the %v allowed", seats, bound)
				}
				if seats == 0 {
					t.Errorf("no seat time measured: %+v", res)
				}
			})
		})
	}
}

func TestFairseatSharesUnderFakeTime(t *testing.T) {
	// fairseat's virtual-time fairness, checked deterministically: with fake
	// time every request holds its seat exactly Work, so each flow's share
	// comes out within a request of 4/3 seats.
	p, _ := peer.Lookup("fairseat")
	synctest.Test(t, func(t *testing.T) {
		res, err := ClosedLoop(p, ThreeFlows(2*time.Millisecond, 20*time.Millisecond, 400*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Seats < 4.0/3-0.1 || r.Seats > 4.0/3+0.1 {
				t.Errorf("flow %s held %.3f seats, want 1.333 ± 0.1 (all: %+v)", r.Key, r.Seats, res)
			}
		}
	})
}

func TestFloodSmoke(t *testing.T) {
	for _, p := range peer.All() {
		t.Run(p.Name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := DefaultFlood(time.Millisecond)
				c.Flood = 100
				r, err := Flood(p, c)
				if err != nil {
					t.Fatal(err)
				}
				if r.LightRequests == 0 || r.LightP99 < r.LightP50 || r.LightMax < r.LightP99 {
					t.Errorf("inconsistent result %+v", r)
				}
				if min := time.Duration(c.Flood/p.Holders(peer.Config{Capacity: c.Capacity, Weights: map[string]float64{"flood": 1, "light": 1}})) * c.Work; r.FloodDone < min {
					t.Errorf("flood of %d done in %v, faster than the seats allow (%v)", c.Flood, r.FloodDone, min)
				}
			})
		})
	}
}

func TestRPCVariants(t *testing.T) {
	for _, v := range RPCVariants() {
		t.Run(v, func(t *testing.T) {
			s, stop, err := NewRPCServer(v)
			if err != nil {
				t.Fatal(err)
			}
			defer stop()
			for range 3 {
				if err := s.Call(context.Background()); err != nil {
					t.Fatalf("Call: %v", err)
				}
			}
		})
	}
}

func TestPercentile(t *testing.T) {
	ds := make([]time.Duration, 100)
	for i := range ds {
		ds[i] = time.Duration(i + 1)
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 50}, {0.99, 99}, {1, 100}, {0, 1}} {
		if got := percentile(ds, c.q); got != c.want {
			t.Errorf("percentile(1..100, %v) = %v, want %v", c.q, got, c.want)
		}
	}
}
