package ringheap

import (
	"fmt"
	"iter"
)

// Heap is a 4-ary min-heap whose slots hold each element's sort key next to
// the element, and whose elements know their position (see the package
// doc), so that an element whose key changed can be fixed and one anywhere
// in the heap removed in O(log n).
//
// The zero value is not usable: build one with [NewHeap]. A Heap is not
// safe for concurrent use.
//
// Invariant: for every i, *index(s[i].v) == i, s[i].k == key(s[i].v), and
// no slot's key is less than its parent's.
type Heap[K comparable, T comparable] struct {
	s     []entry[K, T]
	key   func(T) K
	less  func(a, b *K) bool
	index func(T) *int // where the element stores its position; -1 when absent
}

// entry is an element and its key, as kept in a Heap or a Queue's ring.
type entry[K comparable, T comparable] struct {
	k K
	v T
}

// hole reports whether e is a hole of a Queue's ring: its element left
// (the zero T is never an element).
func (e entry[K, T]) hole() bool {
	var zero T
	return e.v == zero
}

const arity = 4

// NewHeap returns an empty heap ordered by less over the keys that key
// computes; index gives the int in which each element stores its position.
func NewHeap[K comparable, T comparable](key func(T) K, less func(a, b *K) bool, index func(T) *int) Heap[K, T] {
	return Heap[K, T]{key: key, less: less, index: index}
}

// Len is the number of elements in h.
func (h *Heap[K, T]) Len() int { return len(h.s) }

// Top returns the least element; h must not be empty.
func (h *Heap[K, T]) Top() T { return h.s[0].v }

// TopKey returns the least element's key; h must not be empty. It is valid
// until h changes.
func (h *Heap[K, T]) TopKey() *K { return &h.s[0].k }

// Push adds x, which is not in h.
func (h *Heap[K, T]) Push(x T) {
	h.s = append(h.s, entry[K, T]{h.key(x), x})
	h.up(len(h.s) - 1)
}

// Remove removes the element at position i and returns it.
//
// The hole it leaves goes down to a leaf, each level taking the least
// child up (arity-1 comparisons and one move), and the heap's last
// element fills it from there, sifted up. The last element is usually
// among the greatest, so it rarely climbs: this compares less than moving
// it to i and sifting it down, which would compare it at every level too.
func (h *Heap[K, T]) Remove(i int) T {
	n := len(h.s) - 1
	x, last := h.s[i].v, h.s[n]
	h.s[n] = entry[K, T]{}
	h.s = h.s[:n]
	if i != n {
		leaf := h.hole(i)
		h.s[leaf] = last
		h.up(leaf)
	}
	*h.index(x) = -1
	return x
}

// Pop removes and returns the least element; h must not be empty.
func (h *Heap[K, T]) Pop() T { return h.Remove(0) }

// Fix recomputes the key of the element at position i, which changed, and
// restores the order.
func (h *Heap[K, T]) Fix(i int) {
	h.s[i].k = h.key(h.s[i].v)
	if !h.down(i) {
		h.up(i)
	}
}

// Reinit recomputes every key, after changes to many elements at once, and
// restores the order in O(n).
func (h *Heap[K, T]) Reinit() {
	for i := range h.s {
		h.s[i].k = h.key(h.s[i].v)
	}
	for i := len(h.s)/arity + 1; i >= 0; i-- {
		if i < len(h.s) {
			h.down(i)
		}
	}
}

// All yields every element of h, in no particular order. h must not change
// during the iteration.
func (h *Heap[K, T]) All() iter.Seq[T] {
	return func(yield func(T) bool) {
		for _, s := range h.s {
			if !yield(s.v) {
				return
			}
		}
	}
}

// reset empties h for reuse, keeping its array. The elements it held are
// not told.
func (h *Heap[K, T]) reset() {
	clear(h.s)
	h.s = h.s[:0]
}

// The sifts below first find where the element goes, comparing its key
// where it is, then move the elements on the way into the hole it leaves
// and put it there: each element that moves is written once, and so is
// its position, which lives in the element's record (with 10,000 flows,
// one cache miss each). (Swapping pairs wrote the sifted element at every
// level; holding it aside while comparing would take the address of a
// local through the less function value, which moves the local to the
// heap.)

// maxDepth bounds the levels of a heap: 4^32 elements would not fit.
const maxDepth = 32

// set puts e at position i and tells its element.
func (h *Heap[K, T]) set(i int, e entry[K, T]) {
	h.s[i] = e
	*h.index(e.v) = i
}

// up moves the element at j above every ancestor it sorts before, and
// stores its position (also when it stays).
func (h *Heap[K, T]) up(j int) {
	i := j
	for i > 0 {
		p := (i - 1) / arity
		if !h.less(&h.s[j].k, &h.s[p].k) {
			break
		}
		i = p
	}
	if i == j {
		*h.index(h.s[j].v) = j
		return
	}
	e := h.s[j]
	for k := j; k != i; {
		p := (k - 1) / arity
		h.set(k, h.s[p])
		k = p
	}
	h.set(i, e)
}

// leastChild returns the position of i's least child, or -1 if i is a leaf.
func (h *Heap[K, T]) leastChild(i int) int {
	c, n := arity*i+1, len(h.s)
	if c >= n || c < 0 {
		return -1
	}
	best := c
	for d := c + 1; d < c+arity && d < n; d++ {
		if h.less(&h.s[d].k, &h.s[best].k) {
			best = d
		}
	}
	return best
}

// down moves the element at i0 below its children while one sorts before
// it, and reports whether it moved.
func (h *Heap[K, T]) down(i0 int) bool {
	var path [maxDepth]int
	n := 0
	for i := i0; ; n++ {
		c := h.leastChild(i)
		if c < 0 || !h.less(&h.s[c].k, &h.s[i0].k) {
			break
		}
		path[n], i = c, c
	}
	if n == 0 {
		return false
	}
	e, i := h.s[i0], i0
	for _, c := range path[:n] {
		h.set(i, h.s[c])
		i = c
	}
	h.set(i, e)
	return true
}

// hole takes the hole at i down to a leaf, moving the least child up at
// each level, and returns the leaf's position.
func (h *Heap[K, T]) hole(i int) int {
	for {
		c := h.leastChild(i)
		if c < 0 {
			return i
		}
		h.set(i, h.s[c])
		i = c
	}
}

// Verify reports the first position that breaks h's invariants (a wrong
// index, a stale key, or a key less than its parent's), or nil.
func (h *Heap[K, T]) Verify() error {
	for i := range h.s {
		if at := *h.index(h.s[i].v); at != i {
			return fmt.Errorf("heap: element at %d has index %d", i, at)
		}
		if h.s[i].k != h.key(h.s[i].v) {
			return fmt.Errorf("heap: element at %d has a stale key %+v (now %+v)", i, h.s[i].k, h.key(h.s[i].v))
		}
		if i > 0 && h.less(&h.s[i].k, &h.s[(i-1)/arity].k) {
			return fmt.Errorf("heap: position %d sorts before its parent %d", i, (i-1)/arity)
		}
	}
	return nil
}
