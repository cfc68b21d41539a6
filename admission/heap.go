package admission

// keyedHeap is a 4-ary min-heap whose slots hold each element's sort key
// next to the element, and whose elements know their position, so that an
// element whose key changed can be fixed and one anywhere in the heap
// removed in O(log n). It takes no locks.
//
// The key is computed by key when the element is pushed or fixed — callers
// change an element, then call Fix, as with container/heap — and kept in
// the slot, so a sift compares contiguous memory and dereferences only the
// elements it moves. With tens of thousands of queued jobs the cache misses
// of chasing every compared element, not the comparisons, set the cost; four
// children per node halve the depth, and so the moves.
//
// Invariant: for every i, *index(s[i].v) == i, s[i].k == key(s[i].v), and
// no slot's key is less than its parent's.
type keyedHeap[K comparable, T any] struct {
	s     []keyedSlot[K, T]
	key   func(T) K
	less  func(a, b *K) bool
	index func(T) *int // where the element stores its position; -1 when absent
}

type keyedSlot[K comparable, T any] struct {
	k K
	v T
}

const heapArity = 4

func (h *keyedHeap[K, T]) Len() int { return len(h.s) }

// Top returns the least element; the heap must not be empty.
func (h *keyedHeap[K, T]) Top() T { return h.s[0].v }

// topKey returns the least element's key; valid until the heap changes.
func (h *keyedHeap[K, T]) topKey() *K { return &h.s[0].k }

func (h *keyedHeap[K, T]) Push(x T) {
	h.s = append(h.s, keyedSlot[K, T]{h.key(x), x})
	*h.index(x) = len(h.s) - 1
	h.up(len(h.s) - 1)
}

// Remove removes the element at position i and returns it.
func (h *keyedHeap[K, T]) Remove(i int) T {
	n := len(h.s) - 1
	if i != n {
		h.swap(i, n)
	}
	x := h.s[n].v
	h.s[n] = keyedSlot[K, T]{}
	h.s = h.s[:n]
	if i != n && !h.down(i) {
		h.up(i)
	}
	*h.index(x) = -1
	return x
}

// Pop removes and returns the least element.
func (h *keyedHeap[K, T]) Pop() T { return h.Remove(0) }

// Fix recomputes the key of the element at position i, which changed, and
// restores the order.
func (h *keyedHeap[K, T]) Fix(i int) {
	h.s[i].k = h.key(h.s[i].v)
	if !h.down(i) {
		h.up(i)
	}
}

// Reinit recomputes every key, after changes to many elements at once, and
// restores the order in O(n).
func (h *keyedHeap[K, T]) Reinit() {
	for i := range h.s {
		h.s[i].k = h.key(h.s[i].v)
	}
	for i := len(h.s)/heapArity + 1; i >= 0; i-- {
		if i < len(h.s) {
			h.down(i)
		}
	}
}

func (h *keyedHeap[K, T]) swap(i, j int) {
	h.s[i], h.s[j] = h.s[j], h.s[i]
	*h.index(h.s[i].v) = i
	*h.index(h.s[j].v) = j
}

func (h *keyedHeap[K, T]) up(j int) {
	for j > 0 {
		i := (j - 1) / heapArity
		if !h.less(&h.s[j].k, &h.s[i].k) {
			break
		}
		h.swap(i, j)
		j = i
	}
}

func (h *keyedHeap[K, T]) down(i0 int) bool {
	i, n := i0, len(h.s)
	for {
		c := heapArity*i + 1
		if c >= n || c < 0 {
			break
		}
		best := c
		for d := c + 1; d < c+heapArity && d < n; d++ {
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

// verify reports the first position that breaks the heap invariants (a
// wrong index, a stale key, or a key less than its parent's), or -1.
func (h *keyedHeap[K, T]) verify() int {
	for i := range h.s {
		if *h.index(h.s[i].v) != i || h.s[i].k != h.key(h.s[i].v) {
			return i
		}
		if i > 0 && h.less(&h.s[i].k, &h.s[(i-1)/heapArity].k) {
			return i
		}
	}
	return -1
}
