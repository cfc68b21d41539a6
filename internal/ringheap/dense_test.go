package ringheap

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// coarse is an abbreviation of an int key that ties often: keys 0-7 share
// a prefix, 8-15 the next, and so on, so that the tests exercise the
// comparison of full keys behind equal prefixes. (The keys are >= -1000.)
func coarse(k *int) uint64 { return uint64(*k+1000) / 8 }

// TestDenseRandom is TestQueueRandom for Dense, whose prefixes tie often.
func TestDenseRandom(t *testing.T) {
	for seed := range uint64(30) {
		rng := rand.New(rand.NewPCG(seed, 7))
		q := NewDense(elemKey, lessInt, coarse, elemIndex)
		var in []*elem
		next := 0
		for step := range 3000 {
			at := fmt.Sprintf("seed %d step %d", seed, step)
			switch op := rng.IntN(50); {
			case op < 20: // arrival: usually past every key so far
				next += rng.IntN(3)
				v := next
				if rng.IntN(4) == 0 {
					v -= rng.IntN(20)
				}
				e := &elem{v: v, idx: -1}
				q.Push(e)
				in = append(in, e)
			case op < 30 && len(in) > 0: // key moved a little, or past everything
				e := in[rng.IntN(len(in))]
				if rng.IntN(2) == 0 {
					e.v += rng.IntN(5) - 2
				} else {
					next += 1 + rng.IntN(3)
					e.v = next
				}
				q.Fix(e)
			case op < 35 && len(in) > 0:
				i := rng.IntN(len(in))
				q.Remove(in[i])
				if in[i].idx != -1 {
					t.Fatalf("%s: removed element keeps handle %d", at, in[i].idx)
				}
				in = slices.Delete(in, i, i+1)
			case len(in) > 0:
				in = popLeast(t, at, &q, in)
			}
			check(t, at, &q, in)
		}
		for len(in) > 0 { // drain in order
			in = popLeast(t, fmt.Sprintf("seed %d drain", seed), &q, in)
		}
		check(t, fmt.Sprintf("seed %d drained", seed), &q, in)
	}
}

// TestDenseHeapOnly drives Dense with keys in random order, so that
// nearly every element goes through the heap, to sizes where the heap has
// several levels.
func TestDenseHeapOnly(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	q := NewDense(elemKey, lessInt, coarse, elemIndex)
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
	build := func(prefix func(*int) uint64) (Dense[int, *elem], []*elem) {
		q := NewDense(elemKey, lessInt, prefix, elemIndex)
		var es []*elem
		for _, v := range []int{5, 3, 9, 1, 7, 2, 8, 0, 6, 4} { // most go to the heap
			e := &elem{v: v, idx: -1}
			q.Push(e)
			es = append(es, e)
		}
		return q, es
	}
	q, es := build(coarse)
	if err := q.Verify(); err != nil {
		t.Fatal(err)
	}
	es[5].v = 50 // changed without Fix
	if q.Verify() == nil {
		t.Error("Verify missed a stale key")
	}
	q, es = build(coarse)
	es[3].idx = 7
	if q.Verify() == nil {
		t.Error("Verify missed a wrong handle")
	}
	q, _ = build(func(k *int) uint64 { return uint64(10 - *k) }) // orders backwards
	if q.Verify() == nil {
		t.Error("Verify missed a prefix that disagrees with the keys")
	}
}
