package admission

import (
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"
)

// Unit tests of the lock-free structures the scheduler is built from,
// driven directly by random operations against a naive reading of what
// they promise, with their invariants checked after every operation.

// TestJobQueueRandom drives a jobQueue with pushes (mostly in order, as
// arrivals are, some out of order, as retries and unparked jobs are),
// removals from anywhere, pops and re-keying, against a plain slice.
func TestJobQueueRandom(t *testing.T) {
	for seed := range uint64(50) {
		rng := rand.New(rand.NewPCG(seed, 7))
		q := newJobQueue()
		typ := &typeState{}
		var in []*job // what q holds
		var seq uint64
		clock := int64(1000)
		best := func() *job {
			var b *job
			for _, j := range in {
				if b == nil {
					b = j
					continue
				}
				if bk, jk := jobOrderKey(b), jobOrderKey(j); lessJobKey(&jk, &bk) {
					b = j
				}
			}
			return b
		}
		for step := range 2000 {
			switch op := rng.IntN(10); {
			case op < 5: // arrival: sorts last, or (1 in 5) carries an older clock
				seq++
				clock += int64(rng.IntN(3))
				at := clock
				if rng.IntN(5) == 0 {
					at -= int64(rng.IntN(50))
				}
				j := &job{typ: typ, seq: seq, agingAt: at, idx: -1}
				q.Push(j)
				in = append(in, j)
			case op < 7 && len(in) > 0: // leaves from anywhere
				i := rng.IntN(len(in))
				q.Remove(in[i])
				if in[i].idx != -1 {
					t.Fatalf("seed %d step %d: removed job keeps idx %d", seed, step, in[i].idx)
				}
				in = slices.Delete(in, i, i+1)
			case op < 9 && len(in) > 0: // admitted: the best goes
				want := best()
				if got := q.Top(); got != want {
					t.Fatalf("seed %d step %d: Top is job %d, want %d", seed, step, got.seq, want.seq)
				}
				if k := jobOrderKey(want); *q.topKey() != k {
					t.Fatalf("seed %d step %d: top key %+v, want %+v", seed, step, *q.topKey(), k)
				}
				q.Pop()
				in = slices.DeleteFunc(in, func(j *job) bool { return j == want })
			case op == 9 && len(in) > 0: // a pause moved some clocks
				for _, j := range in {
					if rng.IntN(3) == 0 {
						j.agingAt += int64(rng.IntN(20))
					}
				}
				q.Reinit()
			}
			if err := q.verify(); err != nil {
				t.Fatalf("seed %d step %d: %v", seed, step, err)
			}
			if q.Len() != len(in) {
				t.Fatalf("seed %d step %d: Len %d, holds %d", seed, step, q.Len(), len(in))
			}
			if len(in) > 0 && q.Top() != best() {
				t.Fatalf("seed %d step %d: Top is job %d, want %d", seed, step, q.Top().seq, best().seq)
			}
		}
		for len(in) > 0 { // drain in order
			want := best()
			if got := q.Pop(); got != want {
				t.Fatalf("seed %d drain: Pop gave job %d, want %d", seed, got.seq, want.seq)
			}
			in = slices.DeleteFunc(in, func(j *job) bool { return j == want })
		}
		if err := q.verify(); err != nil || q.Len() != 0 || q.front != q.back {
			t.Fatalf("seed %d: drained queue: %v, Len %d, slots [%d, %d)", seed, err, q.Len(), q.front, q.back)
		}
	}
}

// TestJobQueueInOrderTouchesOnlyRing: arrivals in order never enter the
// heap, and holes in the middle are squeezed out instead of growing the ring
// without bound.
func TestJobQueueInOrderTouchesOnlyRing(t *testing.T) {
	q := newJobQueue()
	typ := &typeState{}
	var live []*job
	for i := range 10_000 {
		j := &job{typ: typ, seq: uint64(i + 1), agingAt: int64(i), idx: -1}
		q.Push(j)
		live = append(live, j)
		if i%2 == 1 { // every other job leaves from the middle
			q.Remove(live[len(live)/2])
			live = slices.Delete(live, len(live)/2, len(live)/2+1)
		}
	}
	if q.heap.Len() != 0 {
		t.Fatalf("%d in-order arrivals went to the heap", q.heap.Len())
	}
	if err := q.verify(); err != nil {
		t.Fatal(err)
	}
	if n, max := len(q.ring), 4*len(live); n > max {
		t.Fatalf("ring of %d slots for %d jobs (want at most %d)", n, len(live), max)
	}
}

// TestQueueLengthsRandom drives queueLengths with random ±1 changes of many
// keys' counts and checks that longest is always a key of the greatest count,
// the one that reached it last.
func TestQueueLengthsRandom(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 11))
		var q queueLengths
		keys := make([]*keyState, 50)
		reached := make([]int, len(keys)) // step at which the key's count last changed
		for i := range keys {
			keys[i] = &keyState{name: string(rune('A' + i))}
		}
		for step := 1; step <= 5000; step++ {
			i := rng.IntN(len(keys))
			k := keys[i]
			if k.queued > 0 && rng.IntN(2) == 0 {
				k.queued--
			} else {
				k.queued++
			}
			reached[i] = step
			q.update(k)
			if err := q.verify(); err != nil {
				t.Fatalf("seed %d step %d: %v", seed, step, err)
			}
			want, wi := (*keyState)(nil), -1
			for i, k := range keys {
				if k.queued > 0 && (want == nil || k.queued > want.queued || k.queued == want.queued && reached[i] > reached[wi]) {
					want, wi = k, i
				}
			}
			if got := q.longest(); got != want {
				t.Fatalf("seed %d step %d: longest is %v, want %v", seed, step, got, want)
			}
			if n := q.len(); n != countIf(keys, func(k *keyState) bool { return k.queued > 0 }) {
				t.Fatalf("seed %d step %d: len %d", seed, step, n)
			}
		}
		entries := 0
		for _, b := range q.buckets {
			entries += len(b.entries)
		}
		if max := 2*q.len() + 8*len(q.buckets); entries > max {
			t.Fatalf("seed %d: %d entries kept for %d keys in %d buckets (bound %d)", seed, entries, q.len(), len(q.buckets), max)
		}
	}
}

func countIf[T any](s []T, f func(T) bool) int {
	n := 0
	for _, x := range s {
		if f(x) {
			n++
		}
	}
	return n
}

// elem is what the heap tests order: an int key and the index the
// structure keeps in it.
type elem struct {
	v   int
	idx int
}

func elemKey(e *elem) int    { return e.v }
func elemIndex(e *elem) *int { return &e.idx }
func lessInt(a, b *int) bool { return *a < *b }

// TestKeyedHeapRandom drives a keyedHeap with pushes, fixes after key
// changes, removals from anywhere and pops, against a plain slice, checking
// its invariants (indexes, keys, order) after every step.
func TestKeyedHeapRandom(t *testing.T) {
	for seed := range uint64(30) {
		rng := rand.New(rand.NewPCG(seed, 3))
		h := keyedHeap[int, *elem]{key: elemKey, less: lessInt, index: elemIndex}
		var in []*elem
		for step := range 3000 {
			switch op := rng.IntN(8); {
			case op < 3:
				e := &elem{v: rng.IntN(100), idx: -1}
				h.Push(e)
				in = append(in, e)
			case op < 5 && len(in) > 0:
				e := in[rng.IntN(len(in))]
				e.v = rng.IntN(100)
				h.Fix(e.idx)
			case op < 6 && len(in) > 0:
				i := rng.IntN(len(in))
				h.Remove(in[i].idx)
				if in[i].idx != -1 {
					t.Fatalf("seed %d step %d: removed element keeps index %d", seed, step, in[i].idx)
				}
				in = slices.Delete(in, i, i+1)
			case len(in) > 0:
				least := slices.MinFunc(in, func(a, b *elem) int { return a.v - b.v })
				e := h.Pop()
				if e.v != least.v {
					t.Fatalf("seed %d step %d: Pop gave %d, least is %d", seed, step, e.v, least.v)
				}
				in = slices.DeleteFunc(in, func(x *elem) bool { return x == e })
			}
			if i := h.verify(); i >= 0 {
				t.Fatalf("seed %d step %d: heap broken at %d", seed, step, i)
			}
			if h.Len() != len(in) {
				t.Fatalf("seed %d step %d: Len %d, holds %d", seed, step, h.Len(), len(in))
			}
		}
	}
}

// TestRingHeapRandom drives a ringHeap the way the type heaps use it:
// elements mostly pushed in order (the ring) and some not (the heap), keys
// changed and fixed (in place, or moved), removals from anywhere and pops,
// against a plain slice.
func TestRingHeapRandom(t *testing.T) {
	for seed := range uint64(30) {
		rng := rand.New(rand.NewPCG(seed, 5))
		q := newRingHeap(elemKey, lessInt, elemIndex)
		var in []*elem
		next := 0
		for step := range 3000 {
			switch op := rng.IntN(10); {
			case op < 4: // arrival: usually past every key so far
				next += rng.IntN(3)
				v := next
				if rng.IntN(4) == 0 {
					v -= rng.IntN(20)
				}
				e := &elem{v: v, idx: -1}
				q.Push(e)
				in = append(in, e)
			case op < 6 && len(in) > 0: // key moved a little, or past everything
				e := in[rng.IntN(len(in))]
				if rng.IntN(2) == 0 {
					e.v += rng.IntN(5) - 2
				} else {
					next += 1 + rng.IntN(3)
					e.v = next
				}
				q.Fix(e)
			case op < 7 && len(in) > 0:
				i := rng.IntN(len(in))
				q.Remove(in[i])
				if in[i].idx != -1 {
					t.Fatalf("seed %d step %d: removed element keeps index %d", seed, step, in[i].idx)
				}
				in = slices.Delete(in, i, i+1)
			case len(in) > 0:
				least := slices.MinFunc(in, func(a, b *elem) int { return a.v - b.v })
				if k := q.topKey(); *k != least.v {
					t.Fatalf("seed %d step %d: top key %d, least is %d", seed, step, *k, least.v)
				}
				e := q.Pop()
				if e.v != least.v {
					t.Fatalf("seed %d step %d: Pop gave %d, least is %d", seed, step, e.v, least.v)
				}
				in = slices.DeleteFunc(in, func(x *elem) bool { return x == e })
			}
			if err := q.verify(); err != nil {
				t.Fatalf("seed %d step %d: %v", seed, step, err)
			}
			if q.Len() != len(in) {
				t.Fatalf("seed %d step %d: Len %d, holds %d", seed, step, q.Len(), len(in))
			}
		}
	}
}

// TestRecordSizes keeps a key's state within the two cache lines its
// comment promises: at most 128 bytes, the allocator's line-aligned class.
func TestRecordSizes(t *testing.T) {
	if n := unsafe.Sizeof(keyState{}); n > 128 {
		t.Errorf("keyState is %d bytes, want at most 128", n)
	}
}
