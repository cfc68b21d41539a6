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
// Where an element is, is stored in it, at index(x): a heap position
// (>= 0), ringIndex(p) for ring position p (<= -2), or -1 when it is in
// neither.
//
// The zero value is not usable: build one with [NewQueue]. A Queue is not
// safe for concurrent use.
//
// Invariants: the ring's (see ring); the keys of the slots in use (holes
// included: a hole keeps its key) never decrease. An element in the ring
// has index ringIndex(p) and the slot's key equals key(element); the
// heap's own invariants hold.
type Queue[K comparable, T comparable] struct {
	ring ring[entry[K, T]]
	heap Heap[K, T] // also holds key, less and index

	// k holds the key being placed. It is a field, not a local, because the
	// comparisons take its address through a function value, which would
	// move a local to the heap on every push.
	k K
}

// maxKeptRing is the longest ring kept when a queue is reset for reuse.
const maxKeptRing = 64

// NewQueue returns an empty queue ordered by less over the keys that key
// computes; index gives the int in which each element stores its position.
func NewQueue[K comparable, T comparable](key func(T) K, less func(a, b *K) bool, index func(T) *int) Queue[K, T] {
	return Queue[K, T]{heap: NewHeap(key, less, index)}
}

// Len is the number of elements in q.
func (q *Queue[K, T]) Len() int { return q.ring.n + q.heap.Len() }

// Peek returns the least element and its key; q must not be empty. The key
// is valid until q changes.
func (q *Queue[K, T]) Peek() (*K, T) {
	if q.ring.n > 0 {
		s := q.ring.first()
		if q.heap.Len() == 0 || !q.heap.less(q.heap.TopKey(), &s.k) {
			return &s.k, s.v
		}
	}
	return q.heap.TopKey(), q.heap.Top()
}

// Top returns the least element; q must not be empty.
func (q *Queue[K, T]) Top() T {
	_, x := q.Peek()
	return x
}

// TopKey returns the least element's key; q must not be empty. It is valid
// until q changes.
func (q *Queue[K, T]) TopKey() *K {
	k, _ := q.Peek()
	return k
}

// Push adds x, which is not in q.
func (q *Queue[K, T]) Push(x T) {
	q.k = q.heap.key(x)
	q.pushKey(x)
}

// pushKey adds x, whose key is in q.k.
func (q *Queue[K, T]) pushKey(x T) {
	if q.ring.n > 0 && q.heap.less(&q.k, &q.ring.last().k) {
		q.heap.Push(x)
		return
	}
	p := q.ring.push(entry[K, T]{q.k, x}, q.moved)
	*q.heap.index(x) = ringIndex(p)
}

// moved records that e is now at ring position p.
func (q *Queue[K, T]) moved(e entry[K, T], p uint64) { *q.heap.index(e.v) = ringIndex(p) }

// Remove takes x, which is in q, out of it.
func (q *Queue[K, T]) Remove(x T) {
	i := *q.heap.index(x)
	if i >= 0 {
		q.heap.Remove(i)
		return
	}
	p := ringPos(i)
	q.ring.drop(p, entry[K, T]{k: q.ring.at(p).k}) // the hole keeps the key
	*q.heap.index(x) = -1
}

// Pop removes and returns the least element; q must not be empty.
func (q *Queue[K, T]) Pop() T {
	x := q.Top()
	q.Remove(x)
	return x
}

// Fix restores the order after x's key changed; x is in q. (An element of
// the heap whose key comes to sort after the ring's back stays in the heap:
// moving it to the ring costs a heap removal, and measured no better.)
func (q *Queue[K, T]) Fix(x T) {
	i := *q.heap.index(x)
	if i >= 0 {
		q.heap.Fix(i)
		return
	}
	p := ringPos(i)
	s := q.ring.at(p)
	q.k = q.heap.key(x)
	if q.k == s.k {
		return
	}
	if (p == q.ring.front || !q.heap.less(&q.k, &q.ring.at(p-1).k)) && (p+1 == q.ring.back || !q.heap.less(&q.ring.at(p+1).k, &q.k)) {
		s.k = q.k // still in order where it is
		return
	}
	q.Remove(x)
	q.pushKey(x)
}

// All yields every element of q, in no particular order. q must not change
// during the iteration.
func (q *Queue[K, T]) All() iter.Seq[T] {
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
func (q *Queue[K, T]) Reinit() {
	var slots []entry[K, T]
	for x := range q.All() {
		slots = append(slots, entry[K, T]{q.heap.key(x), x})
	}
	slices.SortStableFunc(slots, func(a, b entry[K, T]) int {
		switch {
		case q.heap.less(&a.k, &b.k):
			return -1
		case q.heap.less(&b.k, &a.k):
			return 1
		}
		return 0
	})
	q.Reset()
	for _, s := range slots {
		q.k = s.k
		q.pushKey(s.v)
	}
}

// Reset empties q for reuse, keeping a ring of moderate length and its
// functions. The elements it held are not told: their positions are stale.
func (q *Queue[K, T]) Reset() {
	q.ring.reset(maxKeptRing)
	q.heap.reset()
}

// Verify reports the first broken invariant of q, or nil.
func (q *Queue[K, T]) Verify() error {
	if err := q.ring.verify(); err != nil {
		return fmt.Errorf("ring heap: %v", err)
	}
	for p := q.ring.front; p != q.ring.back; p++ {
		s := q.ring.at(p)
		if p != q.ring.front && q.heap.less(&s.k, &q.ring.at(p-1).k) {
			return fmt.Errorf("ring heap: ring position %d sorts before the one ahead of it", p)
		}
		if s.hole() {
			continue
		}
		if i := *q.heap.index(s.v); i != ringIndex(p) || s.k != q.heap.key(s.v) {
			return fmt.Errorf("ring heap: element at ring position %d has index %d (want %d), key %+v (slot %+v)",
				p, i, ringIndex(p), q.heap.key(s.v), s.k)
		}
	}
	if err := q.heap.Verify(); err != nil {
		return fmt.Errorf("ring heap: %v", err)
	}
	return nil
}
