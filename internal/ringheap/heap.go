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
type Heap[K comparable, T any] struct {
	s     []entry[K, T]
	key   func(T) K
	less  func(a, b *K) bool
	index func(T) *int // where the element stores its position; -1 when absent
}

// entry is an element and its key, as kept in a Heap or a Queue's ring.
type entry[K comparable, T any] struct {
	k K
	v T
}

const arity = 4

// NewHeap returns an empty heap ordered by less over the keys that key
// computes; index gives the int in which each element stores its position.
func NewHeap[K comparable, T any](key func(T) K, less func(a, b *K) bool, index func(T) *int) Heap[K, T] {
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
	*h.index(x) = len(h.s) - 1
	h.up(len(h.s) - 1)
}

// Remove removes the element at position i and returns it.
func (h *Heap[K, T]) Remove(i int) T {
	n := len(h.s) - 1
	if i != n {
		h.swap(i, n)
	}
	x := h.s[n].v
	h.s[n] = entry[K, T]{}
	h.s = h.s[:n]
	if i != n && !h.down(i) {
		h.up(i)
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

func (h *Heap[K, T]) swap(i, j int) {
	h.s[i], h.s[j] = h.s[j], h.s[i]
	*h.index(h.s[i].v) = i
	*h.index(h.s[j].v) = j
}

func (h *Heap[K, T]) up(j int) {
	for j > 0 {
		i := (j - 1) / arity
		if !h.less(&h.s[j].k, &h.s[i].k) {
			break
		}
		h.swap(i, j)
		j = i
	}
}

func (h *Heap[K, T]) down(i0 int) bool {
	i, n := i0, len(h.s)
	for {
		c := arity*i + 1
		if c >= n || c < 0 {
			break
		}
		best := c
		for d := c + 1; d < c+arity && d < n; d++ {
			if h.less(&h.s[d].k, &h.s[best].k) {
				best = d
			}
		}
		if !h.less(&h.s[best].k, &h.s[i].k) {
			break
		}
		h.swap(i, best)
		i = best
	}
	return i > i0
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
