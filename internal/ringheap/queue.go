package ringheap

import (
	"fmt"
	"iter"
	"slices"
)

// Queue is a priority queue (least first) built for elements that mostly
// arrive in order.
//
// An element whose key is not less than that of the last element of a ring
// goes to the back of that ring, which therefore stays sorted: its front is
// its least element, and pushing and popping there is O(1) and touches no
// other element. Any other element goes to a [Heap] beside the ring, and
// the least element is the lesser of the ring's front and the heap's top.
// The heap is never larger than the whole, so nothing costs more than in a
// heap alone.
//
// An element that leaves from inside the ring leaves a hole: its slot's
// element is the zero value (which is therefore never an element). Holes
// at either end are trimmed at once, so the first and last slots always
// hold elements; holes inside are squeezed out when the ring is full and
// at least half holes, otherwise the ring doubles (which keeps every
// position). Both cost O(1) amortized per push. Fix updates a key in place
// when it still sorts between its neighbours (or did not change), and
// otherwise moves the element.
//
// Where an element is, is stored in it, at Index(x): a heap position
// (>= 0), ringIndex(p) for ring position p (<= -2), or -1 when it is in
// neither.
//
// The zero value is an empty queue, ready to use. A Queue is not safe for
// concurrent use.
//
// Invariants: the ring's (see ring); the keys of the slots in use (holes
// included: a hole keeps its key) never decrease. An element in the ring
// has index ringIndex(p) and the slot's key equals key(element); the
// heap's own invariants hold.
type Queue[K comparable, T comparable, O Order[K, T]] struct {
	ring ring[entry[K, T]]
	heap Heap[K, T, O]
}

// maxKeptRing is the longest ring kept when a queue is reset for reuse.
const maxKeptRing = 64

// Len is the number of elements in q.
func (q *Queue[K, T, O]) Len() int { return int(q.ring.n) + q.heap.Len() }

// Peek returns the least element and its key; q must not be empty. The key
// is valid until q changes.
func (q *Queue[K, T, O]) Peek() (*K, T) {
	if q.ring.n > 0 {
		s := q.ring.first()
		if q.heap.Len() == 0 || !q.heap.ord().Less(*q.heap.TopKey(), s.k) {
			return &s.k, s.v
		}
	}
	return q.heap.TopKey(), q.heap.Top()
}

// Top returns the least element; q must not be empty.
func (q *Queue[K, T, O]) Top() T {
	_, x := q.Peek()
	return x
}

// TopKey returns the least element's key; q must not be empty. It is valid
// until q changes.
func (q *Queue[K, T, O]) TopKey() *K {
	k, _ := q.Peek()
	return k
}

// Push adds x, which is not in q.
func (q *Queue[K, T, O]) Push(x T) { q.place(entry[K, T]{q.heap.ord().Key(x), x}) }

// place adds e's element, whose key e holds.
func (q *Queue[K, T, O]) place(e entry[K, T]) {
	if q.ring.n > 0 && q.heap.ord().Less(e.k, q.ring.last().k) {
		q.heap.push(e)
		return
	}
	p := q.ring.push(e, q.moved)
	*q.heap.ord().Index(e.v) = ringIndex(p)
}

// moved records that e is now at ring position p.
func (q *Queue[K, T, O]) moved(e entry[K, T], p uint32) { *q.heap.ord().Index(e.v) = ringIndex(p) }

// Remove takes x, which is in q, out of it.
func (q *Queue[K, T, O]) Remove(x T) {
	i := *q.heap.ord().Index(x)
	if i >= 0 {
		q.heap.Remove(i)
		return
	}
	p := ringPos(i)
	q.ring.drop(p, entry[K, T]{k: q.ring.at(p).k}) // the hole keeps the key
	*q.heap.ord().Index(x) = -1
}

// Pop removes and returns the least element; q must not be empty.
func (q *Queue[K, T, O]) Pop() T {
	x := q.Top()
	q.Remove(x)
	return x
}

// Fix restores the order after x's key changed; x is in q. (An element of
// the heap whose key comes to sort after the ring's back stays in the heap:
// moving it to the ring costs a heap removal, and measured no better.)
func (q *Queue[K, T, O]) Fix(x T) {
	o := q.heap.ord()
	i := *o.Index(x)
	if i >= 0 {
		q.heap.Fix(i)
		return
	}
	p := ringPos(i)
	s := q.ring.at(p)
	k := o.Key(x)
	if k == s.k {
		return
	}
	if (p == q.ring.front || !o.Less(k, q.ring.at(p-1).k)) && (p+1 == q.ring.back || !o.Less(q.ring.at(p+1).k, k)) {
		s.k = k // still in order where it is
		return
	}
	q.Remove(x)
	q.place(entry[K, T]{k, x})
}

// All yields every element of q, in no particular order. q must not change
// during the iteration.
func (q *Queue[K, T, O]) All() iter.Seq[T] {
	return func(yield func(T) bool) {
		for p := q.ring.front; p != q.ring.back; p++ {
			if e := q.ring.at(p); !e.hole() && !yield(e.v) {
				return
			}
		}
		for x := range q.heap.All() {
			if !yield(x) {
				return
			}
		}
	}
}

// Reinit recomputes every key, after changes to many elements at once, and
// restores the order in O(n log n): all elements go into the ring, sorted.
func (q *Queue[K, T, O]) Reinit() {
	o := q.heap.ord()
	var slots []entry[K, T]
	for x := range q.All() {
		slots = append(slots, entry[K, T]{o.Key(x), x})
	}
	slices.SortStableFunc(slots, func(a, b entry[K, T]) int {
		switch {
		case o.Less(a.k, b.k):
			return -1
		case o.Less(b.k, a.k):
			return 1
		}
		return 0
	})
	q.Reset()
	for _, e := range slots {
		q.place(e)
	}
}

// Reset empties q for reuse, keeping a ring of moderate length. The
// elements it held are not told: their positions are stale.
func (q *Queue[K, T, O]) Reset() {
	q.ring.reset(maxKeptRing)
	q.heap.reset()
}

// Verify reports the first broken invariant of q, or nil.
func (q *Queue[K, T, O]) Verify() error {
	if err := q.ring.verify(); err != nil {
		return fmt.Errorf("ring heap: %v", err)
	}
	o := q.heap.ord()
	for p := q.ring.front; p != q.ring.back; p++ {
		s := q.ring.at(p)
		if p != q.ring.front && o.Less(s.k, q.ring.at(p-1).k) {
			return fmt.Errorf("ring heap: ring position %d sorts before the one ahead of it", p)
		}
		if s.hole() {
			continue
		}
		if i := *o.Index(s.v); i != ringIndex(p) || s.k != o.Key(s.v) {
			return fmt.Errorf("ring heap: element at ring position %d has index %d (want %d), key %+v (slot %+v)",
				p, i, ringIndex(p), o.Key(s.v), s.k)
		}
	}
	if err := q.heap.Verify(); err != nil {
		return fmt.Errorf("ring heap: %v", err)
	}
	return nil
}
