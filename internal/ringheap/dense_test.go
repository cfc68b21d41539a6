package ringheap

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// coarse orders elems with an abbreviation that ties often: keys 0-7
// share a prefix, 8-15 the next, and so on, so that the tests exercise the
// comparison of full keys behind equal prefixes. (The keys are >= -1000.)
type coarse struct{ elemOrder }

func (coarse) Prefix(k int) uint64 { return uint64(k+1000) / 8 }

// backwards has an abbreviation that orders the keys the wrong way.
type backwards struct{ elemOrder }

func (backwards) Prefix(k int) uint64 { return uint64(10 - k) }

// TestDenseRandom is TestQueueRandom for Dense (which has no Reinit),
// with prefixes that tie often.
func TestDenseRandom(t *testing.T) {
	for seed := range uint64(30) {
		var q Dense[int, *elem, coarse]
		driveMostlyInOrder(t, rand.New(rand.NewPCG(seed, 7)), fmt.Sprintf("seed %d", seed), &q, nil)
	}
}

// TestDenseHeapOnly drives Dense with keys in random order, so that
// nearly every element goes through the heap, to sizes where the heap has
// several levels.
func TestDenseHeapOnly(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var q Dense[int, *elem, coarse]
	var in []*elem
	for step := range 20000 {
		at := fmt.Sprintf("step %d", step)
		switch op := rng.IntN(10); {
		case op < 5 || len(in) == 0:
			e := &elem{v: rng.IntN(5000), idx: -1}
			q.Push(e)
			in = append(in, e)
		case op < 7:
			e := in[rng.IntN(len(in))]
			e.v = rng.IntN(5000)
			q.Fix(e)
		default:
			in = popLeast(t, at, &q, in)
		}
		if step%97 == 0 {
			check(t, at, &q, in)
		}
	}
	check(t, "end", &q, in)
}

// TestDenseVerifyFails: Verify reports a stale key, a wrong handle and a
// prefix that disagrees with the keys, so that the checks above can fail.
func TestDenseVerifyFails(t *testing.T) {
	q, es := buildDense[coarse]()
	if err := q.Verify(); err != nil {
		t.Fatal(err)
	}
	es[5].v = 50 // changed without Fix
	if q.Verify() == nil {
		t.Error("Verify missed a stale key")
	}
	q, es = buildDense[coarse]()
	es[3].idx = 7
	if q.Verify() == nil {
		t.Error("Verify missed a wrong handle")
	}
	qb, _ := buildDense[backwards]()
	if qb.Verify() == nil {
		t.Error("Verify missed a prefix that disagrees with the keys")
	}
}

// buildDense pushes ten elems, most of which go to the heap.
func buildDense[O DenseOrder[int, *elem]]() (*Dense[int, *elem, O], []*elem) {
	var q Dense[int, *elem, O]
	var es []*elem
	for _, v := range []int{5, 3, 9, 1, 7, 2, 8, 0, 6, 4} {
		e := &elem{v: v, idx: -1}
		q.Push(e)
		es = append(es, e)
	}
	return &q, es
}
