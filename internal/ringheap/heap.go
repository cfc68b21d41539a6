package ringheap

import (
	"fmt"
	"iter"
)

// An Order is how a [Heap], a [Queue] or a [Dense] orders its elements:
// a type of no size (struct{}) whose methods are the ordering, given as a
// type argument, so that no queue carries functions of its own (the
// scheduler keeps a queue in every flow).
type Order[K comparable, T comparable] interface {
	// Key computes x's sort key. It is called when x is pushed or fixed,
	// and the result is kept in x's slot.
	Key(x T) K
	// Less orders two keys; ties must be broken by the key itself (a
	// sequence number), so that the order is total.
	Less(a, b K) bool
	// Index returns where x stores its position. The structure owns that
	// int while x is in it and sets it to -1 when x leaves; the caller
	// initialises it to -1.
	Index(x T) *int
}

// Heap is a 4-ary min-heap whose slots hold each element's sort key next to
// the element, and whose elements know their position (see the package
// doc), so that an element whose key changed can be fixed and one anywhere
// in the heap removed in O(log n).
//
// The zero value is an empty heap, ready to use. A Heap is not safe for
// concurrent use.
//
// Invariant: for every i, *o.Index(s[i].v) == i, s[i].k == o.Key(s[i].v),
// and no slot's key is less than its parent's (o the zero O).
type Heap[K comparable, T comparable, O Order[K, T]] struct {
	s []entry[K, T]
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

// ord is the ordering: O has no size, so this costs nothing.
func (h *Heap[K, T, O]) ord() O {
	var o O
	return o
}

// Len is the number of elements in h.
func (h *Heap[K, T, O]) Len() int { return len(h.s) }

// Top returns the least element; h must not be empty.
func (h *Heap[K, T, O]) Top() T { return h.s[0].v }

// TopKey returns the least element's key; h must not be empty. It is valid
// until h changes.
func (h *Heap[K, T, O]) TopKey() *K { return &h.s[0].k }

// Push adds x, which is not in h.
func (h *Heap[K, T, O]) Push(x T) {
	h.push(entry[K, T]{h.ord().Key(x), x})
}

// push adds e's element, whose key e holds.
func (h *Heap[K, T, O]) push(e entry[K, T]) {
	h.s = append(h.s, e)
	h.up(len(h.s)-1, e)
}

// Remove removes the element at position i and returns it.
//
// The hole it leaves goes down to a leaf, each level taking the least
// child up (arity-1 comparisons and one move), and the heap's last
// element fills it from there, sifted up. The last element is usually
// among the greatest, so it rarely climbs: this compares less than moving
// it to i and sifting it down, which would compare it at every level too.
func (h *Heap[K, T, O]) Remove(i int) T {
	n := len(h.s) - 1
	x, last := h.s[i].v, h.s[n]
	h.s[n] = entry[K, T]{}
	h.s = h.s[:n]
	if i != n {
		h.up(h.hole(i), last)
	}
	*h.ord().Index(x) = -1
	return x
}

// Pop removes and returns the least element; h must not be empty.
func (h *Heap[K, T, O]) Pop() T { return h.Remove(0) }

// Fix recomputes the key of the element at position i, which changed, and
// restores the order.
func (h *Heap[K, T, O]) Fix(i int) {
	h.s[i].k = h.ord().Key(h.s[i].v)
	if !h.down(i) {
		h.up(i, h.s[i])
	}
}

// Reinit recomputes every key, after changes to many elements at once, and
// restores the order in O(n).
func (h *Heap[K, T, O]) Reinit() {
	for i := range h.s {
		h.s[i].k = h.ord().Key(h.s[i].v)
	}
	for i := len(h.s)/arity + 1; i >= 0; i-- {
		if i < len(h.s) {
			h.down(i)
		}
	}
}

// All yields every element of h, in no particular order. h must not change
// during the iteration.
func (h *Heap[K, T, O]) All() iter.Seq[T] {
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
func (h *Heap[K, T, O]) reset() {
	clear(h.s)
	h.s = h.s[:0]
}

// The sifts below move elements into a hole instead of swapping pairs:
// each element that moves is written once, and so is its position, which
// lives in the element's record (with thousands of elements, a cache miss
// each).

// set puts e at position i and tells its element.
func (h *Heap[K, T, O]) set(i int, e entry[K, T]) {
	h.s[i] = e
	*h.ord().Index(e.v) = i
}

// up places e at j, whose slot is a hole, or above it: each parent that e
// sorts before moves down into the hole.
func (h *Heap[K, T, O]) up(j int, e entry[K, T]) {
	for j > 0 {
		p := (j - 1) / arity
		if !h.ord().Less(e.k, h.s[p].k) {
			break
		}
		h.set(j, h.s[p])
		j = p
	}
	h.set(j, e)
}

// leastChild returns the position of i's least child, or -1 if i is a leaf.
func (h *Heap[K, T, O]) leastChild(i int) int {
	c, n := arity*i+1, len(h.s)
	if c >= n || c < 0 {
		return -1
	}
	best := c
	for d := c + 1; d < c+arity && d < n; d++ {
		if h.ord().Less(h.s[d].k, h.s[best].k) {
			best = d
		}
	}
	return best
}

// down moves the element at i0 below its children while one sorts before
// it, and reports whether it moved.
func (h *Heap[K, T, O]) down(i0 int) bool {
	c := h.leastChild(i0)
	if c < 0 || !h.ord().Less(h.s[c].k, h.s[i0].k) {
		return false
	}
	e, i := h.s[i0], i0
	for c >= 0 && h.ord().Less(h.s[c].k, e.k) {
		h.set(i, h.s[c])
		i = c
		c = h.leastChild(i)
	}
	h.set(i, e)
	return true
}

// hole takes the hole at i down to a leaf, moving the least child up at
// each level, and returns the leaf's position.
func (h *Heap[K, T, O]) hole(i int) int {
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
func (h *Heap[K, T, O]) Verify() error {
	for i := range h.s {
		if at := *h.ord().Index(h.s[i].v); at != i {
			return fmt.Errorf("heap: element at %d has index %d", i, at)
		}
		if h.s[i].k != h.ord().Key(h.s[i].v) {
			return fmt.Errorf("heap: element at %d has a stale key %+v (now %+v)", i, h.s[i].k, h.ord().Key(h.s[i].v))
		}
		if i > 0 && h.ord().Less(h.s[i].k, h.s[(i-1)/arity].k) {
			return fmt.Errorf("heap: position %d sorts before its parent %d", i, (i-1)/arity)
		}
	}
	return nil
}
