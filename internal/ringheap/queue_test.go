package ringheap

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestQueueRandom drives a Queue the way the scheduler uses its queues:
// elements mostly pushed in order (the ring) and some not (the heap), keys
// changed and fixed (in place, or moved), removals from anywhere, pops and
// (rarely) a Reinit after many keys changed, against a plain slice.
func TestQueueRandom(t *testing.T) {
	for seed := range uint64(30) {
		var q Queue[int, *elem, elemOrder]
		driveMostlyInOrder(t, rand.New(rand.NewPCG(seed, 5)), fmt.Sprintf("seed %d", seed), &q, q.Reinit)
		if q.ring.front != q.ring.back {
			t.Fatalf("seed %d: drained queue has slots [%d, %d)", seed, q.ring.front, q.ring.back)
		}
	}
}

// queue is what Queue and Dense have in common, for driveMostlyInOrder.
type queue interface {
	ordered
	Push(*elem)
	Fix(*elem)
	Remove(*elem)
}

// driveMostlyInOrder runs 3000 random operations on q against a plain
// slice, checking q after each, then drains it in order: arrivals usually
// past every key so far, keys moved a little or past everything, removals
// from anywhere, pops and, when reinit is not nil, (rarely) many keys moved
// at once and reinit called, as a pause does.
func driveMostlyInOrder(t *testing.T, rng *rand.Rand, name string, q queue, reinit func()) {
	t.Helper()
	var in []*elem
	next := 0
	for step := range 3000 {
		at := fmt.Sprintf("%s step %d", name, step)
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
				t.Fatalf("%s: removed element keeps index %d", at, in[i].idx)
			}
			in = slices.Delete(in, i, i+1)
		case op == 49 && len(in) > 0 && reinit != nil:
			for _, e := range in {
				if rng.IntN(3) == 0 {
					e.v += rng.IntN(20)
				}
			}
			reinit()
		case len(in) > 0:
			in = popLeast(t, at, q, in)
		}
		check(t, at, q, in)
	}
	for len(in) > 0 { // drain in order
		in = popLeast(t, name+" drain", q, in)
	}
	check(t, name+" drained", q, in)
}

// TestQueueInOrderTouchesOnlyRing: arrivals in order never enter the heap,
// and holes in the middle are squeezed out instead of growing the ring
// without bound.
func TestQueueInOrderTouchesOnlyRing(t *testing.T) {
	var q Queue[int, *elem, elemOrder]
	var live []*elem
	for i := range 10_000 {
		e := &elem{v: i, idx: -1}
		q.Push(e)
		live = append(live, e)
		if i%2 == 1 { // every other element leaves from the middle
			q.Remove(live[len(live)/2])
			live = slices.Delete(live, len(live)/2, len(live)/2+1)
		}
	}
	if q.heap.Len() != 0 {
		t.Fatalf("%d in-order arrivals went to the heap", q.heap.Len())
	}
	if err := q.Verify(); err != nil {
		t.Fatal(err)
	}
	if n, max := len(q.ring.s), 4*len(live); n > max {
		t.Fatalf("ring of %d slots for %d elements (want at most %d)", n, len(live), max)
	}
}

// TestQueueResetKeepsFunctions: a reset queue is empty, keeps a ring of
// moderate length, and orders what is pushed next as a new one does.
func TestQueueResetKeepsFunctions(t *testing.T) {
	var q Queue[int, *elem, elemOrder]
	for v := range 1000 {
		q.Push(&elem{v: v, idx: -1})
	}
	q.Reset()
	if q.Len() != 0 || len(q.ring.s) > maxKeptRing {
		t.Fatalf("reset queue: Len %d, ring of %d", q.Len(), len(q.ring.s))
	}
	a, b := &elem{v: 2, idx: -1}, &elem{v: 1, idx: -1}
	q.Push(a)
	q.Push(b)
	if err := q.Verify(); err != nil || q.Pop() != b || q.Pop() != a {
		t.Fatalf("reset queue does not order: %v", err)
	}
}

// TestRingPositionsWrap runs the random drivers with ring positions that
// start three below 2^32, so that they wrap around within a few pushes, as they
// do after 2^32 pushes to one queue.
func TestRingPositionsWrap(t *testing.T) {
	for seed := range uint64(5) {
		var q Queue[int, *elem, elemOrder]
		q.ring.front, q.ring.back = math.MaxUint32-3, math.MaxUint32-3
		driveMostlyInOrder(t, rand.New(rand.NewPCG(seed, 11)), fmt.Sprintf("queue seed %d", seed), &q, q.Reinit)
		var d Dense[int, *elem, coarse]
		d.ring.front, d.ring.back = math.MaxUint32-3, math.MaxUint32-3
		driveMostlyInOrder(t, rand.New(rand.NewPCG(seed, 13)), fmt.Sprintf("dense seed %d", seed), &d, nil)
	}
}
