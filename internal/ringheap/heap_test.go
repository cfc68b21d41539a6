package ringheap

import (
	"fmt"
	"iter"
	"math/rand/v2"
	"slices"
	"testing"
)

// Unit tests of the two queues, driven directly by random operations
// against a plain slice, with their invariants checked after every
// operation.

// elem is what the tests order: an int key and the index the structure
// keeps in it.
type elem struct {
	v   int
	idx int
}

// elemOrder orders elems by their int.
type elemOrder struct{}

func (elemOrder) Key(e *elem) int    { return e.v }
func (elemOrder) Less(a, b int) bool { return a < b }
func (elemOrder) Index(e *elem) *int { return &e.idx }

type elemHeap = Heap[int, *elem, elemOrder]

func leastOf(in []*elem) *elem { return slices.MinFunc(in, func(a, b *elem) int { return a.v - b.v }) }

// ordered is what Heap and Queue have in common, for the helpers below.
type ordered interface {
	Len() int
	TopKey() *int
	Pop() *elem
	All() iter.Seq[*elem]
	Verify() error
}

// popLeast pops from q, checks that it gave (and its top key was) the
// least of in, and returns in without it. at says where the test is.
func popLeast(t *testing.T, at string, q ordered, in []*elem) []*elem {
	t.Helper()
	least := leastOf(in)
	if k := q.TopKey(); *k != least.v {
		t.Fatalf("%s: top key %d, least is %d", at, *k, least.v)
	}
	e := q.Pop()
	if e.v != least.v {
		t.Fatalf("%s: Pop gave %d, least is %d", at, e.v, least.v)
	}
	return slices.DeleteFunc(in, func(x *elem) bool { return x == e })
}

// check verifies q's invariants and that it holds what in holds.
func check(t *testing.T, at string, q ordered, in []*elem) {
	t.Helper()
	if err := q.Verify(); err != nil {
		t.Fatalf("%s: %v", at, err)
	}
	n := 0
	for range q.All() {
		n++
	}
	if q.Len() != len(in) || n != len(in) {
		t.Fatalf("%s: Len %d, All yields %d; holds %d", at, q.Len(), n, len(in))
	}
}

// TestHeapRandom drives a Heap with pushes, fixes after key changes,
// removals from anywhere, pops and (rarely) a Reinit after many keys
// changed, against a plain slice, checking its invariants (indexes, keys,
// order) after every step.
func TestHeapRandom(t *testing.T) {
	for seed := range uint64(30) {
		rng := rand.New(rand.NewPCG(seed, 3))
		var h elemHeap
		var in []*elem
		for step := range 3000 {
			at := fmt.Sprintf("seed %d step %d", seed, step)
			switch op := rng.IntN(40); {
			case op < 15:
				e := &elem{v: rng.IntN(100), idx: -1}
				h.Push(e)
				in = append(in, e)
			case op < 25 && len(in) > 0:
				e := in[rng.IntN(len(in))]
				e.v = rng.IntN(100)
				h.Fix(e.idx)
			case op < 30 && len(in) > 0:
				i := rng.IntN(len(in))
				h.Remove(in[i].idx)
				if in[i].idx != -1 {
					t.Fatalf("%s: removed element keeps index %d", at, in[i].idx)
				}
				in = slices.Delete(in, i, i+1)
			case op == 39 && len(in) > 0: // many keys changed at once
				for _, e := range in {
					if rng.IntN(3) == 0 {
						e.v = rng.IntN(100)
					}
				}
				h.Reinit()
			case len(in) > 0:
				in = popLeast(t, at, &h, in)
			}
			check(t, at, &h, in)
		}
	}
}

// TestHeapVerifyFails: Verify reports a stale key, a wrong index and a
// broken order, so that the checks above can fail.
func TestHeapVerifyFails(t *testing.T) {
	build := func() (elemHeap, []*elem) {
		var h elemHeap
		var es []*elem
		for v := range 10 {
			e := &elem{v: v, idx: -1}
			h.Push(e)
			es = append(es, e)
		}
		if err := h.Verify(); err != nil {
			t.Fatal(err)
		}
		return h, es
	}
	h, es := build()
	es[5].v = 50 // changed without Fix
	if h.Verify() == nil {
		t.Error("Verify missed a stale key")
	}
	h, es = build()
	es[3].idx = 7
	if h.Verify() == nil {
		t.Error("Verify missed a wrong index")
	}
	h, _ = build()
	h.s[0].k, h.s[9].k = h.s[9].k, h.s[0].k // keys swapped behind the heap's back
	h.s[0].v.v, h.s[9].v.v = h.s[0].k, h.s[9].k
	if h.Verify() == nil {
		t.Error("Verify missed a broken order")
	}
}
