package admission

import (
	"fmt"
	"slices"
)

// ringHeap is a priority queue (least first) built for elements that
// mostly arrive in order. It takes no locks.
//
// An element whose key is not less than that of the last element of a ring
// goes to the back of that ring, which therefore stays sorted: its front is
// its least element, and pushing and popping there is O(1) and touches no
// other element. Any other element goes to a keyedHeap beside the ring, and
// the least element is the lesser of the ring's front and the heap's top.
//
// The scheduler's queues are mostly in order:
//
//   - A flow's jobs (jobQueue): a job's aging clock starts at its arrival,
//     and arrivals are numbered in order. Only retries (whose clock runs
//     from their first submission), jobs back from a resource they were
//     parked on and ShortestFirst overtakes go to the heap.
//   - A type's flows, in dispatch order: the flow admitted goes from the
//     front to V_k + est/w_k, at or past every key served before it when
//     jobs cost alike, so under a backlog of like requests (one client's
//     thousand clones) admission is O(1) instead of a sift through every
//     level of a heap of all flows. Flows whose tags come out of order
//     (unlike costs or weights, corrections at completion, keys becoming
//     active) go to the heap, which is never larger than the whole.
//   - Flows by the instant their head is next promoted: heads advance in
//     arrival order and promotions come a fixed Interval apart.
//
// Every slot keeps its element's key next to it, so ordering reads no
// element's memory: with 100,000 queued jobs over 10,000 keys, those reads
// and the position writes of heap sifts were cache misses on every
// admission.
//
// An element that leaves from inside the ring leaves a hole: its slot's
// element is the zero value. Holes at either end are trimmed at once, so
// the first and last slots always hold elements; holes inside are squeezed
// out when the ring is full and at least half holes, otherwise the ring
// doubles (which keeps every position). Both cost O(1) amortized per push.
// Fix updates a key in place when it still sorts between its neighbours
// (or did not change), and otherwise moves the element.
//
// Where an element is, is stored in it, at heap.index: a heap index (>= 0),
// ringIndex(p) for ring position p (<= -2), or -1 when it is in neither.
//
// Invariants: len(ring) is 0 or a power of two; the slots in use are
// positions [front, back), slot p at ring[p & (len(ring)-1)], at most
// len(ring) of them; if any is in use, the first and the last hold an
// element; the keys of the slots in use (holes included) never decrease;
// inRing counts the slots holding an element. An element in the ring has
// index ringIndex(p) and the slot's key equals key(element); the heap's own
// invariants hold.
type ringHeap[K comparable, T comparable] struct {
	ring        []ringSlot[K, T]
	front, back uint64
	inRing      int
	heap        keyedHeap[K, T] // also holds key, less and index

	// k holds the key being placed. It is a field, not a local, because the
	// comparisons take its address through a function value, which would
	// move a local to the heap on every push.
	k K
}

type ringSlot[K comparable, T comparable] struct {
	k K
	v T // the zero value: a hole
}

// minRing is the ring's length when its first element arrives.
const minRing = 4

// maxKeptRing is the longest ring kept when a queue is reset for reuse.
const maxKeptRing = 64

func newRingHeap[K comparable, T comparable](key func(T) K, less func(a, b *K) bool, index func(T) *int) ringHeap[K, T] {
	return ringHeap[K, T]{heap: keyedHeap[K, T]{key: key, less: less, index: index}}
}

// ringIndex encodes ring position p as an index (<= -2); ringPos decodes it.
func ringIndex(p uint64) int { return -2 - int(p) }
func ringPos(i int) uint64   { return uint64(-2 - i) }

func (q *ringHeap[K, T]) Len() int { return q.inRing + q.heap.Len() }

func (q *ringHeap[K, T]) slot(p uint64) *ringSlot[K, T] { return &q.ring[p&uint64(len(q.ring)-1)] }

// top returns the least element's key and the element; q must not be
// empty. The key is valid until q changes.
func (q *ringHeap[K, T]) top() (*K, T) {
	if q.inRing > 0 {
		s := q.slot(q.front)
		if q.heap.Len() == 0 || !q.heap.less(q.heap.topKey(), &s.k) {
			return &s.k, s.v
		}
	}
	return q.heap.topKey(), q.heap.Top()
}

// Top returns the least element; q must not be empty.
func (q *ringHeap[K, T]) Top() T {
	_, x := q.top()
	return x
}

// topKey returns the least element's key; q must not be empty. It is valid
// until q changes.
func (q *ringHeap[K, T]) topKey() *K {
	k, _ := q.top()
	return k
}

// Push adds x, which is not in q.
func (q *ringHeap[K, T]) Push(x T) {
	q.k = q.heap.key(x)
	q.pushKey(x)
}

// pushKey adds x, whose key is in q.k.
func (q *ringHeap[K, T]) pushKey(x T) {
	if q.inRing > 0 && q.heap.less(&q.k, &q.slot(q.back-1).k) {
		q.heap.Push(x)
		return
	}
	if q.back-q.front == uint64(len(q.ring)) {
		q.makeRoom()
	}
	*q.slot(q.back) = ringSlot[K, T]{q.k, x}
	*q.heap.index(x) = ringIndex(q.back)
	q.back++
	q.inRing++
}

// Remove takes x, which is in q, out of it.
func (q *ringHeap[K, T]) Remove(x T) {
	i := *q.heap.index(x)
	if i >= 0 {
		q.heap.Remove(i)
		return
	}
	var zero T
	p := ringPos(i)
	q.slot(p).v = zero
	*q.heap.index(x) = -1
	q.inRing--
	// Only an end can have become a hole: the slots at the other end are
	// not read (with a long queue, each is a cache miss).
	if p == q.front {
		for q.front != q.back && q.slot(q.front).v == zero {
			q.front++
		}
	} else if p+1 == q.back {
		for q.back != q.front && q.slot(q.back-1).v == zero {
			q.back--
		}
	}
}

// Pop removes and returns the least element; q must not be empty.
func (q *ringHeap[K, T]) Pop() T {
	x := q.Top()
	q.Remove(x)
	return x
}

// Fix restores the order after x's key changed; x is in q. (An element of
// the heap whose key comes to sort after the ring's back stays in the heap:
// moving it to the ring costs a heap removal, and measured no better.)
func (q *ringHeap[K, T]) Fix(x T) {
	i := *q.heap.index(x)
	if i >= 0 {
		q.heap.Fix(i)
		return
	}
	p := ringPos(i)
	s := q.slot(p)
	q.k = q.heap.key(x)
	if q.k == s.k {
		return
	}
	if (p == q.front || !q.heap.less(&q.k, &q.slot(p-1).k)) && (p+1 == q.back || !q.heap.less(&q.slot(p+1).k, &q.k)) {
		s.k = q.k // still in order where it is
		return
	}
	q.Remove(x)
	q.pushKey(x)
}

// makeRoom is called when every slot of the ring is in use: it squeezes the
// holes out if they are at least half of it, and otherwise doubles it.
func (q *ringHeap[K, T]) makeRoom() {
	n := uint64(len(q.ring))
	if n > 0 && uint64(q.inRing) <= n/2 {
		var zero T
		w := q.front
		for p := q.front; p != q.back; p++ {
			if s := *q.slot(p); s.v != zero {
				*q.slot(w) = s
				*q.heap.index(s.v) = ringIndex(w)
				w++
			}
		}
		for p := w; p != q.back; p++ {
			*q.slot(p) = ringSlot[K, T]{}
		}
		q.back = w
		return
	}
	ring := make([]ringSlot[K, T], max(2*n, minRing))
	mask := uint64(len(ring) - 1)
	for p := q.front; p != q.back; p++ {
		ring[p&mask] = *q.slot(p)
	}
	q.ring = ring
}

// each calls fn for every element of q, in no particular order.
func (q *ringHeap[K, T]) each(fn func(T)) {
	var zero T
	for p := q.front; p != q.back; p++ {
		if x := q.slot(p).v; x != zero {
			fn(x)
		}
	}
	for _, s := range q.heap.s {
		fn(s.v)
	}
}

// Reinit recomputes every key, after changes to many elements at once, and
// restores the order in O(n log n): all elements go into the ring, sorted.
func (q *ringHeap[K, T]) Reinit() {
	var slots []ringSlot[K, T]
	q.each(func(x T) { slots = append(slots, ringSlot[K, T]{q.heap.key(x), x}) })
	slices.SortStableFunc(slots, func(a, b ringSlot[K, T]) int {
		switch {
		case q.heap.less(&a.k, &b.k):
			return -1
		case q.heap.less(&b.k, &a.k):
			return 1
		}
		return 0
	})
	q.reset()
	for _, s := range slots {
		q.k = s.k
		q.pushKey(s.v)
	}
}

// reset empties q for reuse, keeping a ring of moderate length. The
// elements it held are not told.
func (q *ringHeap[K, T]) reset() {
	if len(q.ring) > maxKeptRing {
		q.ring = nil
	}
	clear(q.ring)
	q.front, q.back, q.inRing = 0, 0, 0
	clear(q.heap.s)
	q.heap.s = q.heap.s[:0]
}

// verify reports the first broken invariant of q, or nil.
func (q *ringHeap[K, T]) verify() error {
	n := uint64(len(q.ring))
	var zero T
	switch {
	case n&(n-1) != 0:
		return fmt.Errorf("ring heap: ring length %d is not a power of two", n)
	case q.back-q.front > n:
		return fmt.Errorf("ring heap: %d slots in use in a ring of %d", q.back-q.front, n)
	case q.front != q.back && (q.slot(q.front).v == zero || q.slot(q.back-1).v == zero):
		return fmt.Errorf("ring heap: a hole at the front or back of [%d, %d)", q.front, q.back)
	}
	live := 0
	for p := q.front; p != q.back; p++ {
		s := q.slot(p)
		if p != q.front && q.heap.less(&s.k, &q.slot(p-1).k) {
			return fmt.Errorf("ring heap: ring position %d sorts before the one ahead of it", p)
		}
		if s.v == zero {
			continue
		}
		live++
		if i := *q.heap.index(s.v); i != ringIndex(p) || s.k != q.heap.key(s.v) {
			return fmt.Errorf("ring heap: element at ring position %d has index %d (want %d), key %+v (slot %+v)",
				p, i, ringIndex(p), q.heap.key(s.v), s.k)
		}
	}
	if live != q.inRing {
		return fmt.Errorf("ring heap: %d elements in the ring, inRing %d", live, q.inRing)
	}
	if i := q.heap.verify(); i >= 0 {
		return fmt.Errorf("ring heap: heap broken at %d", i)
	}
	return nil
}
