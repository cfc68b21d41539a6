package admission

// sortKey is a flow's place in the dispatch order at its last sync (see
// lessKey): the head's rank, its key's MinSeats status and virtual time, and
// the head's age and sequence.
type sortKey struct {
	v        float64 // key.v
	headAt   int64   // head's aging start, Unix nanoseconds
	headSeq  uint64  // head's seq
	eff      Priority
	urgent   bool
	belowMin bool
}

// lessKey is the dispatch order of two flows' heads: urgent first (oldest
// first), then effective priority, then keys below MinSeats, then virtual
// time, then age.
func lessKey(a, b *sortKey) bool {
	if a.urgent != b.urgent {
		return a.urgent
	}
	if !a.urgent {
		if a.eff != b.eff {
			return a.eff > b.eff
		}
		if a.belowMin != b.belowMin {
			return a.belowMin
		}
		if a.v != b.v {
			return a.v < b.v
		}
	}
	if a.headAt != b.headAt {
		return a.headAt < b.headAt
	}
	return a.headSeq < b.headSeq
}

// flowSlot is one entry of a type's flow heap. The sort key lives in the
// heap array itself, so a sift compares contiguous memory and touches a
// flow only to update the index of one it moves: at 10,000 flows the cache
// misses of chasing every compared flow, not the comparisons, set the cost.
type flowSlot struct {
	k sortKey
	f *flow
}

// flowHeapArity is 4: half the depth of a binary heap, so half the moves (and
// their cache misses), for comparisons that stay within one or two lines.
const flowHeapArity = 4

// flowHeap is a 4-ary min-heap of flows by sort key whose flows know their
// position (flow.typIdx). It takes no locks.
//
// Invariant: for every i, s[i].f.typIdx == i, and no slot's key is less than
// its parent's.
type flowHeap struct{ s []flowSlot }

func (h *flowHeap) Len() int { return len(h.s) }

// Top returns the least slot; the heap must not be empty. The pointer is
// valid until the heap changes.
func (h *flowHeap) Top() *flowSlot { return &h.s[0] }

// Push adds f with key k.
func (h *flowHeap) Push(f *flow, k sortKey) {
	h.s = append(h.s, flowSlot{k, f})
	f.typIdx = len(h.s) - 1
	h.up(f.typIdx)
}

// Fix gives the flow at position i the key k and restores the order.
func (h *flowHeap) Fix(i int, k sortKey) {
	h.s[i].k = k
	if !h.down(i) {
		h.up(i)
	}
}

// Remove takes the flow at position i out of the heap.
func (h *flowHeap) Remove(i int) {
	n := len(h.s) - 1
	if i != n {
		h.swap(i, n)
	}
	f := h.s[n].f
	h.s[n] = flowSlot{}
	h.s = h.s[:n]
	if i != n && !h.down(i) {
		h.up(i)
	}
	f.typIdx = -1
}

func (h *flowHeap) swap(i, j int) {
	h.s[i], h.s[j] = h.s[j], h.s[i]
	h.s[i].f.typIdx = i
	h.s[j].f.typIdx = j
}

func (h *flowHeap) up(j int) {
	for j > 0 {
		i := (j - 1) / flowHeapArity
		if !lessKey(&h.s[j].k, &h.s[i].k) {
			break
		}
		h.swap(i, j)
		j = i
	}
}

func (h *flowHeap) down(i0 int) bool {
	i, n := i0, len(h.s)
	for {
		c := flowHeapArity*i + 1
		if c >= n || c < 0 {
			break
		}
		best := c
		for d := c + 1; d < c+flowHeapArity && d < n; d++ {
			if lessKey(&h.s[d].k, &h.s[best].k) {
				best = d
			}
		}
		if !lessKey(&h.s[best].k, &h.s[i].k) {
			break
		}
		h.swap(i, best)
		i = best
	}
	return i > i0
}

// verify reports the first position that breaks the heap invariants, or -1.
func (h *flowHeap) verify() int {
	for i := range h.s {
		if h.s[i].f.typIdx != i {
			return i
		}
		if i > 0 && lessKey(&h.s[i].k, &h.s[(i-1)/flowHeapArity].k) {
			return i
		}
	}
	return -1
}
