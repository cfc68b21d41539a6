package admission

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestFlowPrefixOrder checks the one property the flows' queue relies on:
// a flow that sorts before another never has a greater prefix. Keys are
// drawn to meet every field's edges: urgency mixed, priorities on both
// sides of the exact range, equal and nearly equal virtual times (which
// the prefix cannot tell apart), negative and huge ones.
func TestFlowPrefixOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	effs := []Priority{0, 1, -1, 10, 20, 40, 1<<15 - 3, 1<<15 - 2, 1<<15 - 1, 1 << 15, -(1<<15 - 2), -(1<<15 - 1), -(1 << 15), math.MaxInt, math.MinInt}
	vs := []float64{0, 1e-9, 1, 1 + 1e-12, 1 + 1e-15, 2.5, 1e6, 1e300, -1, -1e-9, math.Inf(1), math.SmallestNonzeroFloat64}
	draw := func() sortKey {
		return sortKey{
			v:        vs[rng.IntN(len(vs))] * (1 + float64(rng.IntN(3))*1e-13),
			headAt:   rng.Int64N(5) - 2 + int64(rng.IntN(2))*math.MaxInt64/2,
			headSeq:  rng.Uint64N(4),
			eff:      effs[rng.IntN(len(effs))],
			urgent:   rng.IntN(4) == 0,
			belowMin: rng.IntN(3) == 0,
		}
	}
	ties := 0
	for range 200_000 {
		a, b := draw(), draw()
		pa, pb := flowPrefix(&a), flowPrefix(&b)
		if lessKey(&a, &b) && pa > pb || lessKey(&b, &a) && pb > pa {
			t.Fatalf("prefixes out of order:\n a %+v prefix %#x\n b %+v prefix %#x\nlessKey(a, b) = %v", a, pa, b, pb, lessKey(&a, &b))
		}
		if pa == pb && a != b {
			ties++
		}
	}
	if ties == 0 {
		t.Error("no two different keys shared a prefix: the draw does not reach the ties")
	}
}
