package admission

// indexedHeap is a binary min-heap whose elements know their position, so
// that an element whose key changed can be fixed and an element anywhere in
// the heap removed in O(log n). It takes no locks.
//
// Invariant: for every i, *index(s[i]) == i, and no element is less than its
// parent.
type indexedHeap[T any] struct {
	s     []T
	less  func(a, b T) bool
	index func(T) *int // where the element stores its position; -1 when absent
}

func (h *indexedHeap[T]) Len() int { return len(h.s) }

// Top returns the least element; the heap must not be empty.
func (h *indexedHeap[T]) Top() T { return h.s[0] }

func (h *indexedHeap[T]) Push(x T) {
	h.s = append(h.s, x)
	*h.index(x) = len(h.s) - 1
	h.up(len(h.s) - 1)
}

// Remove removes the element at position i and returns it.
func (h *indexedHeap[T]) Remove(i int) T {
	n := len(h.s) - 1
	x := h.s[i]
	if i != n {
		h.swap(i, n)
	}
	var zero T
	h.s[n] = zero
	h.s = h.s[:n]
	if i != n {
		if !h.down(i) {
			h.up(i)
		}
	}
	*h.index(x) = -1
	return x
}

// Pop removes and returns the least element.
func (h *indexedHeap[T]) Pop() T { return h.Remove(0) }

// Fix restores the order after the key of the element at position i changed.
func (h *indexedHeap[T]) Fix(i int) {
	if !h.down(i) {
		h.up(i)
	}
}

func (h *indexedHeap[T]) swap(i, j int) {
	h.s[i], h.s[j] = h.s[j], h.s[i]
	*h.index(h.s[i]) = i
	*h.index(h.s[j]) = j
}

func (h *indexedHeap[T]) up(j int) {
	for j > 0 {
		i := (j - 1) / 2
		if !h.less(h.s[j], h.s[i]) {
			break
		}
		h.swap(i, j)
		j = i
	}
}

func (h *indexedHeap[T]) down(i0 int) bool {
	i, n := i0, len(h.s)
	for {
		j := 2*i + 1
		if j >= n || j < 0 {
			break
		}
		if r := j + 1; r < n && h.less(h.s[r], h.s[j]) {
			j = r
		}
		if !h.less(h.s[j], h.s[i]) {
			break
		}
		h.swap(i, j)
		i = j
	}
	return i > i0
}

// verify reports the first position that breaks the heap invariants, or -1.
func (h *indexedHeap[T]) verify() int {
	for i, x := range h.s {
		if *h.index(x) != i {
			return i
		}
		if i > 0 && h.less(x, h.s[(i-1)/2]) {
			return i
		}
	}
	return -1
}
